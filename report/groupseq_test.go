package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/stats"
	"github.com/skillfleet/skillfleet/verdict"
)

// autoPlanned makes planned `runs: auto` cases of skill "s": max_runs 20, confidence 0.8 ±
// 0.1, α = β = 0.05 (passed at the twelfth pass in a row, failed at the third failure).
func autoPlanned(t *testing.T) func(name string) PlannedCase {
	t.Helper()
	s, err := stats.NewSPRT(0.8, 0.1, 0.05, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	seq := &verdict.Sequential{Test: s, Confidence: 0.8}
	return func(name string) PlannedCase {
		pc := plan("s", name, 20, 0.8)
		pc.Sequential = seq
		return pc
	}
}

// TestBuilderHoldRelease: a held case stays pending though its epochs settle it; released
// with its epochs stopped, a `runs: auto` case whose test decided within them keeps that
// verdict, and one whose test had not is undecided and never passed or failed (skipped, or
// errored when an epoch errored), saying so in JSON and text; released without a stop it
// goes on under its own rule.
func TestBuilderHoldRelease(t *testing.T) {
	auto := autoPlanned(t)
	type feed struct {
		passes, fails, errs int // in this order, from epoch 1
	}
	for _, c := range []struct {
		name      string
		feed      feed
		stop      int
		want      string
		undecided bool
	}{
		// Three failures in a row cross the failing boundary.
		{"decided within the epochs run", feed{0, 10, 0}, 10, StatusFailed, false},
		// Ten passes do not reach the passing boundary (twelve): the fixed rule over ten
		// would pass it, but the epochs not run could have failed it.
		{"undecided: never a pass", feed{10, 0, 0}, 10, StatusSkipped, true},
		{"undecided with an errored epoch", feed{8, 0, 2}, 10, StatusErrored, true},
		{"no stop: goes on", feed{10, 0, 0}, 0, StatusPending, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := NewBuilder(testRun, []PlannedCase{auto("x")})
			k := CaseKey{Skill: "s", Case: "x"}
			b.Hold(k)
			e := 1
			for range c.feed.passes {
				b.Add(res("s", "x", e, vPassed))
				e++
			}
			for range c.feed.fails {
				b.Add(res("s", "x", e, vFailed))
				e++
			}
			for range c.feed.errs {
				b.Add(res("s", "x", e, vErrored))
				e++
			}
			if !b.Open(k) {
				t.Fatal("a held case settled before all its epochs or its release")
			}
			b.Release(k, c.stop, "the comparison of its skill stopped at look 2 of 4: significant")
			rep := b.Report()
			got := rep.Cases[0]
			if got.Status != c.want || got.Undecided != c.undecided || (got.StoppedAt != 0) != c.undecided {
				t.Fatalf("%s, undecided %v, stopped at %d; want %s, undecided %v", got.Status, got.Undecided, got.StoppedAt, c.want, c.undecided)
			}
			if !c.undecided {
				return
			}
			var js, txt bytes.Buffer
			if err := WriteJSON(&js, rep); err != nil {
				t.Fatal(err)
			}
			if err := WriteText(&txt, rep, TextOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, w := range []struct{ doc, want string }{
				{js.String(), `"stopped_at": 10`},
				{txt.String(), "undecided: its skill's comparison stopped its epochs at 10 of 20, before its sequential test decided; neither passed nor failed"},
				{txt.String(), "the comparison of its skill stopped at look 2 of 4: significant"},
			} {
				if !strings.Contains(w.doc, w.want) {
					t.Errorf("report lacks %q:\n%s", w.want, w.doc)
				}
			}
		})
	}
}

// TestReportSequentialText: the text report says per skill where its comparison stopped.
func TestReportSequentialText(t *testing.T) {
	g, err := stats.NewGroupSequential(0.05, 20, 4, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := g.Result([]float64{0.3, 0.00195}, stats.StopSignificant)
	r.Skill = "deploy"
	var txt, js bytes.Buffer
	rep := Report{Run: "r1", Sequential: []stats.SequentialResult{r}}
	if err := WriteText(&txt, rep, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct{ doc, want string }{
		{txt.String(), "comparison of deploy stopped at look 2 of 4, 10 of 20 epochs per case and arm: significant (obrien-fleming (lan-demets), bonferroni across looks)"},
		{js.String(), `"stopped_at_look": 2`},
		{js.String(), `"reason": "significant"`},
	} {
		if !strings.Contains(w.doc, w.want) {
			t.Errorf("report lacks %q:\n%s", w.want, w.doc)
		}
	}
}
