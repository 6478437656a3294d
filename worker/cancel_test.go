package worker

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/sandbox"
)

// busySandbox runs every command until its context ends, as a command that would run to its
// timeout does; killed is closed when the sandbox is released (killed and removed).
type busySandbox struct {
	started chan struct{}
	killed  chan struct{}
}

func (b *busySandbox) Exec(ctx context.Context, _ sandbox.ExecRequest) (sandbox.ExecResult, error) {
	close(b.started)
	select {
	case <-ctx.Done():
		return sandbox.ExecResult{ExitCode: -1}, ctx.Err()
	case <-b.killed:
		return sandbox.ExecResult{ExitCode: -1, SandboxExited: true}, nil
	}
}

func (b *busySandbox) StartLatency() time.Duration { return time.Millisecond }

type busySandboxes struct{ sb *busySandbox }

func (s busySandboxes) Acquire(context.Context, sandbox.Spec) (Sandbox, error) { return s.sb, nil }
func (s busySandboxes) Release(context.Context, Sandbox) error                 { close(s.sb.killed); return nil }

// fakeCancellations hands the worker's callback to the test.
type fakeCancellations struct {
	mu sync.Mutex
	fn func(run string)
}

func (c *fakeCancellations) WatchCancelled(_ context.Context, fn func(string)) (func(), error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fn = fn
	return func() {}, nil
}

func (c *fakeCancellations) cancel(t *testing.T, run string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fn == nil {
		t.Fatal("the worker does not watch for cancelled runs")
	}
	c.fn(run)
}

// TestCancelledRunStopsItsRunningJob: a job running in a sandbox when its run is cancelled is
// stopped (its sandbox released, which kills and removes it) and reported skipped, once and
// acked; another run's job runs on; a job of the cancelled run delivered later is skipped
// without a sandbox.
func TestCancelledRunStopsItsRunningJob(t *testing.T) {
	digest, bundle := testBundle(t)
	sb := &busySandbox{started: make(chan struct{}), killed: make(chan struct{})}
	results := &fakeResults{}
	cancels := &fakeCancellations{}
	lane := newFakeLane("ondemand")
	w, err := New(Config{ID: "w1", Slots: 1, CacheDir: t.TempDir()}, Deps{
		Lanes: []Lane{lane}, Results: results, Bundles: bundles{bundle},
		Executor: NewExecutor(busySandboxes{sb}, nil), Cancellations: cancels, Log: zaptest.NewLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() {
		stop()
		close(lane.closed)
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	job := &pb.Job{Id: "j1", RunId: "r1", Kind: pb.CaseKind_CASE_KIND_COMMAND, Command: "sleep 3600", Assertions: []*pb.Assertion{exitZero}, BundleDigest: digest, TimeoutMs: 3_600_000, Secret: []byte("s3cret")}
	m := newFakeMsg(t, job)
	nextPoll(t, lane).answer <- m
	wantRecv(t, sb.started, struct{}{})

	cancels.cancel(t, "other-run")
	cancels.cancel(t, "r1")
	wantRecv(t, sb.killed, struct{}{})
	m.wantSettled(t, "ack")

	later := newFakeMsg(t, &pb.Job{Id: "j2", RunId: "r1", Kind: pb.CaseKind_CASE_KIND_COMMAND, Command: "true", Assertions: []*pb.Assertion{exitZero}, BundleDigest: digest, TimeoutMs: 1000})
	nextPoll(t, lane).answer <- later
	later.wantSettled(t, "ack")

	results.mu.Lock()
	defer results.mu.Unlock()
	if len(results.published) != 2 {
		t.Fatalf("published %d results, want 2", len(results.published))
	}
	for i, id := range []string{"j1", "j2"} {
		res := results.published[i]
		if res.GetJobId() != id || res.GetRunId() != "r1" || res.GetVerdict() != pb.Verdict_VERDICT_SKIPPED || res.GetReason() != "run cancelled" {
			t.Errorf("result %d: job %s run %s %v %q, want %s of r1 skipped: run cancelled", i, res.GetJobId(), res.GetRunId(), res.GetVerdict(), res.GetReason(), id)
		}
	}
	if got := string(results.published[0].GetSecret()); got != "s3cret" {
		t.Errorf("the skipped result carries secret %q, want the job's", got)
	}
}

// fakeWithdrawals hands the worker's withdrawal callback to the test.
type fakeWithdrawals struct {
	mu sync.Mutex
	fn func(run string, jobs []string)
}

func (c *fakeWithdrawals) WatchWithdrawn(_ context.Context, fn func(string, []string)) (func(), error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fn = fn
	return func() {}, nil
}

func (c *fakeWithdrawals) withdraw(t *testing.T, run string, jobs ...string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fn == nil {
		t.Fatal("the worker does not watch for withdrawn jobs")
	}
	c.fn(run, jobs)
}

// TestWithdrawnJobIsStopped: a running job the coordinator withdraws is stopped (its sandbox
// killed) and reported skipped, once and acked; withdrawing another run's job of the same id,
// or another job of the run, does not touch it; a withdrawn job delivered later is skipped
// without a sandbox.
func TestWithdrawnJobIsStopped(t *testing.T) {
	digest, bundle := testBundle(t)
	sb := &busySandbox{started: make(chan struct{}), killed: make(chan struct{})}
	results := &fakeResults{}
	wd := &fakeWithdrawals{}
	lane := newFakeLane("ondemand")
	w, err := New(Config{ID: "w1", Slots: 1, CacheDir: t.TempDir()}, Deps{
		Lanes: []Lane{lane}, Results: results, Bundles: bundles{bundle},
		Executor: NewExecutor(busySandboxes{sb}, nil), Withdrawals: wd, Log: zaptest.NewLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() {
		stop()
		close(lane.closed)
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	job := &pb.Job{Id: "j1", RunId: "r1", Kind: pb.CaseKind_CASE_KIND_COMMAND, Command: "sleep 3600", Assertions: []*pb.Assertion{exitZero}, BundleDigest: digest, TimeoutMs: 3_600_000, Secret: []byte("s3cret")}
	m := newFakeMsg(t, job)
	nextPoll(t, lane).answer <- m
	wantRecv(t, sb.started, struct{}{})

	wd.withdraw(t, "other-run", "j1")
	wd.withdraw(t, "r1", "j9", "j2")
	select {
	case <-sb.killed:
		t.Fatal("a withdrawal of other jobs stopped j1")
	case <-time.After(50 * time.Millisecond):
	}
	wd.withdraw(t, "r1", "j1")
	wantRecv(t, sb.killed, struct{}{})
	m.wantSettled(t, "ack")

	later := newFakeMsg(t, &pb.Job{Id: "j2", RunId: "r1", Kind: pb.CaseKind_CASE_KIND_COMMAND, Command: "true", Assertions: []*pb.Assertion{exitZero}, BundleDigest: digest, TimeoutMs: 1000})
	nextPoll(t, lane).answer <- later
	later.wantSettled(t, "ack")

	results.mu.Lock()
	defer results.mu.Unlock()
	if len(results.published) != 2 {
		t.Fatalf("published %d results, want 2", len(results.published))
	}
	for i, id := range []string{"j1", "j2"} {
		res := results.published[i]
		if res.GetJobId() != id || res.GetRunId() != "r1" || res.GetVerdict() != pb.Verdict_VERDICT_SKIPPED || res.GetReason() != errJobWithdrawn.Error() {
			t.Errorf("result %d: job %s run %s %v %q, want %s of r1 skipped: withdrawn", i, res.GetJobId(), res.GetRunId(), res.GetVerdict(), res.GetReason(), id)
		}
	}
	if got := string(results.published[0].GetSecret()); got != "s3cret" {
		t.Errorf("the skipped result carries secret %q, want the job's", got)
	}
}
