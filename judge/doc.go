// Package judge evaluates semantic_match assertions: the standard, versioned judge prompt
// (published in docs/judge-prompt.md), structured verdicts validated locally, a verdict cache,
// optional votes. A judge that fails or answers outside the schema gives an errored result,
// never a pass or a fail.
package judge
