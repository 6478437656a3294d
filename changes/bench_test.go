package changes

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/flaky"
	"github.com/skillfleet/skillfleet/history"
	"github.com/skillfleet/skillfleet/report"
)

// The benchmark's history: 200 finished nightly runs of 2,500 cases × 2 epochs, 1,000,000
// stored results. One case in fifty flips from run to run, one in a hundred errors in its
// sandbox every third run.
const (
	benchRuns   = 200
	benchCases  = 2500
	benchEpochs = 2
)

func benchRows(run int) []history.Result {
	id := fmt.Sprintf("run-%04d", run)
	at := t0.Add(time.Duration(run) * 24 * time.Hour)
	rows := make([]history.Result, 0, benchCases*benchEpochs)
	for c := range benchCases {
		name := fmt.Sprintf("case-%04d", c)
		for e := 1; e <= benchEpochs; e++ {
			r := history.Result{RunID: id, JobID: fmt.Sprintf("%s-%d", name, e), Suite: "nightly", Lane: "scheduled",
				Skill: fmt.Sprintf("skill-%02d", c%40), Case: name, Agent: "builtin", Model: "m1", JudgeModel: "j1", Arm: "with_skill",
				Epoch: e, Attempt: 1, Verdict: "passed", CaseDigest: "sha256:" + name, FinishedAt: at, RecordedAt: at}
			switch {
			case c%50 == 0 && run%2 == 1:
				r.Verdict, r.ReasonClass = "failed", history.ClassAssertion
			case c%100 == 1 && run%3 == 0:
				r.Verdict, r.ReasonClass = "errored", history.ClassSandbox
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// seedBench writes the history in batches of 5,000 results, the writer's batch insert.
func seedBench(b *testing.B) *history.Store {
	b.Helper()
	s, err := history.Open(context.Background(), history.Options{Target: filepath.Join(b.TempDir(), "bench.db")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	start := time.Now()
	for run := range benchRuns {
		if err := s.WriteResults(context.Background(), benchRows(run)); err != nil {
			b.Fatal(err)
		}
		at := t0.Add(time.Duration(run) * 24 * time.Hour)
		if err := s.WriteRun(context.Background(), history.Run{ID: fmt.Sprintf("run-%04d", run), Suite: "nightly", Lane: "scheduled",
			State: "completed", CreatedAt: at, FinishedAt: at.Add(time.Hour)}); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("seeded %d results in %s", benchRuns*benchCases*benchEpochs, time.Since(start).Round(time.Millisecond))
	return s
}

// BenchmarkWhatChanged is the history's part of a finished run's report over 1,000,000 stored
// results (the section and the flaky labels of 2,500 cases), and the flaky list of the suite.
// Run it alone: go test -run '^$' -bench . -benchtime 5x ./changes
func BenchmarkWhatChanged(b *testing.B) {
	if testing.Short() {
		b.Skip("seeds 1,000,000 results")
	}
	s := seedBench(b)
	current := benchRows(benchRuns)
	run := Run{ID: fmt.Sprintf("run-%04d", benchRuns), Suite: "nightly", Lane: "scheduled", Created: t0.Add(benchRuns * 24 * time.Hour)}
	b.Run("report", func(b *testing.B) {
		for b.Loop() {
			rep := report.Report{Run: run.ID}
			if err := Annotate(context.Background(), s, run, current, &rep, flaky.Config{}); err != nil {
				b.Fatal(err)
			}
			if rep.Changes.Previous == nil || len(rep.Changes.Flaky) != benchCases/50 {
				b.Fatalf("previous %v, %d flaky; want %d", rep.Changes.Previous, len(rep.Changes.Flaky), benchCases/50)
			}
		}
	})
	b.Run("flaky-list", func(b *testing.B) {
		for b.Loop() {
			cells, err := FlakyCells(context.Background(), s, "", "nightly", "scheduled", flaky.Config{})
			if err != nil {
				b.Fatal(err)
			}
			if len(cells) != benchCases/50 {
				b.Fatalf("%d flaky cells, want %d", len(cells), benchCases/50)
			}
		}
	})
}
