package history

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// TestCopyKeepsIdempotence: PostgreSQL's bulk path (COPY into a staging table, then one
// upsert) treats a (run, job) it already holds as the same row, as the coordinator relies on
// when it replays results after a restart: no duplicate, and the row recorded last wins, across
// batches, within one batch, and through a Writer that is fed the run again. Whole rows are
// compared, so a column written into another's place is seen too.
func TestCopyKeepsIdempotence(t *testing.T) {
	s := open(t, postgresURL(t))
	c := context.Background()
	st := status("r1", "alpha", pb.Priority_PRIORITY_SCHEDULED, pb.RunState_RUN_STATE_RUNNING, t0)
	st.Spec.Team = "teamA"
	// Every column of a version of a row differs from the other versions', so that a column
	// the upsert failed to replace, or wrote into another's place, shows.
	row := func(job string, version int, v pb.Verdict, reason string, recorded time.Time) Result {
		x := func(s string) string { return fmt.Sprintf("%s-%d", s, version) }
		return Result{RunID: "r1", JobID: job, Team: x("team"), Suite: x("alpha"), Lane: x("lane"), Skill: x("sk"), Case: x("c-" + job),
			Agent: x("agent"), Model: x("model"), JudgeModel: x("judge"), Arm: x("arm"), Epoch: version, Attempt: 10 + version,
			Verdict: VerdictName(v), ReasonClass: Classify(v, reason), Reason: reason, PromptTokens: int64(100 + version),
			CompletionTokens: int64(20 + version), Cost: 0.5 + float64(version), DurationMS: int64(1500 + version),
			CaseDigest: x("sha256:c"), FinishedAt: t0.Add(time.Duration(version) * time.Second), RecordedAt: recorded,
			CellKey: x("key-" + job), CellDigest: x("dig-" + job), ReusedFrom: x("r0"), AgentVersion: x("claude-cli/2.1")}
	}
	const n = 1200
	first := make([]Result, n)
	for i := range first {
		first[i] = row(fmt.Sprintf("j%04d", i), 1, pb.Verdict_VERDICT_FAILED, "assertion output_contains failed", t0)
	}
	if err := s.write(c, []Run{FromStatus(st)}, first); err != nil {
		t.Fatal(err)
	}

	// The replay: a later batch holding a row not seen before, then rows already stored, one
	// of them twice (the later copy wins).
	t1 := t0.Add(time.Hour)
	replay := []Result{
		row("j9999", 1, pb.Verdict_VERDICT_PASSED, "", t1),
		row("j0000", 2, pb.Verdict_VERDICT_ERRORED, "model endpoint 503", t1),
		row("j0007", 2, pb.Verdict_VERDICT_ERRORED, "first copy in the batch", t1),
		row("j0007", 3, pb.Verdict_VERDICT_PASSED, "", t1.Add(time.Minute)),
	}
	if err := s.write(c, []Run{FromStatus(st)}, replay); err != nil {
		t.Fatal(err)
	}
	want := map[string]Result{}
	for _, r := range first {
		want[r.JobID] = r
	}
	for _, r := range replay {
		want[r.JobID] = r
	}
	check := func(when string) {
		t.Helper()
		rows, err := s.RunResults(c, "r1")
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(want) {
			t.Errorf("%s: %d rows, want %d", when, len(rows), len(want))
		}
		for _, got := range rows {
			if got != want[got.JobID] {
				t.Errorf("%s: row %s\n got %+v\nwant %+v", when, got.JobID, got, want[got.JobID])
			}
		}
	}
	check("after the replayed batch")

	// A restarted coordinator records the run's results again through a fresh Writer.
	w := NewWriter(s, WriterConfig{BatchRows: 500}, zap.NewNop())
	w.now = func() time.Time { return t1.Add(time.Hour) }
	for i := range n {
		w.Record(result("r1", fmt.Sprintf("j%04d", i), "sk", "c", 1, pb.Verdict_VERDICT_FAILED, "", t0), st)
	}
	if err := w.Close(c); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		job := fmt.Sprintf("j%04d", i)
		want[job] = FromResult(result("r1", job, "sk", "c", 1, pb.Verdict_VERDICT_FAILED, "", t0), st.GetSpec(), t1.Add(time.Hour))
	}
	check("after the Writer's replay")
}

// TestCopyStoresNUL: a NUL byte, which PostgreSQL's text cannot hold, does not make its batch
// fail (the writer would retry it forever, and drop what queues behind it): it is stored as
// U+FFFD, the same way every time, so a key holding one still names one row.
func TestCopyStoresNUL(t *testing.T) {
	s := open(t, postgresURL(t))
	r := Result{RunID: "r1", JobID: "j\x001", Case: "c\x00", Reason: "the agent gave no answer: \x00\x00garbage", Verdict: "errored",
		FinishedAt: t0, RecordedAt: t0}
	for range 2 {
		if err := s.write(context.Background(), nil, []Result{r}); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := s.RunResults(context.Background(), "r1")
	if err != nil || len(rows) != 1 {
		t.Fatalf("%d rows, %v; want 1", len(rows), err)
	}
	if got := rows[0]; got.JobID != "j\uFFFD1" || got.Case != "c\uFFFD" || got.Reason != "the agent gave no answer: \uFFFD\uFFFDgarbage" {
		t.Errorf("stored %q %q %q", got.JobID, got.Case, got.Reason)
	}
}
