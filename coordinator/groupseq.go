package coordinator

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/skillfleet/skillfleet/comparison"
	"github.com/skillfleet/skillfleet/stats"
	"github.com/skillfleet/skillfleet/suite"
)

// Baselines that stop early: in a run with a baseline arm (without_skill or old_skill), a
// skill whose compared cases are all `runs: auto` with one max_runs K (and not `parallel:
// false`) has a group-sequential comparison (stats.GroupSequential): its cases' epochs run in
// lockstep in both arms, a window at a time up to the next look (at 1/4, 1/2, 3/4 and all of
// K), and at each look the comparison's paired test is taken over the epochs so far. At the
// first look where it is significant (at the look's share of α, over the run's number of
// compared skills) or can no longer become so, or at K, the skill stops:
//
//   - its baseline arm's epochs after the look are withdrawn (never published, never run);
//     a baseline case whose sequential test had decided within them keeps its verdict, one
//     whose test had not is undecided, never passed or failed (report.Builder.Release);
//   - its with_skill cases go on as in a run without a baseline: each until its own
//     sequential test decides (or max_runs), their other epochs withdrawn. Their verdicts set
//     the run's exit code, so they are never cut short by the comparison: each is exactly the
//     one all its epochs would have given. Those epochs after the look do not enter the
//     comparison, which reads every case's epochs up to the look only.
//
// Every other case of a compared run (fixed `runs`, command cases, skills that do not
// qualify, A/A runs) runs every epoch, as compared runs always did: the comparison pairs
// them. Until its skill stops, a case of a group-sequential skill is held (report.Builder.Hold):
// its verdict waits, so the curtailment of settled cases does not take its epochs.

// compareGroup is one skill of a compared run whose comparison is group-sequential.
type compareGroup struct {
	skill  string
	design stats.GroupSequential
	// rows are the skill's compared rows, of both arms.
	rows []*caseEpochs
	// look is the index of the look the current window runs to, ps the p-values of the looks
	// taken.
	look int
	ps   []float64
	// pending are jobs of the current window, of every row, not yet seen with a result:
	// windowDone drops those that have one from the front, so that each job of a window is
	// looked at about once however many results arrive.
	pending []int
	// result is set once the comparison stopped.
	result *stats.SequentialResult
}

// window is the epochs every row of the group may run until the next look.
func (g *compareGroup) window() int { return g.design.Looks[g.look] }

// planGroups finds the group-sequential skills of a curtailed run with a baseline arm
// (suite.Plan.Lockstep), and marks every other row of it to run all its epochs. It runs before
// any result is counted.
func (r *run) planGroups() {
	lockstep, compared := r.plan.Lockstep()
	bySkill := make(map[string][]*caseEpochs, len(lockstep))
	for _, ls := range lockstep {
		bySkill[ls.Skill] = nil
	}
	// A lockstep skill's compared rows: its cases in both arms (not its command cases).
	type pairKey struct{ skill, name, agent string }
	arms := map[pairKey]int{} // 1: with_skill, 2: baseline, 3: both
	for _, row := range r.rows {
		if _, ok := bySkill[row.key.Skill]; !ok {
			continue
		}
		k := pairKey{row.key.Skill, row.key.Case, row.key.Agent}
		switch row.key.Arm {
		case "":
			arms[k] |= 1
		case string(r.plan.Baseline):
			arms[k] |= 2
		}
	}
	for _, row := range r.rows {
		if arms[pairKey{row.key.Skill, row.key.Case, row.key.Agent}] == 3 {
			bySkill[row.key.Skill] = append(bySkill[row.key.Skill], row)
		}
	}
	for _, ls := range lockstep {
		rows := bySkill[ls.Skill]
		if slices.ContainsFunc(rows, func(row *caseEpochs) bool { return row.seq == nil }) {
			continue // a rule its case could not give (cannot happen once validated): every epoch runs
		}
		design, err := stats.NewGroupSequential(stats.Alpha, ls.Epochs, stats.DefaultLooks, ls.Cases, compared)
		if err != nil {
			continue
		}
		g := &compareGroup{skill: ls.Skill, design: design, rows: rows}
		for _, row := range rows {
			row.group = g
			g.pending = append(g.pending, row.jobs[:g.window()]...)
		}
		r.groups = append(r.groups, g)
	}
	for _, row := range r.rows {
		if row.group == nil {
			row.keep = true
		}
		r.builder.Hold(row.key)
	}
}

// advance takes the looks of group g whose windows are complete and returns the jobs their
// decisions release: the next window of every row, or, once the comparison stopped, what its
// with_skill rows' own sequential tests call for.
func (r *run) advance(g *compareGroup) []int {
	var out []int
	for g.result == nil && r.windowDone(g) {
		reason := r.look(g)
		if reason == "" {
			prev := g.window()
			g.look++
			w := g.window()
			for _, row := range g.rows {
				g.pending = append(g.pending, row.jobs[prev:w]...)
				// A resumed run's row may be past the window already: its results before
				// the restart released more (a with_skill row goes on after the stop).
				if row.released < w {
					out = append(out, row.jobs[row.released:w]...)
					row.released = w
				}
			}
			continue
		}
		res := g.design.Result(g.ps, reason)
		res.Skill = g.skill
		g.result = &res
		note := fmt.Sprintf("the comparison of its skill stopped at look %d of %d: %s", res.StoppedAtLook, len(g.design.Looks), reason)
		for _, row := range g.rows {
			stop := res.EpochsRun
			if row.key.Arm == "" {
				// The with_skill arm decides the exit code: its cases go on under their own rule.
				stop = 0
			}
			r.builder.Release(row.key, stop, note)
		}
		for _, row := range g.rows {
			out = append(out, r.settle(row)...)
		}
	}
	return out
}

// windowDone reports whether every row of g has the results of its epochs up to the window.
// A job once done stays done, so those passed over need no second look.
func (r *run) windowDone(g *compareGroup) bool {
	for len(g.pending) > 0 && r.done[g.pending[0]] {
		g.pending = g.pending[1:]
	}
	return len(g.pending) == 0
}

// look takes g's current look over its rows' epochs up to the window and returns its
// decision ("" to go on).
func (r *run) look(g *compareGroup) string {
	w := g.window()
	var a, b []stats.Case
	for _, row := range g.rows {
		outcomes := r.builder.Outcomes(row.key)
		c := stats.Case{Skill: g.skill, Case: row.key.Case + "\x00" + row.key.Agent, Epochs: make([]stats.Epoch, 0, w)}
		for _, v := range outcomes[:min(w, len(outcomes))] {
			c.Epochs = append(c.Epochs, stats.Epoch{Verdict: comparison.StatsVerdict(v)})
		}
		if row.key.Arm == "" {
			b = append(b, c)
		} else {
			a = append(a, c)
		}
	}
	p, _, err := stats.LookP(a, b, stats.Options{})
	if err != nil {
		// Cannot happen (rows are unique by case and agent); were it to, the comparison
		// runs every epoch rather than stopping on a test it could not take.
		p = 1
	}
	g.ps = append(g.ps, p)
	reason, err := g.design.Decide(g.ps, a, b, stats.Options{})
	if err != nil {
		reason = "" // as above: it goes on rather than stop on a decision it could not take
	}
	if reason == "" && g.look == len(g.design.Looks)-1 {
		return stats.StopMax
	}
	return reason
}

// sequentialResults are the group-sequential comparisons of the run, in skill order, for its
// report: where each stopped, or, when the run ended first, its looks so far (reason
// stats.StopRunEnded); a skill that took no look is left out, and compared over all its
// epochs.
func (r *run) sequentialResults() []stats.SequentialResult {
	var out []stats.SequentialResult
	for _, g := range r.groups {
		switch {
		case g.result != nil:
			out = append(out, *g.result)
		case len(g.ps) > 0:
			res := g.design.Result(g.ps, stats.StopRunEnded)
			res.Skill = g.skill
			out = append(out, res)
		}
	}
	slices.SortFunc(out, func(x, y stats.SequentialResult) int { return cmp.Compare(x.Skill, y.Skill) })
	return out
}

// groupSequential reports whether a plan may have a group-sequential comparison: it has a
// without_skill or old_skill baseline and a `runs: auto` case. Its run is then curtailed, and
// planGroups finds which skills qualify (any that do not run every epoch).
func groupSequential(p *suite.Plan) bool {
	if p.Baseline != suite.ArmWithoutSkill && p.Baseline != suite.ArmOldSkill {
		return false
	}
	for _, c := range p.Cases {
		if c.Sequential {
			return true
		}
	}
	return false
}
