// Package report turns a run's job results into case verdicts and renders them: the JSON
// report, JUnit XML for CI systems and the terminal summary.
//
// A Builder aggregates results as they stream in and keeps, per case, counters and a small,
// capped amount of evidence, never every result. The case verdict rules (see Decide) follow
// DESIGN.md: a case with `runs: N` and `confidence: c` passes when passed/N ≥ c, and
// infrastructure uncertainty that could have changed the outcome is reported as errored,
// timed_out or skipped, never as a plain fail and never as a pass.
package report
