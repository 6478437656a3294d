package report

import (
	"math"

	skillfleetv1 "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/verdict"
)

// Tally counts a case's epochs by job verdict. Epochs without a result are not in it.
type Tally = verdict.Tally

// NormalizeEpochs is the number of epochs a case runs: `runs`, at least 1.
func NormalizeEpochs(epochs int) int { return max(epochs, 1) }

// NormalizeConfidence is the confidence a case is held to: 0 (unset), a negative value or
// NaN mean the default 1.0, and anything above 1 is 1 — the planner is where such values
// should be rejected; here they must only never loosen the bar.
func NormalizeConfidence(c float64) float64 {
	if math.IsNaN(c) || c <= 0 || c > 1 {
		return 1
	}
	return c
}

// RequiredPasses is how many of a case's epochs must pass: ceil(c × N), at least 1. The
// product is lowered by 1e-9 before the ceiling so floating-point noise cannot raise the bar
// at an exact boundary (0.9 × 10 needs 9, 0.7 × 10 needs 7, 2/3 × 3 needs 2). A product that
// truly lies above an integer lies above it by at least 10^-d for a confidence written with d
// decimals, so this is exact for confidences of up to 8 decimals.
func RequiredPasses(epochs int, confidence float64) int {
	n := NormalizeEpochs(epochs)
	need := int(math.Ceil(NormalizeConfidence(confidence)*float64(n) - 1e-9))
	return max(need, 1)
}

// Rule is the case rule of a case of epochs runs held to confidence (see verdict.Fixed).
func Rule(epochs int, confidence float64) verdict.Fixed {
	n := NormalizeEpochs(epochs)
	return verdict.Fixed{Epochs: n, Need: RequiredPasses(n, confidence)}
}

// Decide is the case verdict rule (verdict.Fixed.Final) as far as the epochs reported so far
// decide it: the verdict all the epochs will give as soon as the others cannot change it
// (verdict.Fixed.Settled: passed once enough passed, failed once too many failed, errored,
// timed_out or skipped once neither a pass nor a fail is in reach), VERDICT_UNSPECIFIED
// (pending) before that. With final set (the run was cancelled or hit its deadline) the
// epochs without a result count as skipped and the verdict is Final's.
//
// It never returns passed unless enough epochs really passed.
func Decide(epochs int, confidence float64, t Tally, final bool) skillfleetv1.Verdict {
	rule := Rule(epochs, confidence)
	if final {
		t.Skipped += max(rule.Epochs-t.Reported(), 0)
		return rule.Final(t)
	}
	return rule.Settled(t)
}

// z95 is the standard normal quantile for a two-sided 95% interval.
const z95 = 1.959963984540054

// Wilson is the 95% Wilson score interval of a pass rate of passed out of n, rounded to four
// decimals so reports are stable. n must be positive.
func Wilson(passed, n int) [2]float64 {
	p := float64(passed) / float64(n)
	nf := float64(n)
	z2 := z95 * z95
	den := 1 + z2/nf
	center := (p + z2/(2*nf)) / den
	half := z95 * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf)) / den
	round := func(x float64) float64 { return math.Round(x*1e4) / 1e4 }
	return [2]float64{round(max(0, center-half)), round(min(1, center+half))}
}
