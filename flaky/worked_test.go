package flaky

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// workedCase is one entry of testdata/worked.json: a history and the statistics and label
// testdata/worked.py computed for it, independently of this package (Python, standard library,
// exact fractions for the rates). Regenerate with:
// python3 flaky/testdata/worked.py > flaky/testdata/worked.json
type workedCase struct {
	Name        string
	Runs        []workedRun
	Prev        Label
	Confidence  float64
	MaxAgeHours int `json:"max_age_hours"`
	Now         time.Time
	Want        struct {
		Decided     int
		Passed      int
		Flips       int
		FlipRate    float64 `json:"flip_rate"`
		PassRate    float64 `json:"pass_rate"`
		Interval    [2]float64
		Outcomes    string
		InfraEpochs int `json:"infra_epochs"`
		InfraRuns   int `json:"infra_runs"`
		RecentFlips int `json:"recent_flips"`
		Label       Label
	}
}

type workedRun struct {
	ID     string
	Time   time.Time
	Epochs []struct {
		Verdict Verdict
		Class   string
	}
}

func loadWorked(t *testing.T) []workedCase {
	t.Helper()
	b, err := os.ReadFile("testdata/worked.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []workedCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 10 {
		t.Fatalf("worked.json has %d cases; the table is incomplete", len(cases))
	}
	return cases
}

func (w workedCase) history() History {
	h := History{Cell: Cell{Suite: "nightly", Skill: "s", Case: w.Name}, Confidence: w.Confidence}
	for _, r := range w.Runs {
		run := Run{ID: r.ID, Time: r.Time}
		for _, e := range r.Epochs {
			run.Epochs = append(run.Epochs, Epoch{Verdict: e.Verdict, Class: e.Class})
		}
		h.Runs = append(h.Runs, run)
	}
	return h
}

func TestWorked(t *testing.T) {
	labels := map[Label]int{}
	for _, w := range loadWorked(t) {
		t.Run(w.Name, func(t *testing.T) {
			cfg := Config{Now: w.Now, MaxAge: time.Duration(w.MaxAgeHours) * time.Hour}
			a := Assess(w.history(), w.Prev, cfg)
			ev, want := a.Evidence, w.Want
			t.Logf("%s: %s", a.Label, ev.Reason)
			labels[want.Label]++
			if a.Label != want.Label {
				t.Errorf("label %q, want %q (%s)", a.Label, want.Label, ev.Reason)
			}
			if a.Cell.Case != w.Name {
				t.Errorf("cell %+v lost its name", a.Cell)
			}
			if ev.Decided != want.Decided || ev.Passed != want.Passed || ev.Flips != want.Flips ||
				ev.Outcomes != want.Outcomes || ev.InfraEpochs != want.InfraEpochs ||
				ev.InfraRuns != want.InfraRuns || ev.RecentFlips != want.RecentFlips {
				t.Errorf("evidence %+v, want %+v", ev, want)
			}
			if !near(ev.FlipRate, want.FlipRate) || !near(ev.PassRate, want.PassRate) ||
				!near(ev.Interval.Lo, want.Interval[0]) || !near(ev.Interval.Hi, want.Interval[1]) {
				t.Errorf("flip rate %v, pass rate %v %v; want %v, %v %v",
					ev.FlipRate, ev.PassRate, ev.Interval, want.FlipRate, want.PassRate, want.Interval)
			}
			if ev.Reason == "" || !strings.Contains(ev.Reason, ev.Outcomes) {
				t.Errorf("reason %q does not show the outcomes %q", ev.Reason, ev.Outcomes)
			}
		})
	}
	// The table must exercise every label, or a rule could go untested unnoticed.
	for _, l := range []Label{Flaky, StablePass, StableFail, Insufficient} {
		if labels[l] == 0 {
			t.Errorf("no worked case is labelled %q", l)
		}
	}
}

func near(got, want float64) bool { return math.Abs(got-want) <= 1e-12 }
