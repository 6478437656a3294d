package queue_test

import (
	"bytes"
	"context"
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
// and a new run's results could no longer be followed. Each kind of read is done past the
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
