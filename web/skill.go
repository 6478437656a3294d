package web

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/history"
	"github.com/skillfleet/skillfleet/internal/tenant"
)

// errNoTeam answers a team the visitor may not read, as if it did not exist.
var errNoTeam = fmt.Errorf("%w: no such team among yours", ErrNotFound)

// skillRunsShown is how many of a skill's runs its page shows.
const skillRunsShown = 50

// skillPage is a skill's history in a suite: its pass rate over its last runs, its flaky cells
// and those runs.
type skillPage struct {
	Skill, Suite, Lane string
	// Team is the suite's team: the visitor's, or the one an admin names.
	Team string
	// Suites are suites to pick from when none was given.
	Suites []string
	// Note says why there is no history to show.
	Note  string
	Runs  []skillRunRow
	Chart *chart
	// Rate is the pass rate over the decided jobs of the runs shown.
	Rate            float64
	Decided, Passed int
	Flaky           []flakyRow
	FlakyNote       string
}

// skillRunRow is one run of the skill.
type skillRunRow struct {
	ID, Href, Lane, State            string
	Created                          time.Time
	Passed, Failed, Errored, Skipped int
	Rate                             float64
	Decided                          bool
}

// chart is a bar chart of pass rates, drawn as inline SVG (no script, no style attribute).
type chart struct {
	Width, Height int
	Bars          []bar
}

// bar is one run's bar: its height is the pass rate; a run with no decided job is a stub.
type bar struct {
	X, Y, W, H int
	Class      string
	Title      string
}

// chartOf draws runs (newest first) oldest on the left.
func chartOf(runs []skillRunRow) *chart {
	const h, w, gap = 120, 16, 4
	c := &chart{Width: max(len(runs)*(w+gap), 200), Height: h}
	for i := range runs {
		r := runs[len(runs)-1-i]
		b := bar{X: i * (w + gap), W: w, Class: "bar", Title: r.ID + ": no decided job"}
		if r.Decided {
			b.H = max(2, int(r.Rate*float64(h)+0.5))
			b.Title = r.ID + ": " + percent(r.Rate) + " passed"
			if r.Rate < 1 {
				b.Class = "bar low"
			}
		} else {
			b.H, b.Class = 2, "bar none"
		}
		b.Y = h - b.H
		c.Bars = append(c.Bars, b)
	}
	return c
}

func (s *Server) skillPage(w http.ResponseWriter, r *http.Request, v *visitor) {
	ctx, q := r.Context(), r.URL.Query()
	p := skillPage{Skill: r.PathValue("name"), Suite: q.Get("suite"), Lane: q.Get("lane"), Team: tenant.Team(v.Team)}
	if p.Lane == "on-demand" {
		p.Lane = "ondemand"
	}
	if t := q.Get("team"); t != "" {
		// Another team's history is answered as if there were none.
		if tenant.CheckTeam(t) != nil || !v.CanRead(t) {
			s.fail(w, r, v, http.StatusNotFound, errNoTeam)
			return
		}
		p.Team = t
	}
	switch {
	case s.hist == nil:
		p.Note = "This coordinator keeps no history (--history off): a skill's runs over time are not kept."
	case p.Suite == "":
		p.Note = "Pick the suite whose history to show: a skill's history is kept per suite."
		if runs, err := s.src.List(ctx); err == nil {
			set := map[string]bool{}
			for _, st := range runs {
				if tenant.Team(st.GetSpec().GetTeam()) == p.Team {
					set[st.GetSpec().GetName()] = true
				}
			}
			p.Suites = options(set)
		}
	default:
		runs, err := s.hist.SkillRuns(ctx, p.Team, p.Suite, p.Lane, p.Skill, skillRunsShown)
		if err != nil {
			s.log.Warn("skill history", zap.String("skill", p.Skill), zap.Error(err))
			// The driver's error is for the log: it may name hosts, users and tables.
			p.Note = "The history could not be read; the coordinator's log says why."
			break
		}
		if len(runs) == 0 {
			p.Note = "The history holds no run of this skill in this suite" + laneNote(p.Lane) + "."
		}
		p.Runs = skillRows(runs)
		for _, sr := range runs {
			p.Decided += sr.Decided()
			p.Passed += sr.Passed
		}
		if p.Decided > 0 {
			p.Rate = float64(p.Passed) / float64(p.Decided)
		}
		if len(p.Runs) > 0 {
			p.Chart = chartOf(p.Runs)
		}
		p.Flaky, p.FlakyNote = s.flakyOf(r, p.Team, p.Suite, p.Lane, p.Skill)
	}
	p.Skill = name(p.Skill)
	s.render(w, r, http.StatusOK, "skill", "Skill "+p.Skill, v, p)
}

func laneNote(lane string) string {
	if lane == "" {
		return ""
	}
	return " and lane " + lane
}

func skillRows(runs []history.SkillRun) []skillRunRow {
	out := make([]skillRunRow, 0, len(runs))
	for _, sr := range runs {
		row := skillRunRow{ID: sr.RunID, Href: runHref(sr.RunID), Lane: sr.Lane, State: sr.State, Created: sr.CreatedAt,
			Passed: sr.Passed, Failed: sr.Failed, Errored: sr.Errored + sr.TimedOut, Skipped: sr.Skipped, Decided: sr.Decided() > 0}
		if row.Decided {
			row.Rate = float64(sr.Passed) / float64(sr.Decided())
		}
		out = append(out, row)
	}
	return out
}

// flakyOf lists the skill's flaky cells in the suite.
func (s *Server) flakyOf(r *http.Request, team, suite, lane, skill string) ([]flakyRow, string) {
	if s.flaky == nil {
		return nil, "Flaky labels are not available."
	}
	cells, err := s.flaky.FlakyCells(r.Context(), team, suite, lane)
	if err != nil {
		s.log.Warn("flaky cells", zap.String("suite", suite), zap.Error(err))
		return nil, "The flaky labels could not be read; the coordinator's log says why."
	}
	var out []flakyRow
	for _, c := range cells {
		if c.Skill != skill {
			continue
		}
		label := name(c.Case)
		if c.Agent != "" {
			label += " [" + name(c.Agent) + "]"
		}
		if c.Model != "" {
			label += " (" + name(c.Model) + ")"
		}
		out = append(out, flakyRow{Name: label, Evidence: oneLine(c.Evidence, 2000), Quarantined: c.Quarantined})
	}
	slices.SortFunc(out, func(a, b flakyRow) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	if len(out) == 0 {
		return nil, "No case of this skill is labelled flaky."
	}
	return out, ""
}
