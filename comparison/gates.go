package comparison

import (
	"fmt"
	"strings"
)

// GateError is a gate that did not let a run through: the skills that failed it and why.
type GateError struct {
	Gate   string
	Skills []string
	Why    []string
}

func (e *GateError) Error() string {
	return fmt.Sprintf("%s: %d skills: %s", e.Gate, len(e.Skills), strings.Join(e.Why, "; "))
}

// FailIfWorse is the gate of --fail-if-worse: it fails when the candidate (side B) is
// significantly worse than its baseline (side A) on any skill, and passes otherwise, however
// the rest of the comparison went. A skill with no paired case is never significant.
func FailIfWorse(r *Report) error {
	var e GateError
	for _, s := range r.Comparison.PerSkill {
		if s.Significant && s.Delta < 0 {
			e.Skills = append(e.Skills, s.Skill)
			e.Why = append(e.Why, fmt.Sprintf("%s %s points [%s, %s], p %.4f (Holm)", clean(s.Skill), points(s.Delta), points(s.Interval.Lo), points(s.Interval.Hi), s.PAdjusted))
		}
	}
	if e.Skills == nil {
		return nil
	}
	e.Gate = "significantly worse than the baseline"
	return &e
}

// FailUnlessBetter is the gate of --fail-unless-better: r compares a skill's results (side B,
// with_skill) against the same cases without it (side A, without_skill), and the gate fails
// for every skill that is not significantly better with it. A skill with no paired case (all
// errored, say) is not better: it fails the gate.
func FailUnlessBetter(r *Report) error {
	var e GateError
	if len(r.Comparison.PerSkill) == 0 {
		return &GateError{Gate: "not better with the skill than without it", Why: []string{"no case was compared"}}
	}
	for _, s := range r.Comparison.PerSkill {
		switch {
		case s.Significant && s.Delta > 0:
			continue
		case !s.Tested:
			e.Why = append(e.Why, fmt.Sprintf("%s: no paired case to compare", clean(s.Skill)))
		default:
			e.Why = append(e.Why, fmt.Sprintf("%s %s points [%s, %s], p %.4f (Holm): not significantly better", clean(s.Skill), points(s.Delta), points(s.Interval.Lo), points(s.Interval.Hi), s.PAdjusted))
		}
		e.Skills = append(e.Skills, s.Skill)
	}
	if e.Skills == nil {
		return nil
	}
	e.Gate = "not better with the skill than without it"
	return &e
}
