package queue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillfleet/skillfleet/internal/testutil"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

// A fetch takes exactly as many jobs as it asks for, at most, so that no job ages unattended
// (AckWait starts at delivery), and the lane's fetches take turns on one inbox subscription.
func TestLaneFetchTakesAtMostN(t *testing.T) {
	for _, tc := range []struct {
		name   string
		queued int
		n      int
		wait   time.Duration
		want   int
	}{
		{name: "fewer queued than asked", queued: 3, n: 16, want: 3},
		{name: "more queued than asked", queued: 5, n: 2, want: 2},
		{name: "one of many, long poll", queued: 4, n: 1, wait: time.Second, want: 1},
		{name: "none queued", queued: 0, n: 4, want: 0},
		{name: "none queued, long poll", queued: 0, n: 1, wait: 50 * time.Millisecond, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, topo := queuetest.Start(t)
			ctx := testCtx(t)
			for i := range tc.queued {
				if err := topo.PublishJob(ctx, queue.LaneScheduled, "run1", fmt.Sprintf("j%d", i), []byte("job")); err != nil {
					t.Fatal(err)
				}
			}
			lane := topo.LaneConsumers()[1]
			var got []*queue.Delivery
			// A loaded server may answer a no-wait request before it has the jobs: ask again
			// for the rest, within a bound.
			for try := 0; try < 50; try++ {
				ds, err := lane.Fetch(tc.n-len(got), tc.wait)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ds...)
				if len(got) >= tc.want {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if len(got) != tc.want {
				t.Fatalf("fetched %d jobs, want %d", len(got), tc.want)
			}
			// The server counts a consumer's pending messages as it learns of them, apart from
			// storing them: a loaded one may report a stored job late (CI saw "1 delivered and 2
			// queued" of 4). A count that settles is read within a bound; a fetch that took
			// more than it asked for stays wrong.
			testutil.Eventually(t, 5*time.Second, 10*time.Millisecond, func() bool {
				info, err := topo.RawScheduled().Info(ctx)
				return err == nil && info.NumAckPending == tc.want && int(info.NumPending) == tc.queued-tc.want
			}, "the consumer never had %d delivered and %d queued", tc.want, tc.queued-tc.want)
			if n := lane.IdleInboxes(); n != 1 {
				t.Errorf("%d idle inboxes after fetches one at a time, want 1", n)
			}
			for _, d := range got {
				if n, _, err := d.Attempt(); err != nil || n != 1 {
					t.Errorf("attempt %d, %v", n, err)
				}
				if err := d.Ack(); err != nil {
					t.Fatal(err)
				}
				if err := d.Ack(); err == nil {
					t.Error("a second ack of one delivery was sent")
				}
			}
		})
	}
}

// A pull request whose answer comes after its fetch gave up on it has the job it brings handed
// back at once, not left to wait out AckWait.
func TestLaneFetchHandsBackAbandonedJobs(t *testing.T) {
	cfg := queue.DefaultConfig()
	cfg.AckWait = 5 * time.Minute
	_, conn, topo := queuetest.StartConfig(t, cfg, queue.EmbeddedConfig{})
	ctx := testCtx(t)
	nc := conn.NATS()
	held := make(chan *nats.Msg, 1)
	sub, err := nc.Subscribe("test.held.requests", func(m *nats.Msg) { held <- m })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	lane := topo.LaneConsumers()[0]
	consumer := lane.RouteRequests("test.held.requests")
	if ds, err := lane.Fetch(1, 50*time.Millisecond); err != nil || len(ds) != 0 {
		t.Fatalf("fetch with its request held = %d, %v", len(ds), err)
	}
	req := <-held
	// The job and the late request reach the server after the fetch gave up.
	if err := topo.PublishJob(ctx, queue.LaneOnDemand, "run1", "j1", []byte("job")); err != nil {
		t.Fatal(err)
	}
	if err := nc.PublishRequest(consumer, req.Reply, req.Data); err != nil {
		t.Fatal(err)
	}
	lane.RouteRequests(consumer)
	ds, err := lane.Fetch(1, 20*time.Second)
	if err != nil || len(ds) != 1 {
		t.Fatalf("fetch after the late delivery = %d, %v; want the job back long before AckWait", len(ds), err)
	}
	if n, _, err := ds[0].Attempt(); err != nil || n != 2 {
		t.Errorf("attempt %d, %v; want 2 (the abandoned delivery was the first)", n, err)
	}
	if err := ds[0].AckSync(context.Background()); err != nil {
		t.Fatal(err)
	}
}
