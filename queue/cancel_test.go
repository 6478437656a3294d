package queue_test

import (
	"context"
	"testing"

	"github.com/skillfleet/skillfleet/queue/queuetest"
)

func TestCancelNoticeReachesWatchers(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	got := make(chan string, 4)
	// A context without a deadline, as a worker's: the subscription must not need one.
	stop, err := topo.WatchCancelled(context.Background(), func(run string) { got <- run })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := topo.NotifyCancelled(ctx, "bad.run"); err == nil {
		t.Error("NotifyCancelled accepted a run id with a dot")
	}
	if err := topo.NotifyCancelled(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	select {
	case run := <-got:
		if run != "r1" {
			t.Errorf("notice for %q, want r1", run)
		}
	case <-ctx.Done():
		t.Fatal("no cancel notice arrived")
	}
}
