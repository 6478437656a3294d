package history

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"testing"
	"time"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
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

// TestUpgradeToReuseKeyPrefix: a history of schema version 6 holding results migrates to the
// reuse index on a prefix of the cell key (version 7), and the lookup still finds its rows by
// that index, telling apart keys that share the prefix.
func TestUpgradeToReuseKeyPrefix(t *testing.T) {
	forEachBackend(t, func(t *testing.T, target string) {
		c := context.Background()
		old := openAt(t, target, 6)
		// Three keys alike in the characters the index holds (the last not looked up), and one
		// unlike them.
		shared := "sha256:" + strings.Repeat("ab", 31)
		keys := []string{shared + "01", shared + "02", "sha256:" + strings.Repeat("cd", 32), shared + "03"}
		for _, r := range []struct {
			run     string
			at      time.Time
			verdict []string // per key
		}{
			{"v1", t0, []string{"passed", "passed", "passed", "passed"}},
			{"v2", t0.Add(time.Hour), []string{"passed", "failed", "passed", "passed"}},
		} {
			st := status(r.run, "nightly", pb.Priority_PRIORITY_SCHEDULED, pb.RunState_RUN_STATE_COMPLETED, r.at)
			var rows []Result
			for i, k := range keys {
				res := FromResult(result(r.run, fmt.Sprint("j", i), "sk", fmt.Sprint("c", i), 1, pb.Verdict_VERDICT_PASSED, "", r.at), st.GetSpec(), r.at)
				res.Verdict, res.CellKey, res.CellDigest = r.verdict[i], k, "d"+k[len(k)-2:]
				rows = append(rows, res)
			}
			if err := old.write(c, []Run{FromStatus(st)}, rows); err != nil {
				t.Fatalf("a version 6 run: %v", err)
			}
		}
		// Other cells, enough for the planners to tell a key's rows from the suite's.
		st := status("v0", "nightly", pb.Priority_PRIORITY_SCHEDULED, pb.RunState_RUN_STATE_COMPLETED, t0)
		var others []Result
		for i := range 2000 {
			res := FromResult(result("v0", fmt.Sprint("j", i), "sk", fmt.Sprint("o", i), 1, pb.Verdict_VERDICT_PASSED, "", t0), st.GetSpec(), t0)
			res.CellKey = fmt.Sprintf("sha256:%064x", i)
			others = append(others, res)
		}
		if err := old.write(c, []Run{FromStatus(st)}, others); err != nil {
			t.Fatalf("a version 6 run: %v", err)
		}
		if v, err := old.SchemaVersion(c); err != nil || v != 6 {
			t.Fatalf("schema version %d, %v; want 6", v, err)
		}
		old.Close()

		s := open(t, target)
		if v, err := s.SchemaVersion(c); err != nil || v != 7 {
			t.Fatalf("after the upgrade: schema version %d, %v; want 7", v, err)
		}
		got, err := s.Reusable(c, "", "nightly", t0.Add(-time.Hour), "", map[string]int{keys[0]: 1, keys[1]: 1, keys[2]: 1})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]Reusable{
			keys[0]: {Run: "v2", CellDigest: "d01", FinishedAt: t0.Add(time.Hour)},
			keys[1]: {Run: "v1", CellDigest: "d02", FinishedAt: t0},
			keys[2]: {Run: "v2", CellDigest: "dcd", FinishedAt: t0.Add(time.Hour)},
		}
		if !maps.Equal(got, want) {
			t.Errorf("Reusable:\n got %v\nwant %v", got, want)
		}
		// The lookup searches the index by key prefix, not the suite's whole range of it.
		if _, err := s.db.ExecContext(c, "ANALYZE"); err != nil {
			t.Fatal(err)
		}
		plan, byPrefix := reusePlan(t, s, keys), regexp.MustCompile(`results_team_reuse \(team=\? AND suite=\? AND <expr>=\?`)
		if s.Backend() == "postgres" {
			byPrefix = regexp.MustCompile(fmt.Sprintf(`(?s)results_team_reuse.*Index Cond: [^\n]*substr\(cell_key, 1, %d\)`, reuseKeyPrefix))
		}
		if !byPrefix.MatchString(plan) {
			t.Errorf("the lookup does not search results_team_reuse by key prefix:\n%s", plan)
		}
	})
}

// reusePlan is the database's plan of the lookup of keys. PostgreSQL is told to avoid whole
// table scans, which its planner prefers on a table this small.
func reusePlan(t *testing.T, s *Store, keys []string) string {
	t.Helper()
	c := context.Background()
	conn, err := s.db.Conn(c)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	explain := "EXPLAIN QUERY PLAN "
	if s.Backend() == "postgres" {
		explain = "EXPLAIN "
		if _, err := conn.ExecContext(c, "SET enable_seqscan = off"); err != nil {
			t.Fatal(err)
		}
		defer conn.ExecContext(c, "RESET enable_seqscan")
	}
	q, args := reuseQuery("", "nightly", keys, "", t0)
	rows, err := conn.QueryContext(c, explain+s.d.bind(q), args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var plan strings.Builder
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(&plan, vals...)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return plan.String()
}
