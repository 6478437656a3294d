package stats

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"
)

// sprtWorked is testdata/sprt.json, computed independently of this package by
// testdata/sprt.py: Wald's boundaries in their linear form, the exact operating
// characteristics (dynamic programming, not simulation) of the test cut off at MaxRuns, and
// the fixed design with error rates α and β (FixedN), and the one with the test's own error
// rates, which Wald's conservative boundaries keep below α and β (FixedMatchedN).
// Regenerate with: python3 stats/testdata/sprt.py > stats/testdata/sprt.json
type sprtWorked []struct {
	Confidence, Delta, Alpha, Beta float64
	PassLine, FailLine             []int
	Operating                      []struct {
		MaxRuns int
		P0, P1  struct{ PPass, PUndecided, Epochs float64 }
	}
	FixedN, FixedK               int
	FixedMatchedN, FixedMatchedK int
}

func loadSPRT(t *testing.T) sprtWorked {
	t.Helper()
	b, err := os.ReadFile("testdata/sprt.json")
	if err != nil {
		t.Fatal(err)
	}
	var w sprtWorked
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	if len(w) == 0 {
		t.Fatal("no worked SPRT cases")
	}
	return w
}

// TestSPRTBoundaries checks PassLine and FailLine against Wald's linear boundaries as the
// Python script computes them, for n = 1 … 40 decided epochs.
func TestSPRTBoundaries(t *testing.T) {
	for _, w := range loadSPRT(t) {
		s, err := NewSPRT(w.Confidence, w.Delta, w.Alpha, w.Beta)
		if err != nil {
			t.Fatal(err)
		}
		for i := range w.PassLine {
			n := i + 1
			if got := s.PassLine(n); got != w.PassLine[i] {
				t.Errorf("%+v n=%d: PassLine %d, want %d", s, n, got, w.PassLine[i])
			}
			if got := s.FailLine(n); got != w.FailLine[i] {
				t.Errorf("%+v n=%d: FailLine %d, want %d", s, n, got, w.FailLine[i])
			}
		}
	}
}

func TestNewSPRTRefuses(t *testing.T) {
	for _, tt := range []struct{ c, d, a, b float64 }{
		{1, 0.1, 0.05, 0.05},    // confidence 1.0: the zone leaves [0, 1]
		{0.05, 0.1, 0.05, 0.05}, // below 0
		{0.8, 0, 0.05, 0.05},    // no zone
		{0.8, 0.1, 0, 0.05},     // α 0
		{0.8, 0.1, 0.05, 0.5},   // β 0.5
		{0.8, math.NaN(), 0.05, 0.05},
	} {
		if _, err := NewSPRT(tt.c, tt.d, tt.a, tt.b); err == nil {
			t.Errorf("NewSPRT%v accepted", tt)
		}
	}
}

// sequential plays one case of pass rate p: epochs until the test decides or maxRuns decided
// epochs ran, then the fixed rule (passes ≥ ceil(confidence × maxRuns)). It returns whether
// the case passed, whether it was undecided, and the epochs it ran.
func sequential(s SPRT, confidence float64, maxRuns int, p float64, rng *splitMix) (passed, undecided bool, epochs int) {
	passes := 0
	for n := 1; n <= maxRuns; n++ {
		if float64(rng.next()>>11)/(1<<53) < p {
			passes++
		}
		switch s.Decide(passes, n-passes) {
		case 1:
			return true, false, n
		case -1:
			return false, false, n
		}
	}
	need := max(1, int(math.Ceil(confidence*float64(maxRuns)-1e-9)))
	return passes >= need, true, maxRuns
}

// TestSPRTSimulation plays 20,000 cases of known pass rate at each edge of the zone (seeded)
// and checks the share passed, the share undecided and the mean number of epochs against the
// exact values of the Python script, within four standard errors. Cut off far away (1,000
// epochs, the test as Wald defined it), the error rates must also be within α and β (within
// simulation error). The figures, and the fixed design's n, are logged for the record.
func TestSPRTSimulation(t *testing.T) {
	const cases = 20000
	for _, w := range loadSPRT(t) {
		s, err := NewSPRT(w.Confidence, w.Delta, w.Alpha, w.Beta)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range w.Operating {
			for _, edge := range []struct {
				name  string
				p     float64
				exact struct{ PPass, PUndecided, Epochs float64 }
			}{{"p0", s.P0, op.P0}, {"p1", s.P1, op.P1}} {
				rng := newStream(1, fmt.Sprintf("%g/%g/%d/%s", w.Confidence, w.Delta, op.MaxRuns, edge.name))
				var passed, undecided int
				var sum, sumSq float64
				for range cases {
					ok, und, n := sequential(s, w.Confidence, op.MaxRuns, edge.p, rng)
					if ok {
						passed++
					}
					if und {
						undecided++
					}
					sum += float64(n)
					sumSq += float64(n) * float64(n)
				}
				pPass := float64(passed) / cases
				pUnd := float64(undecided) / cases
				mean := sum / cases
				seMean := math.Sqrt((sumSq/cases - mean*mean) / cases)
				check := func(what string, got, want, se float64) {
					t.Helper()
					if math.Abs(got-want) > 4*se+1e-9 {
						t.Errorf("c %g δ %g α %g β %g, max_runs %d, p=%s %g: %s %.4f, exact %.4f (4 SE = %.4f)",
							w.Confidence, w.Delta, w.Alpha, w.Beta, op.MaxRuns, edge.name, edge.p, what, got, want, 4*se)
					}
				}
				check("P(pass)", pPass, edge.exact.PPass, math.Sqrt(edge.exact.PPass*(1-edge.exact.PPass)/cases))
				check("P(undecided)", pUnd, edge.exact.PUndecided, math.Sqrt(edge.exact.PUndecided*(1-edge.exact.PUndecided)/cases))
				check("mean epochs", mean, edge.exact.Epochs, seMean)
				errRate, bound := pPass, w.Alpha // at p0 a pass is the error
				if edge.name == "p1" {
					errRate, bound = 1-pPass, w.Beta
				}
				if op.MaxRuns >= 1000 && errRate > bound+3*math.Sqrt(bound*(1-bound)/cases) {
					t.Errorf("c %g δ %g: error rate at %s %.4f over %g", w.Confidence, w.Delta, edge.name, errRate, bound)
				}
				t.Logf("c %g δ %g α %g β %g max_runs %4d at %s=%.2f: error rate %.4f, undecided %.4f, mean epochs %.2f (%.2f× the fixed design's %d at α and β, %.2f× the %d of one erring as little as the test)",
					w.Confidence, w.Delta, w.Alpha, w.Beta, op.MaxRuns, edge.name, edge.p, errRate, pUnd, mean,
					mean/float64(w.FixedN), w.FixedN, mean/float64(w.FixedMatchedN), w.FixedMatchedN)
			}
		}
	}
}
