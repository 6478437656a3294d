package coordinator_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skillfleet/skillfleet/coordinator"
	sfclock "github.com/skillfleet/skillfleet/internal/clock"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

// TestRunDeadlineOnTheClock drives a run's deadline on a fake clock: the run keeps running up
// to its deadline and ends DEADLINE_EXCEEDED at it, its unfinished cases skipped, without the
// test waiting an hour.
func TestRunDeadlineOnTheClock(t *testing.T) {
	const deadline = time.Hour
	for _, tc := range []struct {
		name    string
		advance time.Duration
		want    pb.RunState
	}{
		{"before the deadline", deadline - time.Second, pb.RunState_RUN_STATE_RUNNING},
		{"at the deadline", deadline, pb.RunState_RUN_STATE_DEADLINE_EXCEEDED},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, _, topo := queuetest.Start(t)
			clk := sfclock.NewFake(time.Now())
			c, err := coordinator.New(coordinator.Config{DataDir: t.TempDir(), Agents: []string{"fixture-agent"}, StatusEvery: time.Second},
				coordinator.Deps{Queue: topo, Runs: topo.Runs(), Bundles: topo, Registry: prometheus.NewRegistry(), Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = c.Close(context.Background()) }()
			st, err := c.Submit(ctx, bytes.NewReader(twoCaseSuite(t)), &pb.RunSpec{DeadlineMs: deadline.Milliseconds()})
			if err != nil {
				t.Fatal(err)
			}
			events, stop, err := c.Subscribe(ctx, st.GetId())
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			// The run loop waits on its deadline timer and its progress ticker.
			if err := clk.WaitFor(ctx, 2); err != nil {
				t.Fatal(err)
			}
			clk.Advance(tc.advance)
			if tc.want == pb.RunState_RUN_STATE_RUNNING {
				if n := clk.Pending(); n != 2 {
					t.Fatalf("%d timers running %s into the run, want its deadline timer still waiting", n, tc.advance)
				}
				if got, err := c.Status(ctx, st.GetId()); err != nil || got.GetState() != tc.want {
					t.Fatalf("status %v, %v; want %v", got.GetState(), err, tc.want)
				}
				return
			}
			var last *pb.RunStatus
			for {
				select {
				case ev, ok := <-events:
					if !ok {
						if last.GetState() != tc.want || last.GetCases().GetSkipped() != 2 {
							t.Fatalf("run ended %v with cases %v; want %v with both cases skipped", last.GetState(), last.GetCases(), tc.want)
						}
						return
					}
					if s := ev.GetStatus(); s != nil {
						last = s
					}
				case <-ctx.Done():
					t.Fatal("the run did not end at its deadline")
				}
			}
		})
	}
}
