package stats

import "math"

// The design a power estimate assumes: the paired test of Compare at level Alpha (two-sided),
// and the power it is asked to reach.
const (
	// Power is the probability of a significant result that a detectable difference must
	// reach.
	Power = 0.8
	// DefaultMinEffect is the difference in pass rate (a fraction, 0.1 = ten points) that a
	// comparison is expected to be able to see; a design whose MinDetectable is larger is
	// underpowered.
	DefaultMinEffect = 0.1
	// MinDifferingCases is the fewest cases whose arms differ for which Compare's paired tests
	// can reach p ≤ Alpha at all: McNemar's exact test and the sign-flip test both give, at
	// best, p = 2·2^-n with n differing cases, which is 0.0625 for five and 0.03125 for six.
	MinDifferingCases = 6
	// PowerMethod names the approximation of MinDetectable, for reports.
	PowerMethod = "normal approximation of the paired test on per-case differences (two-sided, alpha 0.05, power 0.8; the effect changes a fraction of cases one way, on top of the noise), at least 6 differing cases"
)

// zQuantile is the standard normal quantile: P(Z ≤ zQuantile(p)) = p.
func zQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }

// MinDetectable is the smallest difference in pass rate (a fraction in (0, 1]) that a paired
// comparison of cases cases detects with probability Power at level Alpha, when the per-case
// differences (B's pass rate minus A's, each over its epochs) vary with variance variance when
// the arms do not differ (an A/A run's mean squared difference). ok is false when no
// difference of at most 1 is detectable: fewer than MinDifferingCases cases, or noise too
// large for the suite's size.
//
// The effect it assumes: B changes the outcome of a fraction δ of the cases in one direction,
// on top of the noise. A case's difference then has mean δ, second moment variance + δ and
// variance variance + δ − δ². Compare tests with McNemar's exact test or a sign-flip test on
// those differences; both are, for more than a handful of cases, the z-test of their mean
// against its spread under the null given what differs (√(second moment/cases)), so the
// estimate is the δ that solves (Connor 1987's paired-proportions formula, generalised from
// one epoch to many):
//
//	δ·√cases = z_{1-Alpha/2}·√(variance + δ) + z_Power·√(variance + δ − δ²)
//
// ignoring the rejections in the wrong direction (less than Alpha/2). The exact tests need at
// least MinDifferingCases differing cases to reach Alpha at all, so the estimate is at least
// MinDifferingCases/cases. The exact tests are conservative: at the estimate, McNemar's exact
// power is somewhat below Power (76–78% for 30 to 500 cases in stats/testdata/power.py), so
// a design called underpowered is so.
func MinDetectable(cases int, variance float64) (mde float64, ok bool) {
	if cases < MinDifferingCases || variance < 0 || math.IsNaN(variance) || math.IsInf(variance, 0) {
		return 0, false
	}
	n := math.Sqrt(float64(cases))
	za, zb := zQuantile(1-Alpha/2), zQuantile(Power)
	gap := func(d float64) float64 {
		return d*n - za*math.Sqrt(variance+d) - zb*math.Sqrt(max(variance+d-d*d, 0))
	}
	if gap(1) < 0 {
		return 0, false
	}
	// gap is negative just above 0 and positive at 1: bisect to its first root.
	lo, hi := 1e-12, 1.0
	for range 100 {
		mid := (lo + hi) / 2
		if gap(mid) < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return max(hi, MinDifferingCases/float64(cases)), true
}

// EpochFlipVariance is the variance of a case's per-case difference between two identical
// arms of epochs epochs each, when two single epochs of the case disagree with probability
// flip: a case that passes with probability p has flip = 2p(1-p), and the difference of two
// independent means of epochs Bernoulli(p) epochs has variance 2p(1-p)/epochs = flip/epochs.
// It is what plan --baseline assumes of a suite whose noise it knows only as a flip rate.
func EpochFlipVariance(flip float64, epochs int) float64 {
	if epochs < 1 {
		epochs = 1
	}
	return flip / float64(epochs)
}

// sampleVariance is the unbiased variance of x around its mean; 0 for fewer than two values.
func sampleVariance(x []float64) float64 {
	if len(x) < 2 {
		return 0
	}
	var mean float64
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	var ss float64
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	return ss / float64(len(x)-1)
}
