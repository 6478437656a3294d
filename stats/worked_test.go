package stats

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"
)

// worked is testdata/worked.json: expected values computed independently of this package by
// testdata/worked.py (Python, standard library, exact fractions where the statistic allows).
// Regenerate with: python3 stats/testdata/worked.py > stats/testdata/worked.json
type worked struct {
	McNemar []struct {
		B, C int
		P    float64
	}
	Wilson []struct {
		Passed, N int
		Interval  [2]float64
	}
	Holm []struct {
		P, Adjusted []float64
	}
	SignFlip []struct {
		Cases [][4]int // passed A, decided A, passed B, decided B
		P     float64
	}
	Newcombe []struct {
		Table    [4]int
		Interval [2]float64
	}
}

func loadWorked(t *testing.T) worked {
	t.Helper()
	b, err := os.ReadFile("testdata/worked.json")
	if err != nil {
		t.Fatal(err)
	}
	var w worked
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	if len(w.McNemar) == 0 || len(w.Wilson) == 0 || len(w.Holm) == 0 || len(w.SignFlip) == 0 || len(w.Newcombe) == 0 {
		t.Fatal("worked.json lacks a table")
	}
	return w
}

// near reports whether got is within a relative tolerance of want (absolute near zero).
func near(got, want, tol float64) bool {
	return math.Abs(got-want) <= tol*max(1, math.Abs(want))
}

func TestWorkedMcNemar(t *testing.T) {
	for _, w := range loadWorked(t).McNemar {
		got := McNemarExact(w.B, w.C)
		// Relative: the p-values run down to 1e-5.
		if math.Abs(got-w.P) > 1e-10*w.P {
			t.Errorf("McNemarExact(%d, %d) = %.15g, want %.15g", w.B, w.C, got, w.P)
		}
	}
}

func TestWorkedWilson(t *testing.T) {
	for _, w := range loadWorked(t).Wilson {
		got := Wilson(w.Passed, w.N)
		if !near(got.Lo, w.Interval[0], 1e-12) || !near(got.Hi, w.Interval[1], 1e-12) {
			t.Errorf("Wilson(%d, %d) = %v, want %v", w.Passed, w.N, got, w.Interval)
		}
	}
}

func TestWorkedHolm(t *testing.T) {
	for _, w := range loadWorked(t).Holm {
		got := Holm(w.P)
		for i := range got {
			if !near(got[i], w.Adjusted[i], 1e-12) {
				t.Errorf("Holm(%v) = %v, want %v", w.P, got, w.Adjusted)
				break
			}
		}
	}
}

func TestWorkedNewcombe(t *testing.T) {
	for _, w := range loadWorked(t).Newcombe {
		tb := w.Table
		got := NewcombePaired(tb[0], tb[1], tb[2], tb[3])
		if !near(got.Lo, w.Interval[0], 1e-12) || !near(got.Hi, w.Interval[1], 1e-12) {
			t.Errorf("NewcombePaired(%v) = %v, want %v", tb, got, w.Interval)
		}
	}
}

// TestWorkedSignFlip runs each worked vector through Compare, as one skill whose cases ran
// several times, with errored and timed-out epochs added that must change nothing.
func TestWorkedSignFlip(t *testing.T) {
	for i, w := range loadWorked(t).SignFlip {
		var a, b []Case
		for j, c := range w.Cases {
			name := fmt.Sprintf("case-%02d", j)
			a = append(a, Case{Skill: "s", Case: name, Epochs: append(epochs(c[0], c[1]-c[0]), Epoch{Verdict: Errored})})
			b = append(b, Case{Skill: "s", Case: name, Epochs: append(epochs(c[2], c[3]-c[2]), Epoch{Verdict: TimedOut})})
		}
		got, err := Compare(a, b, Options{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		s := got.PerSkill[0]
		if s.Test != TestSignFlipExact {
			t.Errorf("vector %d: test = %s, want %s", i, s.Test, TestSignFlipExact)
		}
		if math.Abs(s.P-w.P) > 1e-9*max(w.P, 1e-300) {
			t.Errorf("vector %d: p = %.15g, want %.15g", i, s.P, w.P)
		}
		if s.A.LeftOut != len(w.Cases) || s.B.LeftOut != len(w.Cases) {
			t.Errorf("vector %d: left out = %d, %d, want %d each", i, s.A.LeftOut, s.B.LeftOut, len(w.Cases))
		}
	}
}

// epochs returns pass passed epochs then fail failed ones, with tokens, cost and time that
// differ by verdict so the deltas have something to measure.
func epochs(pass, fail int) []Epoch {
	var out []Epoch
	for range pass {
		out = append(out, Epoch{Verdict: Passed, Tokens: 1000, Cost: 0.01, Duration: 10e9})
	}
	for range fail {
		out = append(out, Epoch{Verdict: Failed, Tokens: 1500, Cost: 0.02, Duration: 20e9})
	}
	return out
}

// TestPublished checks values printed in the literature, rounded as printed.
func TestPublished(t *testing.T) {
	round4 := func(x float64) float64 { return math.Round(x*1e4) / 1e4 }
	// Newcombe RG (1998). Two-sided confidence intervals for the single proportion: comparison
	// of seven methods. Stat Med 17:857-872, Table II, method 3 (Wilson score, no correction).
	wilson := []struct {
		passed, n int
		lo, hi    float64
	}{
		{81, 263, 0.2553, 0.3662},
		{15, 148, 0.0624, 0.1605},
		{0, 20, 0, 0.1611},
		{1, 29, 0.0061, 0.1718},
	}
	for _, w := range wilson {
		got := Wilson(w.passed, w.n)
		if round4(got.Lo) != w.lo || round4(got.Hi) != w.hi {
			t.Errorf("Wilson(%d, %d) = %v, Newcombe 1998 prints %v-%v", w.passed, w.n, got, w.lo, w.hi)
		}
	}
	// Fagerland MW, Lydersen S, Laake P (2013). The McNemar test for binary matched-pairs data:
	// mid-p and asymptotic are better than exact conditional. BMC Med Res Methodol 13:91.
	// Airway hyper-responsiveness (Bentur et al. 2009), 1 and 7 discordant pairs: exact
	// conditional p = 0.070.
	if p := McNemarExact(1, 7); math.Round(p*1000)/1000 != 0.070 {
		t.Errorf("McNemarExact(1, 7) = %v, Fagerland et al. 2013 print 0.070", p)
	}
	// Fagerland MW, Lydersen S, Laake P (2017). Statistical Analysis of Contingency Tables,
	// chapter 8: complete response before and after consolidation therapy (Cavo et al. 2012),
	// table 59, 6 / 16, 80; Newcombe square-and-add interval: -0.0621 (-0.1186 to -0.0046).
	if iv := NewcombePaired(59, 6, 16, 80); round4(iv.Lo) != -0.1186 || round4(iv.Hi) != -0.0046 {
		t.Errorf("NewcombePaired(59, 6, 16, 80) = %v, Fagerland et al. 2017 print -0.1186 to -0.0046", iv)
	}
}
