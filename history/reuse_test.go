package history

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"
)

// TestReusable: a cell is reusable from the latest run that passed every one of its epochs
// under one digest within the window; partial, failing, mixed-digest, stale, reused and
// excluded runs are no source.
func TestReusable(t *testing.T) {
	forEachBackend(t, func(t *testing.T, target string) {
		ctx := context.Background()
		s := open(t, target)
		var rows []Result
		add := func(run, key, digest string, at time.Time, verdicts ...string) {
			for i, v := range verdicts {
				rows = append(rows, Result{RunID: run, JobID: fmt.Sprintf("%s#%d", key, i+1), Suite: "nightly", Lane: "scheduled",
					Skill: "s", Case: key, Agent: "a", Arm: "with_skill", Epoch: i + 1, Attempt: 1, Verdict: v,
					CellKey: key, CellDigest: digest, FinishedAt: at, RecordedAt: at})
			}
		}
		h := time.Hour
		add("r1", "latest", "d1", t0, "passed", "passed")
		add("r2", "latest", "d1", t0.Add(h), "passed", "passed")
		add("r3", "latest", "d1", t0.Add(2*h), "passed", "failed")
		add("r1", "failing", "d1", t0, "passed", "failed")
		add("r1", "two-digests", "d1", t0, "passed")
		rows[len(rows)-1].JobID += "-a"
		add("r1", "two-digests", "d2", t0, "passed")
		rows[len(rows)-1].JobID += "-b"
		add("r1", "partial", "d1", t0, "passed")
		add("r0", "stale", "d1", t0.Add(-48*h), "passed", "passed")
		add("r1", "chained", "d1", t0, "passed", "passed")
		add("r2", "chained", "d1", t0.Add(h), "reused", "reused")
		add("r9", "excluded", "d1", t0.Add(h), "passed", "passed")
		add("r1", "no-digest", "", t0, "passed", "passed")
		other := rows[len(rows)-1]
		other.Suite, other.RunID, other.CellKey = "other", "x1", "other-suite"
		rows = append(rows, other)
		if err := s.WriteResults(ctx, rows); err != nil {
			t.Fatal(err)
		}
		qs := map[string]int{}
		for _, k := range []string{"latest", "failing", "two-digests", "partial", "stale", "chained", "excluded", "no-digest", "other-suite", "unknown"} {
			qs[k] = 2
		}
		got, err := s.Reusable(ctx, "", "nightly", t0.Add(-24*h), "r9", qs)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]Reusable{
			"latest":  {Run: "r2", CellDigest: "d1", FinishedAt: t0.Add(h)},
			"chained": {Run: "r1", CellDigest: "d1", FinishedAt: t0},
		}
		if !maps.Equal(got, want) {
			t.Errorf("Reusable:\n got %v\nwant %v", got, want)
		}
	})
}

// TestReusableManyKeys: a lookup of more keys than one query binds is split, and finds all.
func TestReusableManyKeys(t *testing.T) {
	ctx := context.Background()
	s := open(t, backends[0].target(t))
	var rows []Result
	qs := map[string]int{}
	for i := range 3*keysPerReuseQuery + 7 {
		k := fmt.Sprintf("k%04d", i)
		rows = append(rows, Result{RunID: "r1", JobID: k, Suite: "n", Skill: "s", Case: k, Arm: "with_skill", Epoch: 1,
			Verdict: "passed", CellKey: k, CellDigest: "d" + k, FinishedAt: t0, RecordedAt: t0})
		qs[k] = 1
	}
	if err := s.WriteResults(ctx, rows); err != nil {
		t.Fatal(err)
	}
	got, err := s.Reusable(ctx, "", "n", t0.Add(-time.Hour), "", qs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(qs) || got["k1506"].CellDigest != "dk1506" {
		t.Errorf("found %d of %d keys (k1506: %+v)", len(got), len(qs), got["k1506"])
	}
}
