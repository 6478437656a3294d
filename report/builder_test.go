package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	skillfleetv1 "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

const testRun = "r-test"

// res is a result for epoch of skill/case with the given verdict, an assertion result to
// match (one passing assertion for a pass, one failing for a fail) and job id
// "<skill>/<case>#<epoch>".
func res(skill, cs string, epoch int, v skillfleetv1.Verdict, opts ...func(*skillfleetv1.Result)) *skillfleetv1.Result {
	r := &skillfleetv1.Result{
		JobId: fmt.Sprintf("%s/%s#%d", skill, cs, epoch), RunId: testRun, Skill: skill, CaseName: cs,
		Epoch: int32(epoch), Verdict: v, Attempt: 1,
		Timings: &skillfleetv1.Timings{QueuedMs: 5000, SandboxStartMs: 100, ExecutionMs: 900, TotalMs: 6000},
	}
	switch v {
	case vPassed:
		r.Assertions = []*skillfleetv1.AssertionResult{{Type: "output_contains", Passed: true, Expected: "hello", Actual: "hello there", Message: "output contains \"hello\""}}
	case vFailed:
		r.Assertions = []*skillfleetv1.AssertionResult{{Type: "output_contains", Expected: "hello", Actual: "goodbye", Message: "output does not contain \"hello\""}}
		r.Output = fmt.Sprintf("goodbye from epoch %d", epoch)
	case vErrored:
		r.Reason = fmt.Sprintf("sandbox failed to start (epoch %d)", epoch)
	case vTimedOut:
		r.Reason = "killed after 60s"
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

func withJob(id string) func(*skillfleetv1.Result) {
	return func(r *skillfleetv1.Result) { r.JobId = id }
}

func plan(skill, cs string, epochs int, conf float64) PlannedCase {
	return PlannedCase{Skill: skill, Case: cs, Kind: skillfleetv1.CaseKind_CASE_KIND_PROMPT, Epochs: epochs, Confidence: conf, File: skill + "/test.cases", Line: 3}
}

// TestBuilderVerdicts feeds whole result sequences through a Builder.
func TestBuilderVerdicts(t *testing.T) {
	type step struct {
		epoch int
		v     skillfleetv1.Verdict
	}
	seq := func(spec string) []step {
		// "PPF.E" -> epoch 1 passed, 2 passed, 3 failed, 4 no result, 5 errored
		var out []step
		for i, ch := range spec {
			v := map[rune]skillfleetv1.Verdict{'P': vPassed, 'F': vFailed, 'E': vErrored, 'T': vTimedOut, 'S': vSkipped}[ch]
			if ch != '.' {
				out = append(out, step{i + 1, v})
			}
		}
		return out
	}
	tests := []struct {
		name       string
		epochs     int
		conf       float64
		results    string
		skip       string // non-empty: Skip(skip) after the results
		wantStatus string
		wantReason string // substring
	}{
		{"one epoch passed", 1, 0, "P", "", StatusPassed, ""},
		{"one epoch failed", 1, 0, "F", "", StatusFailed, ""},
		{"one epoch errored", 1, 0, "E", "", StatusErrored, "sandbox failed to start"},
		{"one epoch timed out", 1, 0, "T", "", StatusTimedOut, "killed after 60s"},
		{"10 @0.9: 9 passed 1 failed", 10, 0.9, "PPPPFPPPPP", "", StatusPassed, "9/10 epochs passed, 1 failed; 9 needed; first epoch not passing: 5 (failed)"},
		{"10 @0.9: 8 passed 2 failed", 10, 0.9, "PPFPPPPFPP", "", StatusFailed, "8/10 epochs passed, 2 failed; 9 needed"},
		{"10 @0.9: 8 passed 1 failed 1 errored", 10, 0.9, "PPFPPPPEPP", "", StatusErrored, "epoch 8 errored: sandbox failed to start (epoch 8)"},
		{"10 @0.9: 7 passed 2 failed 1 errored", 10, 0.9, "PFFPPPPEPP", "", StatusFailed, "7/10 epochs passed, 2 failed, 1 errored; 9 needed"},
		{"10 @0.9: 8 passed 1 failed 1 timed out", 10, 0.9, "PPPPPPPPFT", "", StatusTimedOut, "epoch 10 timed_out: killed after 60s"},
		{"still running", 10, 0.9, "PPPPPPPP", "", StatusPending, "8 of 10 epochs reported"},
		{"decided early: passed", 10, 0.9, "PPPPPPPPP", "", StatusPassed, ""},
		{"decided early: failed", 10, 0.9, "FF", "", StatusFailed, "0/10 epochs passed, 2 failed; 9 needed"},
		{"cancelled before any result", 3, 0, "", "run cancelled by alice", StatusSkipped, "run cancelled by alice"},
		{"single epoch cancelled", 1, 0, "", "run deadline of 2h exceeded", StatusSkipped, "run deadline of 2h exceeded"},
		{"cancelled while open", 10, 0.9, "PPPPPPPPF", "run cancelled by alice", StatusSkipped, "epochs not run: run cancelled by alice"},
		{"cancelled with an errored epoch", 10, 0.9, "PPPPPPPPE", "run cancelled", StatusErrored, "epoch 9 errored"},
		{"cancelled after a certain pass stays passed", 10, 0.9, "PPPPPPPPP", "run cancelled", StatusPassed, ""},
		{"cancelled after a certain fail stays failed", 10, 0.9, "FF", "run cancelled", StatusFailed, ""},
		{"cancelled after everything was in changes nothing", 2, 0, "PP", "run cancelled", StatusPassed, ""},
		{"worker skipped the only epoch", 1, 0, "S", "", StatusSkipped, "no reason given"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBuilder(testRun, []PlannedCase{plan("s", "c", tt.epochs, tt.conf)})
			for _, st := range seq(tt.results) {
				if !b.Add(res("s", "c", st.epoch, st.v)) {
					t.Fatalf("result for epoch %d not accepted", st.epoch)
				}
			}
			if tt.skip != "" {
				b.Skip(tt.skip)
			}
			c, ok := b.Case(CaseKey{Skill: "s", Case: "c"})
			if !ok {
				t.Fatal("case not found")
			}
			if c.Status != tt.wantStatus {
				t.Errorf("status = %s, want %s (reason %q)", c.Status, tt.wantStatus, c.Reason)
			}
			if !strings.Contains(c.Reason, tt.wantReason) || (tt.wantReason == "" && c.Reason != "" && tt.wantStatus == StatusPassed) {
				t.Errorf("reason = %q, want it to contain %q", c.Reason, tt.wantReason)
			}
			if c.Status != StatusPassed && c.PassedEpochs >= c.RequiredPasses {
				t.Errorf("enough epochs passed but status is %s", c.Status)
			}
			rep := b.Report()
			if got := rep.Summary.Total; got != 1 {
				t.Errorf("summary total = %d", got)
			}
			counts := b.Counts()
			want := map[string]int32{StatusPassed: counts.Passed, StatusFailed: counts.Failed, StatusErrored: counts.Errored, StatusTimedOut: counts.TimedOut, StatusSkipped: counts.Skipped}
			if n, ok := want[tt.wantStatus]; ok && n != 1 {
				t.Errorf("Counts() = %v, want one %s", counts, tt.wantStatus)
			}
			if sum := counts.Passed + counts.Failed + counts.Errored + counts.TimedOut + counts.Skipped; tt.wantStatus == StatusPending && sum != 0 {
				t.Errorf("Counts() = %v for a pending case", counts)
			}
		})
	}
}

func TestBuilderIgnoresWhatIsNotInThePlan(t *testing.T) {
	b := NewBuilder(testRun, []PlannedCase{plan("s", "c", 2, 0)})
	tests := []struct {
		name string
		r    *skillfleetv1.Result
		want bool
	}{
		{"nil", nil, false},
		{"no job id", res("s", "c", 1, vPassed, withJob("")), false},
		{"unknown case", res("s", "other", 1, vPassed), false},
		{"unknown skill", res("t", "c", 1, vPassed), false},
		{"another run", res("s", "c", 1, vPassed, func(r *skillfleetv1.Result) { r.RunId = "r-other" }), false},
		{"epoch 0", res("s", "c", 0, vPassed), false},
		{"epoch beyond runs", res("s", "c", 3, vPassed), false},
		{"first result for epoch 1", res("s", "c", 1, vPassed), true},
		{"redelivered duplicate of epoch 1", res("s", "c", 1, vFailed), false},
		{"duplicate again", res("s", "c", 1, vPassed, func(r *skillfleetv1.Result) { r.Attempt = 2 }), false},
		{"epoch 2 without run id", res("s", "c", 2, vPassed, func(r *skillfleetv1.Result) { r.RunId = "" }), true},
	}
	for _, tt := range tests {
		if got := b.Add(tt.r); got != tt.want {
			t.Errorf("%s: Add = %v, want %v", tt.name, got, tt.want)
		}
	}
	if b.JobsDone() != 2 || b.JobsTotal() != 2 || !b.Done() {
		t.Errorf("JobsDone %d JobsTotal %d Done %v, want 2 2 true", b.JobsDone(), b.JobsTotal(), b.Done())
	}
	c, _ := b.Case(CaseKey{Skill: "s", Case: "c"})
	if c.Status != StatusPassed || c.PassedEpochs != 2 || c.FailedEpochs != 0 {
		t.Errorf("case = %s %d passed %d failed; the duplicate's fail must not count", c.Status, c.PassedEpochs, c.FailedEpochs)
	}
	if c.Attempts != 1 {
		t.Errorf("attempts = %d, want 1: the duplicate's attempt is not counted", c.Attempts)
	}
}

// TestBuilderConflictingJobs: two different jobs for one epoch (e.g. several agents, which
// results cannot tell apart) make the case errored instead of computing a verdict.
func TestBuilderConflictingJobs(t *testing.T) {
	b := NewBuilder(testRun, []PlannedCase{plan("s", "c", 1, 0)})
	if !b.Add(res("s", "c", 1, vPassed, withJob("job-agent-a"))) {
		t.Fatal("first result refused")
	}
	if b.Add(res("s", "c", 1, vFailed, withJob("job-agent-b"))) {
		t.Fatal("a second job for the same epoch was accepted")
	}
	c, _ := b.Case(CaseKey{Skill: "s", Case: "c"})
	if c.Status != StatusErrored || !strings.Contains(c.Reason, "two different jobs reported epoch 1") {
		t.Errorf("status %s reason %q, want errored naming the conflict", c.Status, c.Reason)
	}
	if got := b.Counts(); got.Errored != 1 || got.Passed != 0 {
		t.Errorf("Counts() = %v", got)
	}
}

// TestBuilderNeverAFalsePass: results that claim a pass their assertions do not back count
// as errored.
func TestBuilderNeverAFalsePass(t *testing.T) {
	tests := []struct {
		name   string
		r      *skillfleetv1.Result
		reason string
	}{
		{"passed without assertions", res("s", "c", 1, vPassed, func(r *skillfleetv1.Result) { r.Assertions = nil }), "without any assertion result"},
		{"passed with a failing assertion", res("s", "c", 1, vPassed, func(r *skillfleetv1.Result) {
			r.Assertions = append(r.Assertions, &skillfleetv1.AssertionResult{Type: "exit_code", Passed: false})
		}), `assertion "exit_code" did not pass`},
		{"passed with an errored assertion", res("s", "c", 1, vPassed, func(r *skillfleetv1.Result) {
			r.Assertions = append(r.Assertions, &skillfleetv1.AssertionResult{Type: "semantic_match", Passed: true, Errored: true})
		}), `assertion "semantic_match" did not pass`},
		{"no verdict", res("s", "c", 1, vPending), "no usable verdict"},
		{"a verdict from the future", res("s", "c", 1, skillfleetv1.Verdict(42)), "no usable verdict"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBuilder(testRun, []PlannedCase{plan("s", "c", 1, 0)})
			b.Add(tt.r)
			c, _ := b.Case(CaseKey{Skill: "s", Case: "c"})
			if c.Status != StatusErrored || !strings.Contains(c.Reason, tt.reason) {
				t.Errorf("status %s reason %q, want errored with %q", c.Status, c.Reason, tt.reason)
			}
		})
	}
}

func TestBuilderSkip(t *testing.T) {
	b := NewBuilder(testRun, []PlannedCase{
		plan("s", "done", 1, 0), plan("s", "open", 3, 0), plan("s", "untouched", 2, 0),
	})
	b.Add(res("s", "done", 1, vPassed))
	b.Add(res("s", "open", 1, vPassed))
	b.Skip("run cancelled by alice")
	b.Skip("second reason is ignored")
	if b.Add(res("s", "open", 2, vPassed)) {
		t.Error("a result after Skip was accepted")
	}
	if b.Done() {
		t.Error("Done after Skip with jobs missing")
	}
	rep := b.Report()
	got := map[string]Case{}
	for _, c := range rep.Cases {
		got[c.Case] = c
	}
	if got["done"].Status != StatusPassed || got["open"].Status != StatusSkipped || got["untouched"].Status != StatusSkipped {
		t.Errorf("statuses done=%s open=%s untouched=%s", got["done"].Status, got["open"].Status, got["untouched"].Status)
	}
	if o := got["open"]; o.SkippedEpochs != 2 || o.PassedEpochs != 1 || !strings.Contains(o.Reason, "run cancelled by alice") {
		t.Errorf("open: %+v", o)
	}
	if u := got["untouched"]; u.SkippedEpochs != 2 || strings.Contains(u.Reason, "second reason") {
		t.Errorf("untouched: %+v", u)
	}
	want := Summary{Total: 3, Passed: 1, Skipped: 2}
	if rep.Summary != want {
		t.Errorf("summary = %+v, want %+v", rep.Summary, want)
	}
	if c := b.Counts(); c.Total != 3 || c.Passed != 1 || c.Skipped != 2 {
		t.Errorf("Counts() = %v", c)
	}
}

// TestBuilderEvidence: the evidence shown comes from the lowest-numbered decisive epoch,
// whatever order results arrive in, and is capped.
func TestBuilderEvidence(t *testing.T) {
	b := NewBuilder(testRun, []PlannedCase{plan("s", "c", 5, 0), plan("s", "big", 1, 0)})
	for _, e := range []int{4, 5, 2, 3, 1} {
		v := vPassed
		if e == 4 || e == 2 {
			v = vFailed
		}
		b.Add(res("s", "c", e, v))
	}
	c, _ := b.Case(CaseKey{Skill: "s", Case: "c"})
	if c.Status != StatusFailed || c.Output != "goodbye from epoch 2" {
		t.Errorf("status %s output %q, want failed with epoch 2's output", c.Status, c.Output)
	}
	if c.DurationMS != 5*1000 {
		t.Errorf("duration = %d ms, want 5000 (sum of sandbox start + execution, queue excluded)", c.DurationMS)
	}
	if c.Interval == nil || *c.Interval != Wilson(3, 5) {
		t.Errorf("interval = %v, want %v", c.Interval, Wilson(3, 5))
	}

	huge := strings.Repeat("é", 10_000) + "THE END"
	b.Add(res("s", "big", 1, vFailed, func(r *skillfleetv1.Result) {
		r.Output, r.Stdout, r.Stderr = huge, huge, huge
		r.Assertions[0].Actual = huge
		for range 100 {
			r.Assertions = append(r.Assertions, &skillfleetv1.AssertionResult{Type: "stdout_contains", Passed: true})
		}
	}))
	big, _ := b.Case(CaseKey{Skill: "s", Case: "big"})
	for name, s := range map[string]string{"output": big.Output, "stdout": big.Stdout, "stderr": big.Stderr} {
		if len(s) > maxExcerpt+64 || !strings.HasSuffix(s, "THE END") || !strings.Contains(s, "bytes omitted") {
			t.Errorf("%s: %d bytes, want a head/tail excerpt of about %d", name, len(s), maxExcerpt)
		}
	}
	if !big.OutputTruncated {
		t.Error("OutputTruncated not set")
	}
	if len(big.Assertions) != maxAssertions || big.Assertions[0].Passed {
		t.Errorf("%d assertions kept, first passed=%v; want %d with the failing one first", len(big.Assertions), big.Assertions[0].Passed, maxAssertions)
	}
	if len(big.Assertions[0].Actual) > maxField+64 {
		t.Errorf("assertion actual is %d bytes", len(big.Assertions[0].Actual))
	}
}

func TestBuilderOrderAndLiveCounts(t *testing.T) {
	b := NewBuilder(testRun, []PlannedCase{
		plan("zeta", "a", 1, 0), plan("alpha", "b", 1, 0), plan("alpha", "a", 2, 0), plan("alpha", "a", 5, 0),
	})
	if b.JobsTotal() != 4 {
		t.Errorf("JobsTotal = %d, want 4 (the duplicate planned case is taken once)", b.JobsTotal())
	}
	var names []string
	for _, c := range b.Report().Cases {
		names = append(names, c.Skill+"/"+c.Case+":"+c.Status)
	}
	if got, want := strings.Join(names, " "), "alpha/a:pending alpha/b:pending zeta/a:pending"; got != want {
		t.Errorf("order = %s, want %s", got, want)
	}
	b.Add(res("alpha", "a", 1, vFailed))
	if c := b.Counts(); c.Failed != 1 || c.Total != 3 {
		t.Errorf("after a certain fail Counts() = %v", c)
	}
	b.Add(res("alpha", "b", 1, vPassed))
	b.Add(res("zeta", "a", 1, vErrored))
	if b.Done() {
		t.Error("Done with alpha/a epoch 2 missing")
	}
	b.Add(res("alpha", "a", 2, vPassed))
	if !b.Done() {
		t.Error("not Done with every job in")
	}
	rep := b.Report()
	want := Summary{Total: 3, Passed: 1, Failed: 1, Errored: 1}
	if rep.Summary != want {
		t.Errorf("summary = %+v, want %+v", rep.Summary, want)
	}
	if c := b.Counts(); c.Passed != 1 || c.Failed != 1 || c.Errored != 1 || c.Total != 3 {
		t.Errorf("Counts() = %v", c)
	}
}

// TestBuilderConcurrentUse: the coordinator adds while its API reads; run with -race.
func TestBuilderConcurrentUse(t *testing.T) {
	planned, results := benchRun()
	b := NewBuilder("r-bench", planned[:50])
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 50 {
			b.Report()
			b.Counts()
		}
	}()
	accepted := 0
	for _, r := range results {
		if b.Add(r) {
			accepted++
		}
	}
	<-done
	if accepted != 50*100 || !b.Done() {
		t.Errorf("accepted %d results, Done %v; want 5000, true", accepted, b.Done())
	}
}

// TestBuilderUsage: model tokens and cost add up per case and per run; duplicates don't count.
func TestBuilderUsage(t *testing.T) {
	b := NewBuilder(testRun, []PlannedCase{{Skill: "s", Case: "a", Epochs: 2}, {Skill: "s", Case: "b"}})
	spend := func(p, c int64, cost float64) func(*skillfleetv1.Result) {
		return func(r *skillfleetv1.Result) {
			r.Usage = &skillfleetv1.Usage{PromptTokens: p, CompletionTokens: c, Cost: cost}
		}
	}
	b.Add(res("s", "a", 1, vPassed, spend(100, 10, 0.5)))
	b.Add(res("s", "a", 1, vPassed, spend(100, 10, 0.5))) // a redelivered duplicate
	b.Add(res("s", "a", 2, vPassed, spend(200, 20, 1)))
	b.Add(res("s", "b", 1, vPassed)) // no model use
	r := b.Report()
	if r.Usage == nil || *r.Usage != (Usage{PromptTokens: 300, CompletionTokens: 30, Cost: 1.5}) {
		t.Fatalf("run usage %+v", r.Usage)
	}
	if u := r.Cases[0].Usage; u == nil || u.PromptTokens != 300 {
		t.Fatalf("case a usage %+v", u)
	}
	if r.Cases[1].Usage != nil {
		t.Fatalf("case b spent nothing but reports %+v", r.Cases[1].Usage)
	}
}

// TestBuilderReused: a changed-only run's reused cases are counted apart from passes, say the
// run they came from, do not fail the run, and a reuse the worker could not back is errored.
func TestBuilderReused(t *testing.T) {
	reused := func(from string) func(*skillfleetv1.Result) {
		return func(r *skillfleetv1.Result) { r.ReusedFrom, r.CellDigest = from, "sha256:cell" }
	}
	b := NewBuilder(testRun, []PlannedCase{plan("s", "a", 2, 0), plan("s", "b", 1, 0), plan("s", "c", 1, 0), plan("s", "d", 1, 0)})
	b.Add(res("s", "a", 2, skillfleetv1.Verdict_VERDICT_REUSED, reused("r-old")))
	b.Add(res("s", "a", 1, skillfleetv1.Verdict_VERDICT_REUSED, reused("r-older")))
	b.Add(res("s", "b", 1, vPassed))
	b.Add(res("s", "c", 1, skillfleetv1.Verdict_VERDICT_REUSED, reused("")))
	b.Add(res("s", "d", 1, skillfleetv1.Verdict_VERDICT_REUSED, reused("r-old")))
	rep := b.Report()
	got := map[string]Case{}
	for _, c := range rep.Cases {
		got[c.Case] = c
	}
	if c := got["a"]; c.Status != StatusReused || c.ReusedEpochs != 2 || c.PassedEpochs != 0 || c.ReusedFrom != "r-older" || !strings.Contains(c.Reason, "r-older") {
		t.Errorf("case a: %+v, want reused from r-older (the lowest epoch's) with 2 reused epochs and no pass", c)
	}
	if c := got["c"]; c.Status != StatusErrored || !strings.Contains(c.Reason, "reuse without") {
		t.Errorf("case c: status %s reason %q, want a reuse naming no run errored", c.Status, c.Reason)
	}
	want := Summary{Total: 4, Passed: 1, Errored: 1, Reused: 2}
	if rep.Summary != want {
		t.Errorf("summary %+v, want %+v", rep.Summary, want)
	}
	if !rep.Summary.Failing() {
		t.Error("a run with an errored case is not failing")
	}
	if (Summary{Total: 3, Passed: 1, Reused: 2}).Failing() {
		t.Error("a run whose cases passed or were reused fails")
	}
	if n := b.Counts(); n.GetReused() != 2 || n.GetPassed() != 1 {
		t.Errorf("live counts %v, want 2 reused and 1 passed", n)
	}
	var out strings.Builder
	if err := WriteText(&out, rep, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"REUSED  s/a  from run r-older", "2 reused (not run: unchanged since a passing run)", "1 passed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestReportRendersWhatChanged: a Builder asked for its report after every result (which
// renders again only the cases that changed) ends with the report of one asked once at the
// end, duplicates, skips and all.
func TestReportRendersWhatChanged(t *testing.T) {
	planned, all := benchRun()
	planned = planned[:40]
	kept := map[string]bool{}
	for _, pc := range planned {
		kept[pc.Case] = true
	}
	var results []*skillfleetv1.Result
	for _, r := range all {
		if kept[r.GetCaseName()] {
			results = append(results, r)
		}
	}
	often, once := NewBuilder("r-bench", planned), NewBuilder("r-bench", planned)
	for i, r := range results {
		often.Add(r)
		once.Add(r)
		if i%3 == 0 {
			often.Report()
		}
		if i == len(results)/2 {
			often.Skip("cancelled half way")
			once.Skip("cancelled half way")
		}
	}
	got, want := often.Report(), once.Report()
	var gj, wj bytes.Buffer
	if err := WriteJSON(&gj, got); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&wj, want); err != nil {
		t.Fatal(err)
	}
	if gj.String() != wj.String() {
		t.Errorf("the report rendered piecemeal differs from one rendered at once:\n%s\nwant\n%s", gj.String(), wj.String())
	}
}

// TestBuilderAgentVersions: a case names the CLI versions its epochs ran on, once each and
// sorted, and the text report shows them beside a problem, so that a failure that came with
// a new CLI says so.
func TestBuilderAgentVersions(t *testing.T) {
	ran := func(v string) func(*skillfleetv1.Result) {
		return func(r *skillfleetv1.Result) { r.AgentVersion = v }
	}
	b := NewBuilder(testRun, []PlannedCase{plan("s", "a", 3, 0), plan("s", "b", 1, 0), plan("s", "c", 2*maxAgentVersions, 0)})
	b.Add(res("s", "a", 1, vFailed, ran("claude-cli/2.1.241")))
	b.Add(res("s", "a", 2, vFailed, ran("claude-cli/2.1.240")))
	b.Add(res("s", "a", 3, vFailed, ran("claude-cli/2.1.241")))
	b.Add(res("s", "b", 1, vPassed)) // the built-in agent, or a CLI that named none
	for i := range 2 * maxAgentVersions {
		b.Add(res("s", "c", i+1, vPassed, ran(fmt.Sprintf("cli/%d", i))))
	}
	r := b.Report()
	if got := r.Cases[0].AgentVersions; len(got) != 2 || got[0] != "claude-cli/2.1.240" || got[1] != "claude-cli/2.1.241" {
		t.Errorf("case a ran on %q, want both versions, sorted", got)
	}
	if got := r.Cases[1].AgentVersions; got != nil {
		t.Errorf("case b ran on %q, want none", got)
	}
	if got := r.Cases[2].AgentVersions; len(got) != maxAgentVersions {
		t.Errorf("case c keeps %d versions, want %d", len(got), maxAgentVersions)
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, r, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "claude-cli/2.1.240, claude-cli/2.1.241") {
		t.Errorf("the text report does not name the versions:\n%s", buf.String())
	}
}
