package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestBuilderCurtailed: a case settled before all its epochs reported says how many ran of
// how many were planned, counts its missing epochs as neither skipped nor pending (also once
// the run ends), and the Builder is Settled once every case is, of every arm.
func TestBuilderCurtailed(t *testing.T) {
	cases := []PlannedCase{plan("s", "passes", 5, 0.8), plan("s", "fails", 5, 0.8), plan("s", "errs", 5, 0.8), plan("s", "open", 5, 0.8)}
	feed := func(b *Builder) {
		for e := 1; e <= 4; e++ {
			b.Add(res("s", "passes", e, vPassed))
		}
		b.Add(res("s", "fails", 1, vFailed))
		b.Add(res("s", "fails", 3, vFailed))
		// Two errored and two passed of five with four needed: a pass is out of reach, and
		// so is a fail (at most one more failure), so it is errored whatever the fifth does.
		b.Add(res("s", "errs", 1, vErrored))
		b.Add(res("s", "errs", 2, vPassed))
		b.Add(res("s", "errs", 3, vErrored))
		b.Add(res("s", "errs", 4, vPassed))
		b.Add(res("s", "open", 1, vPassed))
	}
	b := NewBuilder(testRun, cases)
	feed(b)
	if b.Settled() {
		t.Fatal("Settled with a case open")
	}
	if !b.Open(CaseKey{Skill: "s", Case: "open"}) || b.Open(CaseKey{Skill: "s", Case: "errs"}) {
		t.Fatal("Open does not say which case is open")
	}
	check := func(rep Report, wantOpen string) {
		t.Helper()
		want := map[string]struct {
			status        string
			run, skipped  int
			curtailedLine bool
		}{
			"passes": {StatusPassed, 4, 0, true},
			"fails":  {StatusFailed, 2, 0, true},
			"errs":   {StatusErrored, 4, 0, true},
			"open":   {wantOpen, 1, map[string]int{StatusPending: 0, StatusSkipped: 4}[wantOpen], false},
		}
		for _, c := range rep.Cases {
			w := want[c.Case]
			if c.Status != w.status || c.EpochsRun != w.run || c.EpochsPlanned != 5 || c.SkippedEpochs != w.skipped || c.Curtailed() != w.curtailedLine {
				t.Errorf("%s: status %s, %d of %d run, %d skipped, curtailed %v; want %s, %d of 5, %d skipped, %v",
					c.Case, c.Status, c.EpochsRun, c.EpochsPlanned, c.SkippedEpochs, c.Curtailed(), w.status, w.run, w.skipped, w.curtailedLine)
			}
		}
		var txt bytes.Buffer
		if err := WriteText(&txt, rep, TextOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, line := range []string{
			"PASS  s/passes  4s  (4/5 epochs; 4 of 5 run, the others could not change the verdict)",
			"0/5 epochs passed, 2 failed; 4 needed · 2 of 5 epochs run (the others could not change the verdict)",
		} {
			if !strings.Contains(txt.String(), line) {
				t.Errorf("text report lacks %q:\n%s", line, txt.String())
			}
		}
		var js bytes.Buffer
		if err := WriteJSON(&js, rep); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(js.String(), `"epochs_run": 2,
      "epochs_planned": 5,`) {
			t.Errorf("JSON lacks epochs_run and epochs_planned:\n%s", js.String())
		}
	}
	check(b.Report(), StatusPending)
	if got := b.Counts(); got.GetPassed() != 1 || got.GetFailed() != 1 || got.GetErrored() != 1 {
		t.Errorf("live counts %v: settled cases are counted at once", got)
	}

	b.Add(res("s", "open", 2, vFailed))
	b.Add(res("s", "open", 3, vFailed))
	if !b.Settled() || b.Done() {
		t.Fatalf("Settled %v, Done %v: want settled with jobs missing", b.Settled(), b.Done())
	}
	// A run ended early skips only the epochs of the cases still open.
	c := NewBuilder(testRun, cases)
	feed(c)
	c.Skip("run cancelled by alice")
	check(c.Report(), StatusSkipped)
}

// TestBuilderSequential: a `runs: auto` case reads its epochs in order: passed at the twelfth
// pass in a row (confidence 0.8 ± 0.1, α = β = 0.05: see verdict.TestSequentialWorked), even
// when a later epoch reported first; undecided at max_runs, with the fixed rule's verdict and
// the mark in JSON, text and JUnit.
func TestBuilderSequential(t *testing.T) {
	auto := autoPlanned(t)
	b := NewBuilder(testRun, []PlannedCase{auto("quick"), auto("unsure")})
	b.Add(res("s", "quick", 12, vPassed))
	for e := 2; e <= 11; e++ {
		b.Add(res("s", "quick", e, vPassed))
	}
	if !b.Open(CaseKey{Skill: "s", Case: "quick"}) {
		t.Fatal("settled with epoch 1 missing: the test reads the epochs in order")
	}
	b.Add(res("s", "quick", 1, vPassed))
	b.Add(res("s", "unsure", 1, vFailed))
	b.Add(res("s", "unsure", 2, vFailed))
	for e := 3; e <= 20; e++ {
		b.Add(res("s", "unsure", e, vPassed))
	}
	if !b.Settled() {
		t.Fatal("not settled")
	}
	rep := b.Report()
	got := map[string]Case{}
	for _, c := range rep.Cases {
		got[c.Case] = c
	}
	if q := got["quick"]; q.Status != StatusPassed || q.Undecided || !q.Sequential || q.EpochsRun != 12 || q.EpochsPlanned != 20 {
		t.Errorf("quick: %s, undecided %v, sequential %v, %d of %d run", q.Status, q.Undecided, q.Sequential, q.EpochsRun, q.EpochsPlanned)
	}
	if u := got["unsure"]; u.Status != StatusPassed || !u.Undecided || u.EpochsRun != 20 || u.Interval == nil {
		t.Errorf("unsure: %s, undecided %v, %d run, interval %v", u.Status, u.Undecided, u.EpochsRun, u.Interval)
	}
	var js, txt, xml bytes.Buffer
	if err := WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	if err := WriteText(&txt, rep, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteJUnit(&xml, rep); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ doc, want string }{
		{js.String(), `"undecided": true`},
		{txt.String(), "PASS  s/unsure  20s  (18/20 epochs; undecided at max_runs, passed by the fixed rule, 95% CI 0.70–0.97)"},
		{txt.String(), "PASS  s/quick  12s  (12/20 epochs; 12 of 20 run, the others could not change the verdict)"},
		{xml.String(), "<system-out>undecided: the sequential test reached max_runs (20) without deciding; the fixed rule over them (16 needed) gave passed</system-out>"},
	} {
		if !strings.Contains(c.doc, c.want) {
			t.Errorf("report lacks %q:\n%s", c.want, c.doc)
		}
	}
}
