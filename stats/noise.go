package stats

// NoiseFloor is what an A/A comparison (the same arm run twice, interleaved) says of a
// suite's noise: how often its cases' outcomes flip between identical arms, and the smallest
// difference a comparison of its size could tell from that noise.
type NoiseFloor struct {
	// Cases counts the paired cases (decided in both arms); Flipped those whose outcome (a
	// pass when every decided epoch passed) differs between the arms.
	Cases   int `json:"cases"`
	Flipped int `json:"flipped"`
	// FlipRate is Flipped / Cases, with its 95% Wilson score interval (IntervalMethod).
	FlipRate       float64  `json:"flip_rate"`
	Interval       Interval `json:"interval"`
	IntervalMethod string   `json:"interval_method"`
	// Variance is the mean squared per-case difference in pass rate between the arms: the
	// variance of a case's difference when nothing differs but chance (its mean is 0), which
	// is what a comparison's test has to see a difference through.
	Variance float64 `json:"variance"`
	// MinDetectable is the smallest difference in pass rate a paired comparison of Cases cases
	// with these epochs would detect at Alpha with probability Power (see MinDetectable); nil
	// when none of at most 1 is.
	MinDetectable *float64 `json:"min_detectable"`
	// PowerMethod says how MinDetectable was estimated and the test it assumes.
	PowerMethod string `json:"power_method"`
}

// IntervalWilson names the Wilson score interval in reports.
const IntervalWilson = "wilson-95"

// Noise reads an A/A comparison's noise floor from its cases (Comparison.Cases of the two
// identical arms): only paired cases count.
func Noise(cases []CaseDiff) NoiseFloor {
	nf := NoiseFloor{IntervalMethod: IntervalWilson, PowerMethod: PowerMethod}
	var sq float64
	for _, c := range cases {
		if !c.Paired {
			continue
		}
		nf.Cases++
		if Flipped(c) {
			nf.Flipped++
		}
		sq += c.Delta * c.Delta
	}
	nf.Interval = Wilson(nf.Flipped, nf.Cases)
	if nf.Cases > 0 {
		nf.FlipRate = float64(nf.Flipped) / float64(nf.Cases)
		nf.Variance = sq / float64(nf.Cases)
	}
	if mde, ok := MinDetectable(nf.Cases, nf.Variance); ok {
		nf.MinDetectable = &mde
	}
	return nf
}

// Flipped reports whether a paired case's outcome differs between its arms: it passes in an
// arm when every decided epoch there passed (the case-level diff's rule).
func Flipped(c CaseDiff) bool {
	return c.Paired && (c.A.Passed == c.A.Decided) != (c.B.Passed == c.B.Decided)
}
