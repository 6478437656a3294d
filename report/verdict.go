package report

import (
	"math"

	skillfleetv1 "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Tally counts a case's epochs by job verdict. Epochs without a result are not in it.
type Tally struct {
	Passed, Failed, Errored, TimedOut, Skipped int
	// Reused epochs were not run: a changed-only run reused a recent pass of the same digest.
	Reused int
}

// Reported is how many epochs have a result.
func (t Tally) Reported() int {
	return t.Passed + t.Failed + t.Errored + t.TimedOut + t.Skipped + t.Reused
}

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

// Decide is the case verdict rule. With N epochs, need = RequiredPasses(N, c) and t the
// epochs reported so far:
//
//   - passed when t.Passed ≥ need — certain as soon as it holds, whatever the other epochs do;
//   - failed when N − t.Failed < need — even if every other epoch had passed, the threshold
//     could not be met, so the assertion failures alone decide it;
//   - otherwise, once every epoch is in (or final is set: the run was cancelled or hit its
//     deadline, and missing epochs count as skipped), the epochs that errored, timed out or
//     were skipped could have met the threshold, so the case is not a plain fail: errored if
//     any epoch errored, else timed_out if any timed out, else skipped;
//   - before that, VERDICT_UNSPECIFIED (pending).
//
// Reused epochs are not passes: a case is reused when every epoch was, and otherwise its
// reused epochs weigh like skipped ones (a case the fleet's workers split between reusing and
// running is decided by what ran, and passes only if that alone is enough).
//
// It never returns passed unless enough epochs really passed.
func Decide(epochs int, confidence float64, t Tally, final bool) skillfleetv1.Verdict {
	n := NormalizeEpochs(epochs)
	need := RequiredPasses(n, confidence)
	switch {
	case t.Reused == n:
		return skillfleetv1.Verdict_VERDICT_REUSED
	case t.Passed >= need:
		return skillfleetv1.Verdict_VERDICT_PASSED
	case n-t.Failed < need:
		return skillfleetv1.Verdict_VERDICT_FAILED
	case t.Reported() < n && !final:
		return skillfleetv1.Verdict_VERDICT_UNSPECIFIED
	case t.Errored > 0:
		return skillfleetv1.Verdict_VERDICT_ERRORED
	case t.TimedOut > 0:
		return skillfleetv1.Verdict_VERDICT_TIMED_OUT
	default:
		return skillfleetv1.Verdict_VERDICT_SKIPPED
	}
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
