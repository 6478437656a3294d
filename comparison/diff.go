package comparison

import (
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/stats"
)

// The outcomes of a case in one side, as the case-level diff sees it. A case is passing when
// every decided epoch passed, failing when one failed, and undecided when no epoch was decided
// (all errored, timed out or skipped): an undecided case is never counted as passing. With
// `confidence` below 1 a report may pass a case this diff calls failing; the diff speaks of
// epochs, the report of the case's rule.
const (
	Passing   = "passing"
	Failing   = "failing"
	Undecided = "undecided"
	Absent    = "absent"
	// Reused: every epoch was reused by a changed-only run from an earlier passing run of the
	// same cell digest. Nothing about the case changed, so the diff lists it nowhere (bar new).
	Reused = "reused"
)

// CaseChange is one case that changed between the sides.
type CaseChange struct {
	Skill string `json:"skill"`
	// Case is the case's name, with its agent in brackets when it has one.
	Case string `json:"case"`
	A    string `json:"a"`
	B    string `json:"b"`
	// FlippedEpochs are the epochs decided in both sides with different verdicts.
	FlippedEpochs []int `json:"flipped_epochs,omitempty"`
}

// Changes is what changed, case by case, from side A to side B. Every list is sorted by skill
// and case.
type Changes struct {
	// NewlyFailing: passing in A, failing in B.
	NewlyFailing []CaseChange `json:"newly_failing"`
	// Fixed: failing in A, passing in B.
	Fixed []CaseChange `json:"fixed"`
	// StillFailing: failing in both.
	StillFailing []CaseChange `json:"still_failing"`
	// New: only in B; Removed: only in A.
	New     []CaseChange `json:"new"`
	Removed []CaseChange `json:"removed"`
	// Undecided: in both sides, undecided in at least one (errored there): nothing is claimed.
	Undecided []CaseChange `json:"undecided"`
	// Flipped: the case's outcome is the same, but some of its epochs flipped.
	Flipped []CaseChange `json:"flipped"`
}

// outcome decides a case's outcome in one side from its epochs' verdicts.
func outcome(g *group) string {
	if g == nil {
		return Absent
	}
	decided, passed, reused := 0, 0, 0
	for _, r := range g.epochs {
		if r.GetVerdict() == pb.Verdict_VERDICT_REUSED {
			reused++
		}
		switch StatsVerdict(r.GetVerdict()) {
		case stats.Passed:
			decided++
			passed++
		case stats.Failed:
			decided++
		}
	}
	switch {
	case reused == len(g.epochs):
		return Reused
	case decided == 0:
		return Undecided
	case passed == decided:
		return Passing
	}
	return Failing
}

// flipped lists the epochs both groups decided with different verdicts.
func flipped(a, b *group) []int {
	if a == nil || b == nil {
		return nil
	}
	decided := func(r *Record) bool {
		v := r.GetVerdict()
		return v == pb.Verdict_VERDICT_PASSED || v == pb.Verdict_VERDICT_FAILED
	}
	var out []int
	i, j := 0, 0
	for i < len(a.epochs) && j < len(b.epochs) {
		ra, rb := a.epochs[i], b.epochs[j]
		switch {
		case ra.GetEpoch() < rb.GetEpoch():
			i++
		case ra.GetEpoch() > rb.GetEpoch():
			j++
		default:
			if decided(ra) && decided(rb) && ra.GetVerdict() != rb.GetVerdict() {
				out = append(out, int(ra.GetEpoch()))
			}
			i++
			j++
		}
	}
	return out
}

// diff compares two sides' grouped results (each sorted by skill and case) case by case.
func diff(ga, gb []group) Changes {
	var ch Changes
	i, j := 0, 0
	for i < len(ga) || j < len(gb) {
		var a, b *group
		switch {
		case j == len(gb) || (i < len(ga) && compareGroups(&ga[i], &gb[j]) < 0):
			a = &ga[i]
			i++
		case i == len(ga) || compareGroups(&ga[i], &gb[j]) > 0:
			b = &gb[j]
			j++
		default:
			a, b = &ga[i], &gb[j]
			i++
			j++
		}
		key := a
		if key == nil {
			key = b
		}
		c := CaseChange{Skill: key.key.skill, Case: key.name, A: outcome(a), B: outcome(b), FlippedEpochs: flipped(a, b)}
		switch {
		case c.A == Absent:
			ch.New = append(ch.New, c)
		case c.B == Absent:
			ch.Removed = append(ch.Removed, c)
		case c.A == Reused || c.B == Reused:
		case c.A == Undecided || c.B == Undecided:
			ch.Undecided = append(ch.Undecided, c)
		case c.A == Passing && c.B == Failing:
			ch.NewlyFailing = append(ch.NewlyFailing, c)
		case c.A == Failing && c.B == Passing:
			ch.Fixed = append(ch.Fixed, c)
		case c.A == Failing && c.B == Failing:
			ch.StillFailing = append(ch.StillFailing, c)
			if c.FlippedEpochs != nil {
				ch.Flipped = append(ch.Flipped, c)
			}
		}
	}
	return ch
}

// ChangeList is one of the Changes' lists as it is shown: its heading, the phrase the
// summary line counts it with, its class in the viewer ("bad", "ok" or none) and its cases.
type ChangeList struct {
	Name, Summary, Class string
	Cases                []CaseChange
}

// ChangeLists are the report's Changes in the order they are shown. An A/A report names
// them by side, not as regressions and fixes: the two sides are the same arm, so a case
// that passed in a and failed in a2 is noise, neither newly failing nor fixed.
func (r *Report) ChangeLists() []ChangeList {
	ch := r.Changes
	if r.Noise != nil {
		return []ChangeList{
			{Name: "failing only in a2", Cases: ch.NewlyFailing},
			{Name: "failing only in a", Cases: ch.Fixed},
			{Name: "failing in both", Cases: ch.StillFailing},
			{Name: "only in a2", Cases: ch.New},
			{Name: "only in a", Cases: ch.Removed},
			{Name: "undecided", Cases: ch.Undecided},
			{Name: "flipped epochs", Summary: "with flipped epochs", Cases: ch.Flipped},
		}
	}
	return []ChangeList{
		{Name: "newly failing", Class: "bad", Cases: ch.NewlyFailing},
		{Name: "fixed", Class: "ok", Cases: ch.Fixed},
		{Name: "still failing", Class: "bad", Cases: ch.StillFailing},
		{Name: "new", Cases: ch.New},
		{Name: "removed", Cases: ch.Removed},
		{Name: "undecided", Cases: ch.Undecided},
		{Name: "flipped epochs", Summary: "with flipped epochs", Cases: ch.Flipped},
	}
}
