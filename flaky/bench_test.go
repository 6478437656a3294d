package flaky

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// benchHistories builds cells × runs stored results, one epoch per run: a third of the cells
// pass always, a tenth fail always, the rest pass with a probability of their own, and 2% of
// the epochs are infrastructure failures — a nightly suite's history as the query returns it.
func benchHistories(cells, runsPerCell int) []History {
	r := rand.New(rand.NewPCG(1, 1))
	t0 := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	ids := make([]string, runsPerCell)
	for i := range ids {
		ids[i] = fmt.Sprintf("run-%03d", i)
	}
	hs := make([]History, cells)
	for c := range hs {
		p := r.Float64()
		switch {
		case c%3 == 0:
			p = 1
		case c%10 == 1:
			p = 0
		}
		rs := make([]Run, runsPerCell)
		epochs := make([]Epoch, runsPerCell) // one backing array per cell, as a query would fill
		for i := range rs {
			switch x := r.Float64(); {
			case x < 0.02:
				epochs[i] = Epoch{Verdict: Errored, Class: ClassSandbox}
			case x < 0.02+0.98*p:
				epochs[i] = Epoch{Verdict: Passed}
			default:
				epochs[i] = Epoch{Verdict: Failed}
			}
			rs[i] = Run{ID: ids[i], Time: t0.AddDate(0, 0, i), Epochs: epochs[i : i+1]}
		}
		hs[c] = History{
			Cell: Cell{Suite: "nightly", Skill: fmt.Sprintf("skill-%03d", c%1000), Case: fmt.Sprintf("case-%06d", c), Agent: "builtin", Model: "m1"},
			Runs: rs,
		}
	}
	return hs
}

// BenchmarkAssess1M labels 100,000 cells of 10 runs each: 1,000,000 stored results, the size
// the whole flaky list is budgeted for (< 1 s including the query).
func BenchmarkAssess1M(b *testing.B) {
	hs := benchHistories(100_000, 10)
	prev := make([]Label, len(hs))
	cfg := DefaultConfig()
	b.ReportAllocs()
	b.ResetTimer()
	flaky := 0
	for b.Loop() {
		flaky = 0
		for i, h := range hs {
			a := Assess(h, prev[i], cfg)
			if a.Label == Flaky {
				flaky++
			}
		}
	}
	b.ReportMetric(float64(flaky), "flaky-cells")
}
