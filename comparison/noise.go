package comparison

import (
	"fmt"
	"strings"

	"github.com/skillfleet/skillfleet/stats"
)

// Noise is an A/A comparison's account of a suite's noise: the same arm run twice,
// interleaved, so that every difference between the sides is chance.
type Noise struct {
	stats.NoiseFloor
	// PerCase is every case of either side, sorted by skill and case, with whether its
	// outcome agreed between the sides.
	PerCase []NoiseCase `json:"per_case"`
}

// NoiseCase is one case of an A/A comparison.
type NoiseCase struct {
	Skill string `json:"skill"`
	// Case is the case's name, with its agent in brackets when it has one.
	Case string `json:"case"`
	// A and B are the case's passed epochs over its decided epochs in each side ("2/3").
	A string `json:"a_epochs"`
	B string `json:"b_epochs"`
	// AOutcome and BOutcome are its outcomes: "passing" when every decided epoch passed,
	// "failing", "undecided" when none was decided, "absent". Agree is true when the case
	// was decided in both sides (Paired) with the same outcome.
	AOutcome string `json:"a"`
	BOutcome string `json:"b"`
	Agree    bool   `json:"agree"`
	Paired   bool   `json:"paired"`
}

// noiseOf makes the noise floor of an A/A comparison's cases.
func noiseOf(cases []stats.CaseDiff) *Noise {
	n := &Noise{NoiseFloor: stats.Noise(cases), PerCase: make([]NoiseCase, 0, len(cases))}
	side := func(c stats.CaseArm) string {
		switch {
		case !c.Present:
			return Absent
		case c.Decided == 0:
			return Undecided
		case c.Passed == c.Decided:
			return Passing
		}
		return Failing
	}
	for _, c := range cases {
		n.PerCase = append(n.PerCase, NoiseCase{
			Skill: c.Skill, Case: c.Case, AOutcome: side(c.A), BOutcome: side(c.B),
			A: fmt.Sprintf("%d/%d", c.A.Passed, c.A.Decided), B: fmt.Sprintf("%d/%d", c.B.Passed, c.B.Decided),
			Paired: c.Paired, Agree: c.Paired && !stats.Flipped(c),
		})
	}
	return n
}

// minDetectable renders a minimum detectable difference in points, or says none is.
func minDetectable(mde *float64) string {
	if mde == nil {
		return "none (too few cases or too much noise to detect any difference)"
	}
	return fmt.Sprintf("%.1f points", 100**mde)
}

// writeNoise renders the noise floor for a person: the flip rate with its interval, the
// smallest detectable difference and the test it assumes, then every flipped case and how
// many agreed.
func writeNoise(b *strings.Builder, n *Noise, test string) {
	fmt.Fprintf(b, "\nnoise floor (A/A: the same arm run twice, interleaved, as a and a2):\n")
	fmt.Fprintf(b, "  flip rate: %d of %d paired cases (%s), 95%% Wilson interval [%s, %s]\n",
		n.Flipped, n.Cases, percent(n.FlipRate), percent(n.Interval.Lo), percent(n.Interval.Hi))
	fmt.Fprintf(b, "  a --baseline comparison of %d cases with these epochs detects at 80%% power, alpha 0.05: %s\n",
		n.Cases, minDetectable(n.MinDetectable))
	fmt.Fprintf(b, "  (%s, which approximates the comparison's %s test; variance of a case's difference %.4f)\n", stats.PowerMethod, test, n.Variance)
	agree, listed := 0, 0
	for _, c := range n.PerCase {
		if c.Agree {
			agree++
			continue
		}
		if listed == maxListed {
			continue
		}
		listed++
		what := "flipped"
		if !c.Paired {
			what = "not paired"
		}
		fmt.Fprintf(b, "  %s %s/%s: a %s %s, a2 %s %s\n", what, clean(c.Skill), clean(c.Case), c.A, c.AOutcome, c.B, c.BOutcome)
	}
	if more := len(n.PerCase) - agree - listed; more > 0 {
		fmt.Fprintf(b, "  and %d more not agreeing\n", more)
	}
	fmt.Fprintf(b, "  %d of %d cases agree\n", agree, len(n.PerCase))
}
