package web

import (
	"context"
	"fmt"

	"github.com/skillfleet/skillfleet/comparison"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// armA2 is the arm of an A/A run's second with_skill (suite.ArmA2, which web may not import).
const armA2 = "a2"

// maxNoiseListed bounds the cases an A/A run's agreement table lists: those that did not agree
// come first, so a suite of 10,000 cases still shows every flip up to the bound, and counts
// the rest.
const maxNoiseListed = 500

// noiseView is an A/A comparison's noise floor as the compare page and the HTML report show
// it: the suite's flip rate with its interval, the smallest difference a comparison of its
// size could detect, and whether each case agreed between its two identical arms.
type noiseView struct {
	Cases, Flipped    int
	FlipRate, Lo, Hi  float64
	Variance          float64
	MinDetectable     string
	PowerMethod, Test string
	// Agree counts the cases that agreed, of All (every case of either arm).
	Agree, All int
	Rows       []noiseRow
	// More counts the cases not listed (all of them agreeing ones, unless flips alone pass
	// the bound).
	More int
}

// noiseRow is one case of an A/A run: its passed over decided epochs in each arm, its outcome
// there, and whether they agreed.
type noiseRow struct {
	Skill, Case, Href   string
	A, B, AOut, BOut    string
	Agree, Paired, Flip bool
}

// noiseViewOf renders an A/A comparison's noise floor; nil when the comparison has none.
func noiseViewOf(r *comparison.Report, cases caseLinker) *noiseView {
	n := r.Noise
	if n == nil {
		return nil
	}
	v := &noiseView{
		Cases: n.Cases, Flipped: n.Flipped, FlipRate: n.FlipRate, Lo: n.Interval.Lo, Hi: n.Interval.Hi, Variance: n.Variance,
		MinDetectable: "none: too few cases or too much noise to detect any difference",
		PowerMethod:   n.PowerMethod, Test: r.Comparison.Overall.Test, All: len(n.PerCase),
	}
	if n.MinDetectable != nil {
		v.MinDetectable = fmt.Sprintf("%.1f points", 100**n.MinDetectable)
	}
	row := func(c comparison.NoiseCase) noiseRow {
		nr := noiseRow{Skill: name(c.Skill), Case: name(c.Case), A: c.A, B: c.B, AOut: c.AOutcome, BOut: c.BOutcome,
			Agree: c.Agree, Paired: c.Paired, Flip: c.Paired && !c.Agree}
		if cases != nil {
			nr.Href = cases(c.Skill, c.Case)
		}
		return nr
	}
	// Flips first, then the cases not paired, then the agreeing ones, each in the
	// comparison's order (skill, case).
	for _, pass := range []func(comparison.NoiseCase) bool{
		func(c comparison.NoiseCase) bool { return c.Paired && !c.Agree },
		func(c comparison.NoiseCase) bool { return !c.Paired },
		func(c comparison.NoiseCase) bool { return c.Agree },
	} {
		for _, c := range n.PerCase {
			if !pass(c) {
				continue
			}
			if c.Agree {
				v.Agree++
			}
			if len(v.Rows) < maxNoiseListed {
				v.Rows = append(v.Rows, row(c))
			} else {
				v.More++
			}
		}
	}
	return v
}

// armSides reads the two arms of run st (which has a baseline) as the sides of a comparison,
// with its options: with_skill against the baseline arm, or, for an A/A run, the with_skill
// arm (as "a") against its repeat a2, with the noise floor.
func (s *Server) armSides(ctx context.Context, st *pb.RunStatus) (a, b comparison.Side, opt comparison.Options, err error) {
	id, base := st.GetId(), st.GetSpec().GetBaseline()
	_, recs, err := s.sides(ctx, id, comparison.WithSkill, base)
	if err != nil {
		return a, b, opt, err
	}
	side := func(arm string) comparison.Side {
		return comparison.Side{Label: arm, Run: id, Arm: arm, Spec: st.GetSpec(), Results: recs[arm]}
	}
	a, b = side(base), side(comparison.WithSkill)
	opt = comparison.Options{Axis: comparison.AxisArm, AA: base == armA2}
	if rep, err := s.src.Report(ctx, id); err == nil {
		// A skill whose comparison stopped early is read up to its stop, as the CLI reads it.
		opt.Sequential = rep.Sequential
	}
	if opt.AA {
		// The skill's effect is with_skill minus the baseline; an A/A run has no effect to
		// measure, only chance: a2 against a, as the CLI reports it.
		a, b = b, a
		a.Label = "a"
	}
	return a, b, opt, nil
}
