package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/skillfleet/skillfleet/comparison"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/stats"
)

// comparePage compares two runs, or a run's two arms.
type comparePage struct {
	A, B, Run, Arm string
	// Refused lists why the comparison was refused; Error says what failed.
	Refused []comparison.Difference
	Error   string
	View    *compareView
}

// compareView is a comparison side by side, as the page and the HTML report show it.
type compareView struct {
	A, B      sideView
	Axis      string
	Alpha     float64
	Seed      uint64
	PerSkill  []skillCompareRow
	Overall   skillCompareRow
	Changes   []changeList
	Undecided int
	// Noise is an A/A run's noise floor; nil for any other comparison.
	Noise *noiseView
}

// sideView is one side of a comparison.
type sideView struct {
	Label, Run, Href, Arm string
	Results               int
}

// skillCompareRow is one skill's comparison (or the overall one, Skill empty).
type skillCompareRow struct {
	stats.SkillComparison
	SkillHref, Verdict string
}

// links are where a comparison's runs, skills and cases link; a nil one links nothing.
type links struct {
	run   func(id string) string
	skill func(name string) string
	cases caseLinker
}

// compareViewOf renders a comparison for reading.
func compareViewOf(r *comparison.Report, l links) *compareView {
	side := func(s comparison.Side) sideView {
		v := sideView{Label: name(s.Label), Run: s.Run, Arm: s.Arm, Results: len(s.Results)}
		if s.Run != "" && l.run != nil {
			v.Href = l.run(s.Run)
		}
		return v
	}
	row := func(sc stats.SkillComparison) skillCompareRow {
		row := skillCompareRow{SkillComparison: sc, Verdict: "no"}
		row.Skill = name(sc.Skill)
		switch {
		case !sc.Tested:
			row.Verdict = "not tested"
		case sc.Significant && sc.Delta < 0:
			row.Verdict = "yes, worse"
		case sc.Significant && sc.Delta > 0:
			row.Verdict = "yes, better"
		case sc.Significant:
			row.Verdict = "yes"
		case sc.Underpowered:
			// The design could not have seen --min-effect: "not significant" says little.
			row.Verdict = "no, underpowered"
		}
		if sc.Skill != "" && l.skill != nil {
			row.SkillHref = l.skill(sc.Skill)
		}
		return row
	}
	v := &compareView{A: side(r.A), B: side(r.B), Axis: r.Axis.String(), Alpha: stats.Alpha, Seed: r.Comparison.Seed,
		Overall: row(r.Comparison.Overall), Undecided: len(r.Changes.Undecided)}
	for _, sc := range r.Comparison.PerSkill {
		v.PerSkill = append(v.PerSkill, row(sc))
	}
	for _, cat := range r.ChangeLists() {
		if len(cat.Cases) == 0 {
			continue
		}
		cl := changeList{Name: cat.Name, Class: cat.Class, More: max(0, len(cat.Cases)-maxChangesListed)}
		for _, cc := range cat.Cases[:min(len(cat.Cases), maxChangesListed)] {
			row := changedRow{Skill: name(cc.Skill), Case: name(cc.Case), Previous: cc.A, Current: cc.B, Flipped: cc.FlippedEpochs}
			if l.cases != nil {
				row.Href = l.cases(cc.Skill, cc.Case)
			}
			cl.Cases = append(cl.Cases, row)
		}
		v.Changes = append(v.Changes, cl)
	}
	v.Noise = noiseViewOf(r, l.cases)
	return v
}

// side reads one arm of a run as a side of a comparison: only what a comparison reads of each
// result is kept, so a run of many cases is not held in memory with its outputs.
func (s *Server) sides(ctx context.Context, id string, arms ...string) (*pb.RunStatus, map[string][]comparison.Record, error) {
	st, err := s.src.Status(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	kept := make(map[string]*comparison.Records, len(arms))
	for _, a := range arms {
		kept[a] = &comparison.Records{}
	}
	err = s.src.AcceptedResults(ctx, id, func(r *pb.Result) error {
		if rs := kept[armName(r.GetArm())]; rs != nil {
			rs.Add(r)
		}
		return nil
	})
	out := make(map[string][]comparison.Record, len(arms))
	for a, rs := range kept {
		out[a] = rs.List()
	}
	return st, out, err
}

func (s *Server) comparePage(w http.ResponseWriter, r *http.Request, v *visitor) {
	ctx, q := r.Context(), r.URL.Query()
	p := comparePage{A: q.Get("a"), B: q.Get("b"), Run: q.Get("run"), Arm: q.Get("arm")}
	if p.Arm == "" {
		p.Arm = comparison.WithSkill
	}
	var (
		a, b comparison.Side
		opt  comparison.Options
	)
	switch {
	case p.Run != "":
		st, serr := s.src.Status(ctx, p.Run)
		if serr != nil {
			s.fail(w, r, v, lookupCode(serr), serr)
			return
		}
		if st.GetSpec().GetBaseline() == "" {
			s.fail(w, r, v, http.StatusBadRequest, fmt.Errorf("run %s has no baseline arm to compare with", p.Run))
			return
		}
		var err error
		if a, b, opt, err = s.armSides(ctx, st); err != nil {
			s.fail(w, r, v, lookupCode(err), err)
			return
		}
	case p.A != "" && p.B != "":
		var sides [2]comparison.Side
		for i, id := range []string{p.A, p.B} {
			st, recs, err := s.sides(ctx, id, p.Arm)
			if err != nil {
				s.fail(w, r, v, lookupCode(err), err)
				return
			}
			sides[i] = comparison.Side{Label: "run " + id, Run: id, Arm: p.Arm, Spec: st.GetSpec(), Results: recs[p.Arm]}
		}
		a, b, opt.Axis = sides[0], sides[1], comparison.AxisSkill
	default:
		s.render(w, r, http.StatusOK, "compare", "Compare", v, p)
		return
	}
	rep, err := comparison.Compare(a, b, opt)
	var refused *comparison.RefusalError
	switch {
	case errors.As(err, &refused):
		p.Refused = refused.Differences
	case err != nil:
		p.Error = err.Error()
	default:
		suite, team := "", ""
		if st, err := s.src.Status(ctx, b.Run); err == nil {
			suite, team = st.GetSpec().GetName(), st.GetSpec().GetTeam()
		}
		l := links{run: runHref, skill: func(skill string) string { return skillHref(skill, team, suite) }}
		if opt.Axis == comparison.AxisArm {
			// The changed cases are the run's: they link to its with_skill cases.
			if rep, err := s.src.Report(ctx, p.Run); err == nil {
				l.cases = caseLinks(p.Run, rep.Cases)
			}
		}
		p.View = compareViewOf(rep, l)
	}
	s.render(w, r, http.StatusOK, "compare", "Compare", v, p)
}
