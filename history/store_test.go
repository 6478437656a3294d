package history

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/skillfleet/skillfleet/internal/testutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// backends are the two stores every test runs against, each giving a fresh empty database.
var backends = []struct {
	name   string
	target func(t testing.TB) string
}{
	{"sqlite", func(t testing.TB) string { return filepath.Join(t.TempDir(), "sub", "history.db") }},
	{"postgres", postgresURL},
}

func forEachBackend(t *testing.T, f func(t *testing.T, target string)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { f(t, b.target(t)) })
	}
}

func open(t testing.TB, target string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{Target: target})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func status(id, suite string, lane pb.Priority, state pb.RunState, created time.Time) *pb.RunStatus {
	st := &pb.RunStatus{Id: id, State: state,
		Spec:  &pb.RunSpec{Id: id, Name: suite, Priority: lane, CreatedAt: timestamppb.New(created)},
		Cases: &pb.Counts{Total: 2, Passed: 1, Failed: 1}, TotalJobs: 4, DoneJobs: 4}
	if state != pb.RunState_RUN_STATE_RUNNING {
		st.FinishedAt = timestamppb.New(created.Add(time.Minute))
	}
	return st
}

func result(run, job, skill, cs string, epoch int32, v pb.Verdict, reason string, finished time.Time) *pb.Result {
	r := &pb.Result{RunId: run, JobId: job, Skill: skill, CaseName: cs, Epoch: epoch, Verdict: v, Reason: reason,
		Agent: "builtin", Model: "m1", CaseDigest: "sha256:" + cs, Attempt: 1,
		Usage:   &pb.Usage{PromptTokens: 100, CompletionTokens: 20, Cost: 0.25},
		Timings: &pb.Timings{TotalMs: 1500}, FinishedAt: timestamppb.New(finished)}
	if v == pb.Verdict_VERDICT_PASSED {
		r.Assertions = []*pb.AssertionResult{{Type: "output_contains", Passed: true}}
	}
	return r
}

func TestMigrations(t *testing.T) {
	forEachBackend(t, func(t *testing.T, target string) {
		ctx := context.Background()
		for i := range 2 { // the second open finds everything applied
			s, err := Open(ctx, Options{Target: target})
			if err != nil {
				t.Fatalf("open %d: %v", i, err)
			}
			v, err := s.SchemaVersion(ctx)
			if err != nil || v != 7 {
				t.Fatalf("open %d: schema version %d, %v; want 7", i, v, err)
			}
			var n int
			if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM schema_migrations").Scan(&n); err != nil || n != 7 {
				t.Fatalf("open %d: %d migration rows, %v", i, n, err)
			}
			if err := s.WriteRun(ctx, FromStatus(status(fmt.Sprint("r", i), "s", 0, pb.RunState_RUN_STATE_COMPLETED, t0))); err != nil {
				t.Fatalf("open %d: the schema cannot hold a run: %v", i, err)
			}
			s.Close()
		}
		s := open(t, target)
		if _, err := s.db.ExecContext(ctx, s.d.bind("INSERT INTO schema_migrations (version, name, applied_ms) VALUES ($1, $2, $3)"), 99, "0099_future.sql", 0); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if _, err := Open(ctx, Options{Target: target}); !errors.Is(err, ErrSchemaNewer) {
			t.Fatalf("opening a newer schema: %v, want ErrSchemaNewer", err)
		}
	})
}

func TestQueries(t *testing.T) {
	forEachBackend(t, func(t *testing.T, target string) {
		ctx := context.Background()
		s := open(t, target)
		const od, sc = pb.Priority_PRIORITY_ON_DEMAND, pb.Priority_PRIORITY_SCHEDULED
		runs := []*pb.RunStatus{
			status("a1", "alpha", sc, pb.RunState_RUN_STATE_COMPLETED, t0),
			status("a2", "alpha", sc, pb.RunState_RUN_STATE_CANCELLED, t0.Add(time.Hour)),
			status("a3", "alpha", od, pb.RunState_RUN_STATE_COMPLETED, t0.Add(2*time.Hour)),
			status("a4", "alpha", sc, pb.RunState_RUN_STATE_COMPLETED, t0.Add(3*time.Hour)),
			status("a5", "alpha", sc, pb.RunState_RUN_STATE_RUNNING, t0.Add(4*time.Hour)),
			status("b1", "beta", sc, pb.RunState_RUN_STATE_COMPLETED, t0.Add(time.Hour)),
		}
		verdicts := map[string][]pb.Verdict{ // case c1's epochs 0 and 1 per run
			"a1": {pb.Verdict_VERDICT_PASSED, pb.Verdict_VERDICT_PASSED},
			"a2": {pb.Verdict_VERDICT_FAILED, pb.Verdict_VERDICT_SKIPPED},
			"a3": {pb.Verdict_VERDICT_ERRORED, pb.Verdict_VERDICT_PASSED},
			"a4": {pb.Verdict_VERDICT_TIMED_OUT, pb.Verdict_VERDICT_PASSED},
			"a5": {pb.Verdict_VERDICT_PASSED, pb.Verdict_VERDICT_PASSED},
			"b1": {pb.Verdict_VERDICT_FAILED, pb.Verdict_VERDICT_FAILED},
		}
		for _, st := range runs {
			var rows []Result
			for e, v := range verdicts[st.GetId()] {
				res := result(st.GetId(), fmt.Sprintf("j%d", e), "sk", "c1", int32(e), v, "sandbox failed to start", t0)
				rows = append(rows, FromResult(res, st.GetSpec(), t0))
			}
			if err := s.write(ctx, []Run{FromStatus(st)}, rows); err != nil {
				t.Fatal(err)
			}
		}

		t.Run("previous run", func(t *testing.T) {
			for _, tt := range []struct {
				run, want string
			}{
				{"a4", "a1"}, // a2 was cancelled, a3 is another lane
				{"a5", "a4"},
				{"a1", ""},
				{"a3", ""},
				{"b1", ""},
			} {
				prev, ok, err := s.PreviousRun(ctx, tt.run)
				if err != nil || ok != (tt.want != "") || prev.ID != tt.want {
					t.Errorf("PreviousRun(%s) = %q, %v, %v; want %q", tt.run, prev.ID, ok, err, tt.want)
				}
			}
			if _, _, err := s.PreviousRun(ctx, "nope"); !errors.Is(err, ErrNotFound) {
				t.Errorf("PreviousRun of an unknown run: %v", err)
			}
		})

		t.Run("run and its rows", func(t *testing.T) {
			r, err := s.Run(ctx, "a4")
			if err != nil {
				t.Fatal(err)
			}
			want := Run{ID: "a4", Team: "default", Suite: "alpha", Lane: "scheduled", State: "completed", CreatedAt: t0.Add(3 * time.Hour),
				FinishedAt: t0.Add(3*time.Hour + time.Minute), TotalJobs: 4, DoneJobs: 4, Cases: Counts{Total: 2, Passed: 1, Failed: 1}}
			if r != want {
				t.Errorf("Run = %+v\nwant %+v", r, want)
			}
			rows, err := s.RunResults(ctx, "a4")
			if err != nil || len(rows) != 2 {
				t.Fatalf("RunResults = %d rows, %v", len(rows), err)
			}
			got := rows[0]
			wantRow := Result{RunID: "a4", JobID: "j0", Team: "default", Suite: "alpha", Lane: "scheduled", Skill: "sk", Case: "c1", Agent: "builtin",
				Model: "m1", Arm: "with_skill", Epoch: 0, Attempt: 1, Verdict: "timed_out", ReasonClass: "timeout",
				Reason: "sandbox failed to start", PromptTokens: 100, CompletionTokens: 20, Cost: 0.25, DurationMS: 1500,
				CaseDigest: "sha256:c1", FinishedAt: t0, RecordedAt: t0}
			if got != wantRow {
				t.Errorf("row = %+v\nwant %+v", got, wantRow)
			}
			if rows[1].Verdict != "passed" || rows[1].ReasonClass != "" {
				t.Errorf("second row %+v", rows[1])
			}
		})

		t.Run("recent verdicts", func(t *testing.T) {
			cells, err := s.RecentVerdicts(ctx, "", "alpha", "scheduled", 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(cells) != 1 {
				t.Fatalf("%d cells, want 1: %+v", len(cells), cells)
			}
			var got []string
			for _, v := range cells[0].Verdicts {
				got = append(got, fmt.Sprintf("%s/%d:%s:%s", v.RunID, v.Epoch, v.Verdict, v.ReasonClass))
			}
			// a5 is unfinished; the two finished scheduled runs before it are a4 and a2.
			want := []string{"a4/0:timed_out:timeout", "a4/1:passed:", "a2/0:failed:assertion", "a2/1:skipped:"}
			if !slices.Equal(got, want) {
				t.Errorf("verdicts %v\nwant %v", got, want)
			}
			if cells[0].CellKey != (CellKey{Skill: "sk", Case: "c1", Agent: "builtin", Model: "m1", Arm: "with_skill"}) {
				t.Errorf("cell %+v", cells[0].CellKey)
			}
			all, err := s.RecentVerdicts(ctx, "", "alpha", "", 10)
			if err != nil || len(all) != 1 || len(all[0].Verdicts) != 8 {
				t.Errorf("every lane: %+v, %v; want 8 verdicts of 4 finished runs", all, err)
			}
		})
	})
}

func TestBackfillIsIdempotent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, target string) {
		ctx := context.Background()
		s := open(t, target)
		st := status("r1", "alpha", 0, pb.RunState_RUN_STATE_COMPLETED, t0)
		var stream []*pb.Result
		for i := range 1203 { // three batches, the last one partial
			stream = append(stream, result("r1", fmt.Sprintf("j%04d", i), "sk", fmt.Sprintf("c%d", i), 0, pb.Verdict_VERDICT_FAILED, "", t0))
		}
		// A redelivered job's second attempt: the first, counted one is kept.
		again := result("r1", "j0000", "sk", "c0", 0, pb.Verdict_VERDICT_ERRORED, "model endpoint 503", t0)
		again.Attempt = 2
		stream = append(stream, again, result("other", "x", "sk", "c", 0, pb.Verdict_VERDICT_PASSED, "", t0))
		seq := func(yield func(*pb.Result, error) bool) {
			for _, r := range stream {
				if !yield(r, nil) {
					return
				}
			}
		}
		for round := range 2 {
			n, err := s.Backfill(ctx, st, seq)
			if err != nil || n != 1203 {
				t.Fatalf("round %d: Backfill = %d, %v; want 1203", round, n, err)
			}
		}
		rows, err := s.RunResults(ctx, "r1")
		if err != nil || len(rows) != 1203 {
			t.Fatalf("%d rows, %v; want 1203", len(rows), err)
		}
		if rows[0].JobID != "j0000" || rows[0].Verdict != "failed" || rows[0].Attempt != 1 {
			t.Errorf("first row %+v: want the counted first attempt", rows[0])
		}
		if r, err := s.Run(ctx, "r1"); err != nil || r.State != "completed" {
			t.Errorf("run %+v, %v", r, err)
		}
		boom := errors.New("stream gone")
		failing := func(yield func(*pb.Result, error) bool) { yield(nil, boom) }
		if _, err := s.Backfill(ctx, st, failing); !errors.Is(err, boom) {
			t.Errorf("a failing iterator: %v", err)
		}
	})
}

func TestRunRowsNeverGoBack(t *testing.T) {
	forEachBackend(t, func(t *testing.T, target string) {
		ctx := context.Background()
		s := open(t, target)
		done := FromStatus(status("r1", "alpha", 0, pb.RunState_RUN_STATE_COMPLETED, t0))
		running := FromStatus(status("r1", "alpha", 0, pb.RunState_RUN_STATE_RUNNING, t0))
		for _, r := range []Run{running, done, running} {
			if err := s.WriteRun(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := s.Run(ctx, "r1"); err != nil || got.State != "completed" || got.FinishedAt.IsZero() {
			t.Errorf("run %+v, %v: a progress row replaced the finished one", got, err)
		}
	})
}

func TestRetention(t *testing.T) {
	forEachBackend(t, func(t *testing.T, target string) {
		ctx := context.Background()
		s := open(t, target)
		cutoff := t0.Add(-400 * 24 * time.Hour)
		for i, created := range []time.Time{cutoff.Add(-48 * time.Hour), cutoff.Add(-time.Hour), t0} {
			st := status(fmt.Sprint("r", i), "alpha", 0, pb.RunState_RUN_STATE_COMPLETED, created)
			var rows []Result
			for j := range 7 {
				rows = append(rows, FromResult(result(st.GetId(), fmt.Sprint("j", j), "sk", "c", 0, pb.Verdict_VERDICT_FAILED, "", created), st.GetSpec(), created))
			}
			if err := s.write(ctx, []Run{FromStatus(st)}, rows); err != nil {
				t.Fatal(err)
			}
		}
		results, runs, err := s.DeleteBefore(ctx, cutoff, 3) // batches of 3: several rounds
		if err != nil || results != 14 || runs != 2 {
			t.Fatalf("DeleteBefore = %d results, %d runs, %v; want 14, 2", results, runs, err)
		}
		for i, want := range []int{0, 0, 7} {
			rows, err := s.RunResults(ctx, fmt.Sprint("r", i))
			if err != nil || len(rows) != want {
				t.Errorf("run r%d: %d rows, %v; want %d", i, len(rows), err, want)
			}
		}
		if _, err := s.Run(ctx, "r0"); !errors.Is(err, ErrNotFound) {
			t.Errorf("an expired run is still stored: %v", err)
		}
		if results, runs, err := s.DeleteBefore(ctx, cutoff, 3); err != nil || results+runs != 0 {
			t.Errorf("second sweep deleted %d, %d, %v", results, runs, err)
		}
	})
}

func count(t testing.TB, s *Store, run string) int {
	t.Helper()
	var n int
	if err := s.db.QueryRowContext(context.Background(), s.d.bind("SELECT COUNT(*) FROM results WHERE run_id = $1"), run).Scan(&n); err != nil {
		return -1
	}
	return n
}

func TestWriterBatches(t *testing.T) {
	forEachBackend(t, func(t *testing.T, target string) {
		s := open(t, target)
		st := status("r1", "alpha", 0, pb.RunState_RUN_STATE_RUNNING, t0)
		// By size: with a flush interval far away, only full batches are written.
		w := NewWriter(s, WriterConfig{BatchRows: 10, FlushEvery: time.Hour}, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
		for i := range 25 {
			w.Record(result("r1", fmt.Sprint("j", i), "sk", "c", 0, pb.Verdict_VERDICT_FAILED, "", t0), st)
		}
		testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool { return w.Written() == 20 }, "two full batches written")
		if n := count(t, s, "r1"); n != 20 {
			t.Errorf("%d rows before the partial batch is due, want 20", n)
		}
		w.RunFinished(status("r1", "alpha", 0, pb.RunState_RUN_STATE_COMPLETED, t0))
		if err := w.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := count(t, s, "r1"); n != 25 {
			t.Errorf("%d rows after Close, want 25", n)
		}
		if r, err := s.Run(ctx(), "r1"); err != nil || r.State != "completed" {
			t.Errorf("run %+v, %v", r, err)
		}

		// By time: a partial batch is written after FlushEvery.
		w = NewWriter(s, WriterConfig{BatchRows: 500, FlushEvery: 20 * time.Millisecond}, zap.NewNop())
		defer w.Close(context.Background())
		st2 := status("r2", "alpha", 0, pb.RunState_RUN_STATE_RUNNING, t0)
		for i := range 3 {
			w.Record(result("r2", fmt.Sprint("j", i), "sk", "c", 0, pb.Verdict_VERDICT_PASSED, "", t0), st2)
		}
		testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool { return count(t, s, "r2") == 3 }, "a partial batch written in time")
	})
}

func ctx() context.Context { return context.Background() }

func TestWriterQueueBound(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "h.db"))
	s.Close() // every write fails: the queue fills
	w := NewWriter(s, WriterConfig{BatchRows: 2, QueueRows: 4, MinBackoff: time.Hour}, zap.NewNop())
	st := status("r1", "alpha", 0, pb.RunState_RUN_STATE_RUNNING, t0)
	for i := range 20 {
		w.Record(result("r1", fmt.Sprint("j", i), "sk", "c", 0, pb.Verdict_VERDICT_PASSED, "", t0), st)
	}
	// Two rows are held by the failing batch, four wait in the queue; the rest are dropped
	// rather than blocking the caller.
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool { return w.Dropped() >= 14 }, "overflow dropped")
	c, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := w.Close(c); err == nil {
		t.Error("Close with unwritten results reported no error")
	}
}

func TestWriterOutlivesPostgresDown(t *testing.T) {
	target := postgresURL(t)
	s := open(t, target)
	w := NewWriter(s, WriterConfig{BatchRows: 5, FlushEvery: 20 * time.Millisecond, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond},
		zaptest.NewLogger(t, zaptest.Level(zap.ErrorLevel)))
	defer w.Close(context.Background())
	st := status("r1", "alpha", 0, pb.RunState_RUN_STATE_RUNNING, t0)
	rec := func(from, to int) {
		for i := from; i < to; i++ {
			w.Record(result("r1", fmt.Sprintf("j%03d", i), "sk", "c", 0, pb.Verdict_VERDICT_PASSED, "", t0), st)
		}
	}
	rec(0, 10)
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool { return w.Written() == 10 }, "first rows written")
	restartPostgres(t, func() {
		rec(10, 40)
		// Let the writer fail a few times while the server is down.
		time.Sleep(300 * time.Millisecond)
		if w.Written() != 10 {
			t.Errorf("%d written while the database was down", w.Written())
		}
	})
	testutil.Eventually(t, 30*time.Second, 20*time.Millisecond, func() bool { return count(t, s, "r1") == 40 }, "rows written after the restart")
	if w.Dropped() != 0 {
		t.Errorf("%d dropped", w.Dropped())
	}
}

func TestClassify(t *testing.T) {
	for _, tt := range []struct {
		v      pb.Verdict
		reason string
		want   string
	}{
		{pb.Verdict_VERDICT_PASSED, "", ""},
		{pb.Verdict_VERDICT_SKIPPED, "the run was cancelled", ""},
		{pb.Verdict_VERDICT_FAILED, "assertion output_contains failed", ClassAssertion},
		{pb.Verdict_VERDICT_TIMED_OUT, "killed", ClassTimeout},
		{pb.Verdict_VERDICT_ERRORED, "the model endpoint answered 429 Too Many Requests", ClassRateLimited},
		{pb.Verdict_VERDICT_ERRORED, "the agent did not finish within 1m0s: context deadline exceeded", ClassTimeout},
		{pb.Verdict_VERDICT_ERRORED, "a process was killed by the memory limit (exit 137)", ClassSandbox},
		{pb.Verdict_VERDICT_ERRORED, "creating the sandbox: docker daemon not running", ClassSandbox},
		{pb.Verdict_VERDICT_ERRORED, "the agent gave no answer: POST /v1/chat/completions: 502 Bad Gateway", ClassModelEndpoint},
		{pb.Verdict_VERDICT_ERRORED, "semantic_match: the judge could not answer", ClassModelEndpoint},
		{pb.Verdict_VERDICT_ERRORED, "the worker reported a pass without any assertion result; only assertions decide a pass", ClassAssertion},
		{pb.Verdict_VERDICT_ERRORED, "something odd", ClassOther},
		{pb.Verdict_VERDICT_ERRORED, "", ClassOther},
	} {
		if got := Classify(tt.v, tt.reason); got != tt.want {
			t.Errorf("Classify(%v, %q) = %q, want %q", tt.v, tt.reason, got, tt.want)
		}
	}
	for class, infra := range map[string]bool{ClassSandbox: true, ClassModelEndpoint: true, ClassRateLimited: true,
		ClassTimeout: false, ClassAssertion: false, ClassOther: false, "": false} {
		if Infrastructure(class) != infra {
			t.Errorf("Infrastructure(%q) = %v", class, !infra)
		}
	}
}

// TestAgentVersionIsKept: a result's CLI version is stored and read back, so that what changed
// between two runs can say the agent did.
func TestAgentVersionIsKept(t *testing.T) {
	forEachBackend(t, func(t *testing.T, target string) {
		ctx := context.Background()
		s := open(t, target)
		st := status("r1", "alpha", pb.Priority_PRIORITY_SCHEDULED, pb.RunState_RUN_STATE_COMPLETED, t0)
		withVersion := result("r1", "j0", "sk", "c1", 0, pb.Verdict_VERDICT_PASSED, "", t0)
		withVersion.AgentVersion = "claude-cli/2.1.240"
		without := result("r1", "j1", "sk", "c2", 0, pb.Verdict_VERDICT_PASSED, "", t0)
		if err := s.write(ctx, []Run{FromStatus(st)}, []Result{FromResult(withVersion, st.GetSpec(), t0), FromResult(without, st.GetSpec(), t0)}); err != nil {
			t.Fatal(err)
		}
		rows, err := s.RunResults(ctx, "r1")
		if err != nil || len(rows) != 2 {
			t.Fatalf("%d rows, %v", len(rows), err)
		}
		if rows[0].AgentVersion != "claude-cli/2.1.240" || rows[1].AgentVersion != "" {
			t.Errorf("versions %q and %q, want claude-cli/2.1.240 and none", rows[0].AgentVersion, rows[1].AgentVersion)
		}
	})
}
