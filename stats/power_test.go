package stats

import (
	"encoding/json"
	"os"
	"testing"
)

// powerWorked is testdata/power.json, computed independently of this package by
// testdata/power.py (Python, standard library; the formulas are written out in its header).
// Regenerate with: python3 stats/testdata/power.py > stats/testdata/power.json
type powerWorked struct {
	ZSum float64 `json:"z_sum"`
	MDE  []struct {
		Cases    int
		Variance float64
		MDE      *float64
	}
	Noise []struct {
		Cases    [][4]int
		Paired   int
		Flipped  int
		FlipRate float64 `json:"flip_rate"`
		Interval [2]float64
		Variance float64
		MDE      *float64
	}
	ExactPower []struct {
		Cases    int
		Variance float64
		MDE      float64
		Power    float64 `json:"mcnemar_exact_power"`
	} `json:"exact_power"`
	Compare []struct {
		Cases        [][4]int
		Variance     float64
		MDE          *float64
		Underpowered bool
	}
}

func loadPower(t *testing.T) powerWorked {
	t.Helper()
	b, err := os.ReadFile("testdata/power.json")
	if err != nil {
		t.Fatal(err)
	}
	var w powerWorked
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	if len(w.MDE) == 0 || len(w.Noise) == 0 || len(w.Compare) == 0 || len(w.ExactPower) == 0 {
		t.Fatal("power.json lacks a table")
	}
	return w
}

// sameMDE compares an estimate with the worked one: both none, or both near.
func sameMDE(got float64, ok bool, want *float64) bool {
	if want == nil {
		return !ok
	}
	return ok && near(got, *want, 1e-9)
}

func TestWorkedMinDetectable(t *testing.T) {
	w := loadPower(t)
	if got := zQuantile(1-Alpha/2) + zQuantile(Power); !near(got, w.ZSum, 1e-12) {
		t.Errorf("z sum %v, want %v", got, w.ZSum)
	}
	for _, c := range w.MDE {
		got, ok := MinDetectable(c.Cases, c.Variance)
		if !sameMDE(got, ok, c.MDE) {
			t.Errorf("MinDetectable(%d, %v) = %v, %v; want %v", c.Cases, c.Variance, got, ok, deref(c.MDE))
		}
	}
}

// TestMinDetectableAgainstExactPower: at the estimate, McNemar's exact test (the one a
// comparison of one epoch per case uses) has the power power.py computes exactly; it stays
// near Power, below it since the exact test is conservative, which is why the doc comment
// says an underpowered design is so.
func TestMinDetectableAgainstExactPower(t *testing.T) {
	for _, c := range loadPower(t).ExactPower {
		got, ok := MinDetectable(c.Cases, c.Variance)
		if !ok || !near(got, c.MDE, 1e-9) {
			t.Errorf("MinDetectable(%d, %v) = %v, %v; want %v", c.Cases, c.Variance, got, ok, c.MDE)
		}
		if c.Power < 0.75 || c.Power > Power+0.02 {
			t.Errorf("%d cases, variance %v: exact power %v at the estimate, far from %v", c.Cases, c.Variance, c.Power, Power)
		}
	}
}

func deref(p *float64) any {
	if p == nil {
		return "none"
	}
	return *p
}

// diffsOf makes paired stats cases of rows (passed A, decided A, passed B, decided B).
func diffsOf(rows [][4]int) (a, b []Case) {
	epochs := func(passed, decided int) []Epoch {
		var out []Epoch
		for i := range decided {
			v := Failed
			if i < passed {
				v = Passed
			}
			out = append(out, Epoch{Verdict: v})
		}
		return out
	}
	for i, r := range rows {
		name := string(rune('a'+i%26)) + string(rune('a'+i/26))
		a = append(a, Case{Skill: "s", Case: name, Epochs: epochs(r[0], r[1])})
		b = append(b, Case{Skill: "s", Case: name, Epochs: epochs(r[2], r[3])})
	}
	return a, b
}

func TestWorkedNoise(t *testing.T) {
	for i, c := range loadPower(t).Noise {
		a, b := diffsOf(c.Cases)
		cmp, err := Compare(a, b, Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := Noise(cmp.Cases)
		if got.Cases != c.Paired || got.Flipped != c.Flipped || !near(got.FlipRate, c.FlipRate, 1e-12) ||
			!near(got.Interval.Lo, c.Interval[0], 1e-9) || !near(got.Interval.Hi, c.Interval[1], 1e-9) || !near(got.Variance, c.Variance, 1e-12) {
			t.Errorf("table %d: %+v; want paired %d, flipped %d, rate %v %v, variance %v", i, got, c.Paired, c.Flipped, c.FlipRate, c.Interval, c.Variance)
		}
		var mde float64
		if got.MinDetectable != nil {
			mde = *got.MinDetectable
		}
		if !sameMDE(mde, got.MinDetectable != nil, c.MDE) {
			t.Errorf("table %d: min detectable %v, want %v", i, deref(got.MinDetectable), deref(c.MDE))
		}
		if got.IntervalMethod != IntervalWilson {
			t.Errorf("table %d: interval method %q", i, got.IntervalMethod)
		}
	}
}

func TestWorkedComparisonPower(t *testing.T) {
	for i, c := range loadPower(t).Compare {
		a, b := diffsOf(c.Cases)
		cmp, err := Compare(a, b, Options{})
		if err != nil {
			t.Fatal(err)
		}
		o := cmp.Overall
		var mde float64
		if o.MinDetectable != nil {
			mde = *o.MinDetectable
		}
		if !sameMDE(mde, o.MinDetectable != nil, c.MDE) || o.Underpowered != c.Underpowered || o.MinEffect != DefaultMinEffect {
			t.Errorf("table %d: min detectable %v, underpowered %v (min effect %v); want %v, %v", i, deref(o.MinDetectable), o.Underpowered, o.MinEffect, deref(c.MDE), c.Underpowered)
		}
	}
}

// TestMinEffectOption: the same design is underpowered for a small effect and not for a
// large one.
func TestMinEffectOption(t *testing.T) {
	rows := make([][4]int, 0, 200)
	for i := range 200 {
		if i%10 == 0 {
			rows = append(rows, [4]int{0, 1, 1, 1})
		} else {
			rows = append(rows, [4]int{1, 1, 1, 1})
		}
	}
	a, b := diffsOf(rows)
	for _, tc := range []struct {
		minEffect float64
		want      bool
	}{{0.01, true}, {0.5, false}} {
		cmp, err := Compare(a, b, Options{MinEffect: tc.minEffect})
		if err != nil {
			t.Fatal(err)
		}
		if cmp.Overall.Underpowered != tc.want {
			t.Errorf("min effect %v: underpowered %v, want %v (min detectable %v)", tc.minEffect, cmp.Overall.Underpowered, tc.want, deref(cmp.Overall.MinDetectable))
		}
	}
}
