// Package flaky names the flaky cells of a suite from their history, with the evidence, and
// decides which failures are quarantined. It is pure: no I/O, no clock (times are passed in),
// no state between calls other than the previous label the caller stores and passes back.
//
// A cell is a case × agent × model of a suite (Cell). Its history is a window of runs, oldest
// first, each with the verdicts of the case's epochs in that run.
//
// The rules, in the order they are applied (Assess):
//
//   - An epoch that errored or timed out for a reason of the infrastructure (its class is in
//     Config.Infra: by default sandbox, model_endpoint and rate_limited) is left out of every
//     statistic and counted. A timed_out epoch without such a class is a failure: the case's own
//     wall clock killed it, which a looping agent or a slow script causes as easily as a slow
//     node. An errored epoch of any other class (assertion, timeout, other, or a class this
//     package does not know) is a failure too: it is not a pass, and nothing says the
//     infrastructure caused it. Skipped and reused epochs are not observations and are left out.
//   - A run is decided when at least one of its epochs is a pass or a failure. Its outcome is
//     pass when the share of its decided epochs that passed is at least the cell's confidence
//     (History.Confidence, default 1: every decided epoch passed), the report's case rule over
//     the epochs that were decided. Runs with no decided epoch are left out and counted.
//   - The flip rate is the share of consecutive decided runs whose outcomes differ; the pass
//     rate is the share of decided runs that passed, with its 95% Wilson interval. Runs, not
//     epochs, are the trials: the epochs of one run share a day, a model version and a node, so
//     they are not independent draws.
//   - Fewer than Config.MinRuns decided runs: "insufficient", unless the cell was flaky (see
//     below).
//   - A cell BECOMES flaky when its flip rate over the window is at least Config.EnterFlipRate,
//     its pass-rate interval lies inside [Config.Band, 1−Band] (it passes and fails, each at a
//     rate the evidence bounds away from zero), and its last Config.ExitRuns decided runs are
//     not calm (they changed more than Config.ExitFlips times). The last condition is what
//     makes leaving final: a cell that just left cannot re-enter until it flips again.
//   - A flaky cell STAYS flaky until its last ExitRuns decided runs changed at most ExitFlips
//     times; then it is stable again. Too few decided runs keep it flaky: leaving needs
//     evidence as much as entering does. A cell that left re-enters at its next change while
//     the window still holds its old flips: six lucky runs in a row were not a fix.
//   - A cell that is not flaky is "stable-pass" or "stable-fail" by the outcome of its latest
//     decided run: a case that broke and stayed broken is stable-fail, not flaky.
//
// The defaults (DefaultConfig) and why:
//
//   - MinRuns 5: with fewer runs a Wilson interval of any mixed record reaches past 0.05 or
//     0.95, so nothing could be named flaky anyway; five nightly runs is under a week.
//   - Window 20 runs: long enough to see a 20% failure rate several times, short enough that a
//     fix shows within days.
//   - EnterFlipRate 0.3: in ten runs, at least three changes. Broke then fixed is two changes
//     and is not flakiness. An independent coin with pass probability p flips at rate 2p(1−p),
//     so 0.3 catches cells passing between about 20% and 80% of the time once the window holds
//     enough runs.
//   - Band 0.05: the interval must exclude 0–5% and 95–100%. Wilson's interval excludes 0 and 1
//     for any record with one pass and one failure, so "excludes 0 and 1" alone says nothing;
//     the band makes one failure in five runs (interval [0.38, 0.96]) not enough.
//   - ExitRuns 6, ExitFlips 0: six decided runs in a row with the same outcome. A flaky cell
//     passing 70% of the time shows six equal outcomes in a row with probability 0.7^6 ≈ 0.12,
//     so a truly flaky cell rarely leaves, and a fixed one leaves within a week of nightly runs.
//
// Quarantine (Quarantine) is separate from labelling: a quarantined cell still runs and is
// reported, marked, but its failure does not set the exit code.
package flaky
