package queue_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

// TestReadsPastTheServersConsumerBound: nats-server refuses a stream's 1,001st consumer by
// default, and a stopped ordered consumer used to stay on the server for 5 idle minutes. So
// 1,000 case pages, result exports or bundle reads in 5 minutes refused every further one,
// and a new run's results could no longer be followed. The run store's listings (the runs
// page, the schedule loop) watch the bucket the same way. Each kind of read is done past the
// bound here, one after another as a viewer or the workers would, and every one must work and
// leave nothing behind.
func TestReadsPastTheServersConsumerBound(t *testing.T) {
	_, conn, topo := queuetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	reads := server.JSDefaultMaxConsumersPerStream + 50
	if err := topo.PublishResult(ctx, "run1", "ca", "j1", 1, []byte("a result")); err != nil {
		t.Fatal(err)
	}
	if _, err := topo.Runs().Put(ctx, "schedule.a.nightly", []byte("a schedule")); err != nil {
		t.Fatal(err)
	}
	bundle := bytes.Repeat([]byte("bundle "), 1000)
	digest, err := topo.PutBundle(ctx, bytes.NewReader(bundle))
	if err != nil {
		t.Fatal(err)
	}
	worker, err := queue.OpenWorker(ctx, conn, queue.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		stream string
		read   func() error
	}{
		{"a case's results", queue.ResultsStream, func() error {
			n := 0
			err := topo.ReadCaseResults(ctx, "run1", "ca", func(queue.ResultMsg) error { n++; return nil })
			if err == nil && n != 1 {
				t.Fatalf("a case read gave %d results, want 1", n)
			}
			return err
		}},
		{"a run's results, followed then stopped", queue.ResultsStream, func() error {
			it, err := topo.FollowResults(ctx, "run1")
			if err != nil {
				return err
			}
			defer it.Stop()
			_, err = it.Next(ctx)
			return err
		}},
		{"a bundle, by a worker", "OBJ_" + queue.BundlesBucket, func() error {
			return worker.GetBundle(ctx, digest, io.Discard)
		}},
		{"the stored runs, listed", "KV_" + queue.RunsBucket, func() error {
			return topo.Runs().Each(ctx, func(string, []byte) error { return nil })
		}},
		{"the schedules, listed", "KV_" + queue.RunsBucket, func() error {
			_, err := topo.Runs().KeysUnder(ctx, "schedule.")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range reads {
				if err := tc.read(); err != nil {
					t.Fatalf("read %d of %d: %v (%d consumers on %s)", i+1, reads, err, streamConsumers(t, topo, tc.stream), tc.stream)
				}
			}
			if n := streamConsumers(t, topo, tc.stream); n != 0 {
				t.Errorf("%d consumers left on %s after %d reads ended, want 0", n, tc.stream, reads)
			}
		})
	}
}

// TestFollowsMoreRunsThanTheServersDefaultBound: each unfinished run's results are followed
// by a consumer of their own, and nats-server's default refuses a stream's 1,001st: an
// organisation's 1,001st unfinished run failed with "cannot read results". The results
// stream sets its own bound; 1,050 runs are followed at once here.
func TestFollowsMoreRunsThanTheServersDefaultBound(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	runs := server.JSDefaultMaxConsumersPerStream + 50
	var its []*queue.ResultIterator
	defer func() {
		for _, it := range its {
			it.Stop()
		}
	}()
	for i := range runs {
		it, err := topo.FollowResults(ctx, fmt.Sprintf("run%d", i))
		if err != nil {
			t.Fatalf("following run %d of %d: %v", i+1, runs, err)
		}
		its = append(its, it)
	}
	if n := streamConsumers(t, topo, queue.ResultsStream); n != runs {
		t.Errorf("%d consumers on the results stream while %d runs are followed", n, runs)
	}
	// The last one followed still gets its results.
	if err := topo.PublishResult(ctx, fmt.Sprintf("run%d", runs-1), "ca", "j1", 1, []byte("late")); err != nil {
		t.Fatal(err)
	}
	m, err := its[runs-1].Next(ctx)
	if err != nil || string(m.Data) != "late" {
		t.Errorf("the last run followed: %q, %v; want its result", m.Data, err)
	}
}
