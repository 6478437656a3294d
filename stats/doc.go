// Package stats compares two arms of skill runs (with the skill and without it, a new version
// and an old one, last night and tonight) paired on case identity, and says whether the
// difference in pass rate is more than chance.
//
// It is pure: no I/O and no package state. Every resampling method takes its seed from
// Options, so the same input and seed always give the same Comparison.
//
// The methods, chosen so that the few cases a skill usually has are handled exactly:
//
//   - Only decided epochs (passed, failed) count towards a pass rate. Errored and timed-out
//     epochs are left out and counted, per arm; skipped epochs likewise. They never become a
//     pass or a fail.
//   - A case's difference is its pass rate in arm B minus its pass rate in arm A; a group's
//     difference is the mean over its paired cases, each case weighing the same.
//   - When every paired case has exactly one decided epoch in each arm, the p-value is
//     McNemar's exact test (two-sided exact binomial on the discordant pairs) and the interval is
//     Newcombe's square-and-add interval for paired proportions (Newcombe 1998, Stat Med
//     17:2635, method 10: Wilson score limits of the two marginal rates, combined with the
//     estimated correlation φ, corrected towards zero by N/2 as in Newcombe's paper and
//     Fagerland, Lydersen & Laake 2017, §8).
//   - Otherwise the p-value comes from a sign-flip (paired permutation) test on the per-case
//     differences, with the sum of differences as statistic: exact over all 2^n sign patterns
//     when at most ExactSignFlipMax cases differ, else Monte Carlo with a seed, p = (1+k)/(1+draws).
//     The interval is a percentile bootstrap that resamples cases (the epochs of a case stay
//     together), with a seed.
//   - Across the skills of a comparison, p-values are adjusted by Holm's step-down method; a
//     skill's difference is significant when its adjusted p-value is at most Alpha.
//   - Tokens, cost and duration are compared as paired mean differences per case (over the
//     decided epochs) with bootstrap intervals from the same resamples.
package stats
