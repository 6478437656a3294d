package stats

import (
	"fmt"
	"math"
)

// SPRT is Wald's sequential probability ratio test of a case's pass rate p, one decided epoch
// (passed or failed) at a time: H1 "p ≥ P1" (the case passes) against H0 "p ≤ P0" (it fails),
// with P0 = confidence − δ and P1 = confidence + δ, δ the indifference zone. Alpha bounds the
// chance of passing a case whose p is P0 or less, Beta that of failing one whose p is P1 or
// more (Wald's approximations, which err on the safe side: the true rates are at most
// Alpha/(1−Beta) and Beta/(1−Alpha), and in practice below Alpha and Beta).
//
// After s passes and f failures the log-likelihood ratio is
//
//	Λ = s·ln(P1/P0) + f·ln((1−P1)/(1−P0))
//
// and the test passes the case once Λ ≥ ln((1−Beta)/Alpha), fails it once Λ ≤
// ln(Beta/(1−Alpha)), and asks for another epoch in between. testdata/sprt.py computes the
// same boundaries independently (testdata/sprt.json).
type SPRT struct {
	P0, P1      float64
	Alpha, Beta float64
}

// Sequential defaults: the indifference zone's half width and both error rates.
const (
	DefaultSPRTDelta = 0.1
	DefaultSPRTAlpha = 0.05
	DefaultSPRTBeta  = 0.05
)

// NewSPRT is the test of "passes at least confidence + delta of the time" against "at most
// confidence − delta". It refuses a zone that leaves [0, 1] (confidence 1.0 cannot be tested
// sequentially: one failure would decide it) and error rates outside (0, 0.5).
func NewSPRT(confidence, delta, alpha, beta float64) (SPRT, error) {
	s := SPRT{P0: confidence - delta, P1: confidence + delta, Alpha: alpha, Beta: beta}
	switch {
	case !(delta > 0):
		return SPRT{}, fmt.Errorf("the indifference zone δ must be positive, not %g", delta)
	case !(s.P0 > 0) || !(s.P1 < 1):
		return SPRT{}, fmt.Errorf("confidence %g ± δ %g leaves (0, 1): a sequential test needs a zone inside it", confidence, delta)
	case !(alpha > 0 && alpha < 0.5) || !(beta > 0 && beta < 0.5):
		return SPRT{}, fmt.Errorf("error rates must lie in (0, 0.5), not α %g and β %g", alpha, beta)
	}
	return s, nil
}

// Bounds are the log-likelihood ratios at which the test fails (lower) and passes (upper).
func (s SPRT) Bounds() (lower, upper float64) {
	return math.Log(s.Beta / (1 - s.Alpha)), math.Log((1 - s.Beta) / s.Alpha)
}

// LLR is the log-likelihood ratio of H1 against H0 after passed passes and failed failures.
func (s SPRT) LLR(passed, failed int) float64 {
	return float64(passed)*math.Log(s.P1/s.P0) + float64(failed)*math.Log((1-s.P1)/(1-s.P0))
}

// Decide is +1 once the evidence passes the case, −1 once it fails it, 0 while it asks for
// more.
func (s SPRT) Decide(passed, failed int) int {
	lower, upper := s.Bounds()
	switch l := s.LLR(passed, failed); {
	case l >= upper:
		return 1
	case l <= lower:
		return -1
	}
	return 0
}

// PassLine is the fewest passes among n decided epochs that pass the case (n+1: none do).
func (s SPRT) PassLine(n int) int {
	for k := 0; k <= n; k++ {
		if s.Decide(k, n-k) > 0 {
			return k
		}
	}
	return n + 1
}

// FailLine is the most passes among n decided epochs that still fail the case (−1: none do).
func (s SPRT) FailLine(n int) int {
	for k := n; k >= 0; k-- {
		if s.Decide(k, n-k) < 0 {
			return k
		}
	}
	return -1
}
