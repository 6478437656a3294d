package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"time"

	"github.com/skillfleet/skillfleet/comparison"
	"github.com/skillfleet/skillfleet/comparison/comparisontest"
	"github.com/skillfleet/skillfleet/internal/cmdutil"
	"github.com/skillfleet/skillfleet/internal/testutil"
)

// compareRuns measures skillfleet compare's work on two runs of 100,000 cases (300,000
// results each): from the results to the rendered text and JSON, with the heap it needs above
// the results themselves.
func (b *bencher) compareRuns(context.Context) ([]benchResult, error) {
	// The limit skillfleet compare runs under; the other benchmarks' is restored after.
	cmdutil.LimitMemoryForComparison()
	defer cmdutil.LimitMemory()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	// What skillfleet compare holds: the records it keeps of each result as they stream in.
	ra, rb := recordsOfRuns(100_000)
	runtime.GC()
	var loaded runtime.MemStats
	runtime.ReadMemStats(&loaded)
	held := int64(loaded.HeapInuse) - int64(before.HeapInuse)
	var walls []time.Duration
	var peak uint64
	for range 3 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		stop := testutil.PeakHeap(ms.HeapInuse)
		start := time.Now()
		r, err := comparison.Compare(comparison.Side{Run: "a", Results: ra}, comparison.Side{Run: "b", Results: rb}, comparison.Options{Seed: 1})
		if err == nil {
			err = r.WriteText(io.Discard)
		}
		if err == nil {
			err = r.WriteJSON(io.Discard)
		}
		walls = append(walls, time.Since(start))
		peak = max(peak, stop())
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(walls)
	med := walls[len(walls)/2]
	return []benchResult{{
		name:   "compare two runs of 100,000 cases",
		figure: fmt.Sprintf("%.2f s (median of 3), peak heap %s: %s for the comparison above the %s the two runs' results take", med.Seconds(), mib(held+int64(peak)), mib(int64(peak)), mib(held)),
		target: "< 2 s, < 500 MB",
		met:    verdict(med < 2*time.Second && held+int64(peak) < 500<<20),
		detail: "Two runs of 100,000 cases over 1,000 skills, 3 epochs each (300,000 results per run, about 2% errored), from the results a report counts to the rendered text and JSON comparison: pairing, McNemar or sign-flip tests and case-clustered bootstrap intervals per skill, Holm's correction, and the case diff. Heap sampled every 10 ms, under the 1 GiB soft memory limit skillfleet compare sets (the CLI's planning limit of 256 MiB would make the collector run without pause over the two runs' results); the peak counts the results as skillfleet compare holds them (a comparison.Record of each, kept as the results stream in) and the comparison's own allocations.",
	}}, nil
}

// recordsOfRuns is two generated runs as skillfleet compare keeps them; the results
// themselves are garbage once read.
func recordsOfRuns(n int) (a, b []comparison.Record) {
	ra, rb := comparisontest.Runs(n)
	return comparison.RecordsOf(ra), comparison.RecordsOf(rb)
}
