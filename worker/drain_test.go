package worker

import (
	"context"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/internal/clock"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// holding is an executor whose job runs until the test releases it or the worker forces it
// to stop.
type holding struct {
	started chan struct{}
	release chan struct{}
}

func (e holding) Execute(ctx context.Context, _ *pb.Job, _ string) (*pb.Result, error) {
	e.started <- struct{}{}
	select {
	case <-e.release:
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return &pb.Result{Verdict: pb.Verdict_VERDICT_PASSED}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestDrainGracePeriod drives a stopping worker's grace period on a fake clock: a job that
// ends within DrainGrace is acked, one still running when it is over is stopped and handed
// back; the job is heartbeated every Heartbeat meanwhile.
func TestDrainGracePeriod(t *testing.T) {
	const grace, beat = 5 * time.Minute, 10 * time.Second
	for _, tc := range []struct {
		name string
		// advance is how far the clock moves once the drain waits; then the job is released.
		advance time.Duration
		want    string
	}{
		{"job ends within the grace", grace - time.Second, "ack"},
		{"grace over: job handed back", grace, "nak"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			digest, bundle := testBundle(t)
			clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			lane := newFakeLane("ondemand")
			exec := holding{started: make(chan struct{}, 1), release: make(chan struct{})}
			w, err := New(Config{ID: "w1", Slots: 1, CacheDir: t.TempDir(), DrainGrace: grace, Heartbeat: beat}, Deps{
				Lanes: []Lane{lane}, Results: &fakeResults{}, Bundles: bundles{bundle}, Executor: exec, Clock: clk,
			})
			if err != nil {
				t.Fatal(err)
			}
			runCtx, drain := context.WithCancel(context.Background())
			defer drain()
			done := make(chan error, 1)
			go func() { done <- w.Run(runCtx) }()

			m := newFakeMsg(t, &pb.Job{Id: "j1", RunId: "r1", BundleDigest: digest, TimeoutMs: 1000})
			nextPoll(t, lane).answer <- m
			wantRecv(t, exec.started, struct{}{})
			// The heartbeat ticker is the one thing on the clock while the job runs.
			if err := clk.WaitFor(ctx, 1); err != nil {
				t.Fatal(err)
			}
			clk.Advance(beat)
			wantRecv(t, m.beats, struct{}{})

			drain()
			close(lane.closed)
			// Draining: the grace timer joins the heartbeat ticker.
			if err := clk.WaitFor(ctx, 2); err != nil {
				t.Fatal(err)
			}
			clk.Advance(tc.advance)
			if tc.want == "ack" {
				// Still within the grace: the drain still waits on its timer.
				if n := clk.Pending(); n != 2 {
					t.Fatalf("%d timers running %s into the grace, want the ticker and the grace timer", n, tc.advance)
				}
				close(exec.release)
			}
			m.wantSettled(t, tc.want)
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
			case <-ctx.Done():
				t.Fatal("Run did not return after the drain")
			}
		})
	}
}
