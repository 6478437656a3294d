// Package changes builds, from the results history, what a run's report says about the runs
// before it: the "what changed" section (the case-level diff against the previous completed
// run of the same team, suite and lane, with the paired statistics) and the flaky labels of its
// cells, and it applies a quarantine policy to the report. A suite name is a suite only within
// its team: another team's runs under the same name are never read.
//
// Labels are recomputed from the window at every report, not stored: the previous label that
// flaky.Assess needs for its hysteresis is the label the same rules give the window without
// its newest run, replayed from the window's oldest run (which starts unlabelled). So no table
// holds labels and no migration was needed; a cell's label depends only on the runs in its
// window, and two reports of the same run agree.
//
// The window is the team's suite's last Window finished runs in the lane
// (history.WindowVerdicts), plus the run reported. Only with_skill results count: a baseline
// arm failing is expected.
package changes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/comparison"
	"github.com/skillfleet/skillfleet/flaky"
	"github.com/skillfleet/skillfleet/history"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
)

// Store is what the section reads of the history; *history.Store is one.
type Store interface {
	PreviousRunOf(ctx context.Context, team, suite, lane string, created time.Time, id string) (history.Run, bool, error)
	RunResults(ctx context.Context, id string) ([]history.Result, error)
	WindowVerdicts(ctx context.Context, team, suite, lane string, n int, exclude string) ([]history.Cell, error)
}

// Run names the run a report is about.
type Run struct {
	ID string
	// Team owns the run (tenant.Team of its spec's team): only the team's runs of the suite
	// are compared with it and label its cells.
	Team        string
	Suite, Lane string
	Created     time.Time
}

// Annotate sets rep.Changes from the store and this run's results (current: every result the
// report counts, of any arm), and marks the cases whose cell is labelled flaky.
func Annotate(ctx context.Context, s Store, run Run, current []history.Result, rep *report.Report, cfg flaky.Config) error {
	ch := &report.Changes{}
	prev, ok, err := s.PreviousRunOf(ctx, run.Team, run.Suite, run.Lane, run.Created, run.ID)
	if err != nil {
		return err
	}
	if !ok {
		ch.Note = fmt.Sprintf("no previous completed run of suite %q in lane %s", run.Suite, run.Lane)
	} else {
		rows, err := s.RunResults(ctx, prev.ID)
		if err != nil {
			return err
		}
		id := prev.ID
		ch.Previous = &id
		diff(ch, prev.ID, rows, run.ID, current)
	}

	cells, err := s.WindowVerdicts(ctx, run.Team, run.Suite, run.Lane, flakyWindow(cfg), run.ID)
	if err != nil {
		return err
	}
	conf := map[report.CaseKey]float64{}
	for _, c := range rep.Cases {
		conf[report.CaseKey{Skill: c.Skill, Case: c.Case, Agent: c.Agent}] = c.Confidence
	}
	labels := assessWith(run, cells, current, cfg, conf)
	marks := map[report.CaseKey]*report.CaseFlaky{}
	for _, a := range labels {
		if a.Label != flaky.Flaky {
			continue
		}
		ev := Evidence(a.Evidence)
		ch.Flaky = append(ch.Flaky, report.FlakyCell{Skill: a.Cell.Skill, Case: a.Cell.Case, Agent: a.Cell.Agent, Model: a.Cell.Model, Evidence: ev})
		k := report.CaseKey{Skill: a.Cell.Skill, Case: a.Cell.Case, Agent: a.Cell.Agent}
		if marks[k] == nil {
			marks[k] = &report.CaseFlaky{Model: a.Cell.Model, Runs: a.Evidence.Runs, Decided: a.Evidence.Decided,
				Flips: a.Evidence.Flips, FlipRate: a.Evidence.FlipRate, PassRate: a.Evidence.PassRate, Evidence: ev}
		}
	}
	for i := range rep.Cases {
		c := &rep.Cases[i]
		if c.Arm == "" || c.Arm == report.ArmWithSkill {
			c.Flaky = marks[report.CaseKey{Skill: c.Skill, Case: c.Case, Agent: c.Agent}]
		}
	}
	rep.Changes = ch
	return nil
}

// diff fills the case-level lists and the paired statistics.
func diff(ch *report.Changes, prevID string, prev []history.Result, curID string, cur []history.Result) {
	a := comparison.Side{Label: "run " + prevID, Run: prevID, Results: records(prev)}
	b := comparison.Side{Label: "run " + curID, Run: curID, Results: records(cur)}
	r, err := comparison.Compare(a, b, comparison.Options{})
	claim := true
	var refused *comparison.RefusalError
	if errors.As(err, &refused) {
		// The runs differ in a model, the judge or a case's definition: the case-level diff
		// still says what changed, but a difference in pass rate could come from either, so
		// no statistics are claimed.
		blank(a.Results)
		blank(b.Results)
		r, err = comparison.Compare(a, b, comparison.Options{})
		ch.Note = "no statistics: the runs differ in " + strings.Join(refused.Keys(), ", ")
		claim = false
	}
	if err != nil {
		ch.Note = "not compared: " + err.Error()
		return
	}
	conv := func(cs []comparison.CaseChange) []report.ChangedCase {
		out := make([]report.ChangedCase, len(cs))
		for i, c := range cs {
			out[i] = report.ChangedCase{Skill: c.Skill, Case: c.Case, Previous: c.A, Current: c.B, FlippedEpochs: c.FlippedEpochs}
		}
		return out
	}
	ch.Agents = agentChanges(prev, cur)
	ch.NewlyFailing, ch.Fixed, ch.StillFailing = conv(r.Changes.NewlyFailing), conv(r.Changes.Fixed), conv(r.Changes.StillFailing)
	ch.New, ch.Removed = conv(r.Changes.New), conv(r.Changes.Removed)
	if o := r.Comparison.Overall; claim && o.Cases > 0 && o.Tested {
		ch.Stats = &report.ChangeStats{Cases: o.Cases, PassRatePrevious: o.A.PassRate, PassRateCurrent: o.B.PassRate,
			Delta: o.Delta, Interval: [2]float64{o.Interval.Lo, o.Interval.Hi}, P: o.P, Significant: o.Significant, Test: o.Test}
	}
}

// maxAgentVersions bounds the versions an agent's change names per run.
const maxAgentVersions = 4

// agentChanges are the agents whose CLI versions (of their with_skill results) differ between
// the runs. An agent with no version in either run (the built-in agent, results stored before
// versions were) claims nothing: unknown is not a change.
func agentChanges(prev, cur []history.Result) []report.AgentChange {
	versions := func(rows []history.Result) map[string][]string {
		out := map[string][]string{}
		for _, r := range rows {
			if (r.Arm != "" && r.Arm != comparison.WithSkill) || r.AgentVersion == "" {
				continue
			}
			if vs := out[r.Agent]; len(vs) < maxAgentVersions && !slices.Contains(vs, r.AgentVersion) {
				out[r.Agent] = append(vs, r.AgentVersion)
			}
		}
		for _, vs := range out {
			slices.Sort(vs)
		}
		return out
	}
	before, after := versions(prev), versions(cur)
	var out []report.AgentChange
	for _, agent := range slices.Sorted(maps.Keys(after)) {
		if p, ok := before[agent]; ok && !slices.Equal(p, after[agent]) {
			out = append(out, report.AgentChange{Agent: agent, Previous: p, Current: after[agent]})
		}
	}
	return out
}

// blank forgets what the configuration check compares, for a diff that claims no statistics.
// The records' keys are shared: each gets a blank one.
func blank(rs []comparison.Record) {
	var keys comparison.Keys
	for i := range rs {
		rs[i].RecordKey = keys.Key(comparison.RecordKey{Skill: rs[i].Skill, Case: rs[i].Case, Agent: rs[i].Agent})
	}
}

// records keeps of history rows the with_skill ones, as a comparison reads them.
func records(rows []history.Result) []comparison.Record {
	out := make([]comparison.Record, 0, len(rows))
	var keys comparison.Keys
	for _, r := range rows {
		if r.Arm != "" && r.Arm != comparison.WithSkill {
			continue
		}
		key := keys.Key(comparison.RecordKey{Skill: r.Skill, Case: r.Case, Agent: r.Agent, Model: r.Model, JudgeModel: r.JudgeModel, CaseDigest: r.CaseDigest})
		out = append(out, comparison.Record{RecordKey: key, Epoch: int32(r.Epoch),
			Verdict: verdictOf(r.Verdict), Tokens: r.PromptTokens + r.CompletionTokens, Cost: r.Cost, DurationMS: r.DurationMS})
	}
	return out
}

func verdictOf(name string) pb.Verdict {
	return pb.Verdict(pb.Verdict_value["VERDICT_"+strings.ToUpper(name)])
}

func flakyWindow(cfg flaky.Config) int {
	if cfg.Window > 0 {
		return cfg.Window
	}
	return flaky.DefaultConfig().Window
}

// cellHistory is one cell's runs, newest first as the store returns them.
type cellHistory struct {
	cell flaky.Cell
	runs []flaky.Run // newest first while gathering
}

// assessWith labels every cell of the current run: the stored window plus the run itself as
// the newest run. Cells the current run does not have are not labelled: the report is about
// this run's cases.
func assessWith(run Run, cells []history.Cell, current []history.Result, cfg flaky.Config, conf map[report.CaseKey]float64) []flaky.Assessment {
	type key struct{ skill, cs, agent, model string }
	byKey := map[key]*cellHistory{}
	var order []key
	for _, r := range current {
		if r.Arm != "" && r.Arm != comparison.WithSkill {
			continue
		}
		k := key{r.Skill, r.Case, r.Agent, r.Model}
		h := byKey[k]
		if h == nil {
			h = &cellHistory{cell: flaky.Cell{Suite: run.Suite, Skill: r.Skill, Case: r.Case, Agent: r.Agent, Model: r.Model},
				runs: []flaky.Run{{ID: run.ID, Time: run.Created}}}
			byKey[k] = h
			order = append(order, k)
		}
		h.runs[0].Epochs = append(h.runs[0].Epochs, flaky.Epoch{Verdict: flaky.Verdict(r.Verdict), Class: r.ReasonClass})
	}
	for _, c := range cells {
		if c.Arm != comparison.WithSkill {
			continue
		}
		if h := byKey[key{c.Skill, c.Case, c.Agent, c.Model}]; h != nil {
			h.runs = appendVerdicts(h.runs, c.Verdicts)
		}
	}
	slices.SortFunc(order, func(a, b key) int {
		return cmp.Or(strings.Compare(a.skill, b.skill), strings.Compare(a.cs, b.cs), strings.Compare(a.agent, b.agent), strings.Compare(a.model, b.model))
	})
	out := make([]flaky.Assessment, 0, len(order))
	for _, k := range order {
		h := byKey[k]
		slices.Reverse(h.runs)
		out = append(out, replay(flaky.History{Cell: h.cell, Runs: h.runs, Confidence: conf[report.CaseKey{Skill: k.skill, Case: k.cs, Agent: k.agent}]}, cfg))
	}
	return out
}

// appendVerdicts adds a cell's stored verdicts (newest run first, epochs in order) as runs.
func appendVerdicts(runs []flaky.Run, vs []history.CellVerdict) []flaky.Run {
	for _, v := range vs {
		if n := len(runs); n == 0 || runs[n-1].ID != v.RunID {
			runs = append(runs, flaky.Run{ID: v.RunID, Time: v.RunCreated})
		}
		last := &runs[len(runs)-1]
		last.Epochs = append(last.Epochs, flaky.Epoch{Verdict: flaky.Verdict(v.Verdict), Class: v.ReasonClass})
	}
	return runs
}

// replay assesses h (oldest run first) with the label its window without the newest run gets,
// computed the same way from the oldest run on: the hysteresis without a stored label.
func replay(h flaky.History, cfg flaky.Config) flaky.Assessment {
	var (
		prev flaky.Label
		a    flaky.Assessment
	)
	all := h.Runs
	for i := 1; i <= len(all); i++ {
		h.Runs = all[:i]
		a = flaky.Assess(h, prev, cfg)
		prev = a.Label
	}
	if len(all) == 0 {
		a = flaky.Assess(h, "", cfg)
	}
	return a
}

// Evidence is a label's evidence in one line: flaky.Assess's reason, which names the rule
// that decided, the decided runs' outcomes, the flips, the pass rate with its interval and the
// infrastructure failures left out.
func Evidence(ev flaky.Evidence) string { return ev.Reason }
