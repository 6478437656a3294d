package judge

// maxExcerpt bounds Result.Expected and Result.Actual, like the assert package's excerpts.
const maxExcerpt = 240
