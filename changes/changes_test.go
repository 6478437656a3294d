package changes

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/flaky"
	"github.com/skillfleet/skillfleet/history"
	"github.com/skillfleet/skillfleet/internal/testutil"
	"github.com/skillfleet/skillfleet/report"
)

var t0 = time.Date(2026, 5, 1, 2, 0, 0, 0, time.UTC)

// verdicts of one case in one run: one letter per epoch. P passed, F failed, S errored for a
// sandbox failure (infrastructure), E errored for another reason, - absent from the run.
type step map[string]string

// sequence is a history in the making: every run is reported as the next report would be
// (Annotate against what is stored), then stored as completed.
type sequence struct {
	t     *testing.T
	store *history.Store
	// n counts the runs of the store, whichever sequence ran them: ids and days follow it.
	n    *int
	cfg  flaky.Config
	team string
	// version is the CLI version the runs' results name ("" none).
	version string
}

func newSequence(t *testing.T) *sequence {
	t.Helper()
	s, err := history.Open(context.Background(), history.Options{Target: filepath.Join(t.TempDir(), "h.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &sequence{t: t, store: s, n: new(int)}
}

// of is a sequence of team's runs in the same store, its runs interleaved with q's.
func (q *sequence) of(team string) *sequence {
	o := *q
	o.team = team
	return &o
}

// run reports the next run of the team's suite "nightly" with the cases' verdicts, and stores
// it.
func (q *sequence) run(cases step) report.Report {
	q.t.Helper()
	*q.n++
	id := fmt.Sprintf("run-%03d", *q.n)
	created := t0.Add(time.Duration(*q.n) * 24 * time.Hour)
	var rows []history.Result
	rep := report.Report{Run: id}
	names := make([]string, 0, len(cases))
	for name := range cases {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		status := report.StatusPassed
		for e, v := range cases[name] {
			r := history.Result{RunID: id, JobID: fmt.Sprintf("%s-%d", name, e), Team: q.team, Suite: "nightly", Lane: "scheduled",
				Skill: "sk", Case: name, Agent: "builtin", Model: "m1", Arm: "with_skill", Epoch: e + 1, Attempt: 1,
				CaseDigest: "sha256:" + name, FinishedAt: created, RecordedAt: created, AgentVersion: q.version}
			switch v {
			case 'P':
				r.Verdict = "passed"
			case 'F':
				r.Verdict, r.ReasonClass = "failed", history.ClassAssertion
				status = report.StatusFailed
			case 'S':
				r.Verdict, r.ReasonClass = "errored", history.ClassSandbox
				if status == report.StatusPassed {
					status = report.StatusErrored
				}
			case 'E':
				r.Verdict, r.ReasonClass = "errored", history.ClassOther
				if status == report.StatusPassed {
					status = report.StatusErrored
				}
			}
			rows = append(rows, r)
		}
		rep.Cases = append(rep.Cases, report.Case{Skill: "sk", Case: name, Agent: "builtin", Status: status, Epochs: len(cases[name]), Confidence: 1})
	}
	run := Run{ID: id, Team: q.team, Suite: "nightly", Lane: "scheduled", Created: created}
	if err := Annotate(context.Background(), q.store, run, rows, &rep, q.cfg); err != nil {
		q.t.Fatal(err)
	}
	ctx := context.Background()
	if err := q.store.WriteResults(ctx, rows); err != nil {
		q.t.Fatal(err)
	}
	if err := q.store.WriteRun(ctx, history.Run{ID: id, Team: q.team, Suite: "nightly", Lane: "scheduled", State: "completed",
		CreatedAt: created, FinishedAt: created.Add(time.Hour)}); err != nil {
		q.t.Fatal(err)
	}
	return rep
}

func names(cs []report.ChangedCase) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Case)
	}
	return out
}

func TestWhatChanged(t *testing.T) {
	q := newSequence(t)
	first := q.run(step{"a": "P", "b": "P", "gone": "P"})
	if first.Changes == nil || first.Changes.Previous != nil || !strings.Contains(first.Changes.Note, "no previous completed run") {
		t.Fatalf("first run's section: %+v", first.Changes)
	}
	second := q.run(step{"a": "F", "b": "P", "new": "P"})
	third := q.run(step{"a": "P", "b": "PP", "new": "F"})
	tests := []struct {
		name                                              string
		rep                                               report.Report
		prev                                              string
		newlyFailing, fixed, stillFailing, added, removed []string
		paired                                            int
	}{
		{"a case breaks, one is added, one removed", second, "run-001", []string{"a [builtin]"}, nil, nil, []string{"new [builtin]"}, []string{"gone [builtin]"}, 2},
		{"the broken case is fixed, the new one breaks", third, "run-002", []string{"new [builtin]"}, []string{"a [builtin]"}, nil, nil, nil, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := tt.rep.Changes
			if ch == nil || ch.Previous == nil || *ch.Previous != tt.prev {
				t.Fatalf("section %+v, want previous %s", ch, tt.prev)
			}
			for _, l := range []struct {
				what      string
				got, want []string
			}{{"newly failing", names(ch.NewlyFailing), tt.newlyFailing}, {"fixed", names(ch.Fixed), tt.fixed},
				{"still failing", names(ch.StillFailing), tt.stillFailing}, {"new", names(ch.New), tt.added}, {"removed", names(ch.Removed), tt.removed}} {
				if !slices.Equal(l.got, l.want) {
					t.Errorf("%s: %v, want %v", l.what, l.got, l.want)
				}
			}
			if ch.Stats == nil || ch.Stats.Cases != tt.paired {
				t.Errorf("paired statistics %+v, want %d paired cases", ch.Stats, tt.paired)
			}
		})
	}
}

// TestAgentChanged: when a command agent's CLI version differs from the previous run's, what
// changed says so (in JSON and text), beside the cases it may explain; the same version, or a
// run that named none (results stored before versions were), claims nothing.
func TestAgentChanged(t *testing.T) {
	q := newSequence(t)
	q.version = "claude-cli/2.1.240"
	q.run(step{"a": "P", "b": "P"})
	same := q.run(step{"a": "P", "b": "P"})
	q.version = "claude-cli/2.1.241"
	bumped := q.run(step{"a": "F", "b": "P"})
	q.version = ""
	unknown := q.run(step{"a": "F", "b": "P"})
	if a := same.Changes.Agents; a != nil {
		t.Errorf("same version: agents changed %+v", a)
	}
	want := []report.AgentChange{{Agent: "builtin", Previous: []string{"claude-cli/2.1.240"}, Current: []string{"claude-cli/2.1.241"}}}
	if got := bumped.Changes.Agents; len(got) != 1 || got[0].Agent != want[0].Agent || !slices.Equal(got[0].Previous, want[0].Previous) || !slices.Equal(got[0].Current, want[0].Current) {
		t.Errorf("agents changed %+v, want %+v", got, want)
	}
	var buf bytes.Buffer
	if err := report.WriteText(&buf, bumped, report.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "agent builtin changed: claude-cli/2.1.240 → claude-cli/2.1.241") {
		t.Errorf("the text does not say the agent changed:\n%s", buf.String())
	}
	if p := report.ChangesProperties(bumped.Changes); !slices.Contains(p, report.Property{Name: "changes.agents", Value: "builtin: claude-cli/2.1.240 → claude-cli/2.1.241"}) {
		t.Errorf("JUnit properties %+v lack changes.agents", p)
	}
	if a := unknown.Changes.Agents; a != nil {
		t.Errorf("no version named: agents changed %+v", a)
	}
}

// TestFlakyLabels: a case that flips is labelled flaky only once it has the minimum of decided
// runs, never because of infrastructure failures, and the label reaches the report's case.
func TestFlakyLabels(t *testing.T) {
	q := newSequence(t)
	flips := "PFPFPFPF"
	infra := "PSPSPSPSPSPS"
	for i := range len(infra) {
		st := step{"infra": infra[i : i+1], "steady": "P"}
		if i < len(flips) {
			st["flips"] = flips[i : i+1]
		}
		rep := q.run(st)
		flakyCases := map[string]bool{}
		for _, c := range rep.Cases {
			if c.Flaky != nil {
				flakyCases[c.Case] = true
			}
		}
		for _, f := range rep.Changes.Flaky {
			if !flakyCases[f.Case] || f.Model != "m1" || f.Evidence == "" {
				t.Errorf("run %d: flaky cell %+v not marked on its case", i+1, f)
			}
		}
		// Five decided runs are the minimum; the flips case is decided in every run it has.
		if want := i+1 >= flaky.DefaultConfig().MinRuns && i < len(flips); flakyCases["flips"] != want {
			t.Errorf("run %d: flips flaky = %v, want %v", i+1, flakyCases["flips"], want)
		}
		if flakyCases["infra"] || flakyCases["steady"] {
			t.Errorf("run %d: infrastructure failures or a steady pass labelled flaky: %v", i+1, flakyCases)
		}
	}
	cells, err := FlakyCells(context.Background(), q.store, "", "nightly", "scheduled", flaky.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 1 || cells[0].Case != "flips" || !strings.Contains(cells[0].Evidence, "decided runs") {
		t.Errorf("flaky list %+v, want the flips case with its evidence", cells)
	}
	if other, err := FlakyCells(context.Background(), q.store, "", "other-suite", "", flaky.Config{}); err != nil || len(other) != 0 {
		t.Errorf("another suite's flaky list: %+v, %v", other, err)
	}
}

// TestOtherTeamsAreNotRead: another team's runs of the same suite name, between and after
// this team's, change neither what changed in this team's next run nor its flaky labels;
// each team's flaky list is its own.
func TestOtherTeamsAreNotRead(t *testing.T) {
	q := newSequence(t)
	other := q.of("teamB")
	q.run(step{"a": "P", "b": "P"}) // run-001
	var last report.Report
	for _, v := range "PFPFPF" { // run-002 … run-007: teamB's a flips, its b fails
		last = other.run(step{"a": string(v), "b": "F"})
	}
	if ch := last.Changes; ch == nil || ch.Previous == nil || *ch.Previous != "run-006" || len(ch.Flaky) != 1 || ch.Flaky[0].Case != "a" {
		t.Fatalf("teamB's own report: %+v, want run-006 before it and its case a flaky", ch)
	}
	rep := q.run(step{"a": "P", "b": "P"}) // run-008
	ch := rep.Changes
	if ch == nil || ch.Previous == nil || *ch.Previous != "run-001" {
		t.Fatalf("what changed: %+v, want run-001 (this team's) before it", ch)
	}
	if len(ch.NewlyFailing)+len(ch.Fixed)+len(ch.StillFailing)+len(ch.New)+len(ch.Removed) != 0 || ch.Stats == nil || ch.Stats.Cases != 2 {
		t.Errorf("what changed against this team's run: fixed %v, newly failing %v, stats %+v; want nothing changed in 2 cases",
			names(ch.Fixed), names(ch.NewlyFailing), ch.Stats)
	}
	if len(ch.Flaky) != 0 {
		t.Errorf("flaky from another team's runs: %+v", ch.Flaky)
	}
	for _, c := range rep.Cases {
		if c.Flaky != nil {
			t.Errorf("case %s marked flaky from another team's runs: %+v", c.Case, c.Flaky)
		}
	}
	tests := []struct {
		team string
		want []string
	}{
		{"", nil},
		{"default", nil},
		{"teamB", []string{"a"}},
		{"teamC", nil},
	}
	for _, tt := range tests {
		cells, err := FlakyCells(context.Background(), q.store, tt.team, "nightly", "", flaky.Config{})
		var got []string
		for _, c := range cells {
			got = append(got, c.Case)
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("team %q's flaky list %v, %v; want %v", tt.team, got, err, tt.want)
		}
	}
}

// TestErroredIsNotInfra: an errored epoch of a reason that is not the infrastructure's is a
// failure, so flipping through such errors is flaky.
func TestErroredIsNotInfra(t *testing.T) {
	q := newSequence(t)
	var rep report.Report
	for _, v := range "PEPEPEP" {
		rep = q.run(step{"c": string(v)})
	}
	if rep.Cases[0].Flaky == nil {
		t.Errorf("a case flipping between passes and non-infrastructure errors is not flaky: %+v", rep.Changes)
	}
}

func TestQuarantine(t *testing.T) {
	q := newSequence(t)
	var rep report.Report
	for _, v := range "PFPFPF" {
		rep = q.run(step{"flips": string(v), "broken": "F", "fine": "P"})
	}
	listed, err := ParseQuarantineFile(strings.NewReader("# known broken\nsk/broken@builtin\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		policy  flaky.Policy
		failing bool
		marks   map[string]string
	}{
		{"none", flaky.Policy{}, true, map[string]string{}},
		{"flaky only", flaky.Policy{Flaky: true}, true, map[string]string{"flips": "flaky"}},
		{"flaky and the list", flaky.Policy{Flaky: true, Cells: listed}, false, map[string]string{"flips": "flaky", "broken": "listed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rep
			r.Cases = slices.Clone(rep.Cases)
			Quarantine(&r, "nightly", flaky.NewQuarantine(tt.policy))
			got := map[string]string{}
			for _, c := range r.Cases {
				if c.Quarantined != "" {
					got[c.Case] = c.Quarantined
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.marks) || r.Summary.Failing() != tt.failing {
				t.Errorf("marks %v failing %v (summary %+v), want %v %v", got, r.Summary.Failing(), r.Summary, tt.marks, tt.failing)
			}
		})
	}
}

func TestParseQuarantineFile(t *testing.T) {
	tests := []struct {
		in   string
		want []flaky.Cell
		err  bool
	}{
		{"pdf/fills form\n", []flaky.Cell{{Skill: "pdf", Case: "fills form"}}, false},
		{"pdf/a/b@claude\n# c\n", []flaky.Cell{{Skill: "pdf", Case: "a/b", Agent: "claude"}}, false},
		{"pdf\n", nil, true},
		{"pdf/@agent\n", nil, true},
		{"/case\n", nil, true},
	}
	for _, tt := range tests {
		got, err := ParseQuarantineFile(strings.NewReader(tt.in))
		if (err != nil) != tt.err || !slices.Equal(got, tt.want) {
			t.Errorf("ParseQuarantineFile(%q) = %+v, %v; want %+v (error %v)", tt.in, got, err, tt.want, tt.err)
		}
	}
}

// TestReportGoldens renders a report of the sequence's last run in the three formats.
func TestReportGoldens(t *testing.T) {
	q := newSequence(t)
	var rep report.Report
	for i, v := range "PFPFPF" {
		st := step{"flips": string(v), "fine": "P"}
		if i == 5 {
			st["fine"] = "F"
			st["added"] = "P"
		}
		rep = q.run(st)
	}
	Quarantine(&rep, "nightly", flaky.NewQuarantine(flaky.Policy{Flaky: true}))
	for _, f := range []struct {
		file  string
		write func(*bytes.Buffer) error
	}{
		{"report.txt", func(b *bytes.Buffer) error { return report.WriteText(b, rep, report.TextOptions{}) }},
		{"report.json", func(b *bytes.Buffer) error { return report.WriteJSON(b, rep) }},
		{"report.junit.xml", func(b *bytes.Buffer) error { return report.WriteJUnit(b, rep) }},
	} {
		var b bytes.Buffer
		if err := f.write(&b); err != nil {
			t.Fatal(err)
		}
		testutil.Golden(t, filepath.Join("testdata", f.file), b.Bytes())
	}
}

// TestPassRates: a case's epoch record over the window, infrastructure failures left out:
// "flips" passed 4 of its 8 decided epochs, "steady" 8 of 8, "infra" 6 of 6 (its six sandbox
// failures are not decided).
func TestPassRates(t *testing.T) {
	q := newSequence(t)
	flips, infra := "PFPFPFPF", "PSPSPSPSPSPS"
	for i := range len(infra) {
		st := step{"infra": infra[i : i+1]}
		if i < len(flips) {
			st["flips"], st["steady"] = flips[i:i+1], "P"
		}
		q.run(st)
	}
	rates, err := PassRates(context.Background(), q.store, "", "nightly", "", flaky.Config{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]int{}
	for _, r := range rates {
		got[r.Case] = [2]int{r.Passed, r.Decided}
	}
	want := map[string][2]int{"flips": {4, 8}, "steady": {8, 8}, "infra": {6, 6}}
	if len(got) != len(want) {
		t.Errorf("rates %v, want %v", got, want)
	}
	for c, w := range want {
		if got[c] != w {
			t.Errorf("%s: %v, want %v", c, got[c], w)
		}
	}
	if other, err := PassRates(context.Background(), q.store, "", "other-suite", "", flaky.Config{}); err != nil || len(other) != 0 {
		t.Errorf("another suite's rates: %+v, %v", other, err)
	}
}
