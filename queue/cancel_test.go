package queue_test

import (
	"context"
	"fmt"
	"slices"
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

// TestWithdrawNoticeReachesWatchers: a withdrawal names its jobs, in batches when they are
// many, and is not a cancel notice (which would stop the whole run on every worker).
func TestWithdrawNoticeReachesWatchers(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	got := make(chan []string, 8)
	stop, err := topo.WatchWithdrawn(context.Background(), func(run string, jobs []string) {
		if run == "r1" {
			got <- jobs
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	cancelled := make(chan string, 1)
	stopC, err := topo.WatchCancelled(context.Background(), func(run string) { cancelled <- run })
	if err != nil {
		t.Fatal(err)
	}
	defer stopC()
	if err := topo.NotifyWithdrawn(ctx, "bad.run", []string{"j"}); err == nil {
		t.Error("NotifyWithdrawn accepted a run id with a dot")
	}
	var jobs []string
	for i := range 3000 {
		jobs = append(jobs, fmt.Sprintf("s/c#%d", i))
	}
	if err := topo.NotifyWithdrawn(ctx, "r1", jobs); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for len(seen) < len(jobs) {
		select {
		case b := <-got:
			seen = append(seen, b...)
		case <-ctx.Done():
			t.Fatalf("%d of %d job ids arrived", len(seen), len(jobs))
		}
	}
	if !slices.Equal(seen, jobs) {
		t.Errorf("job ids arrived as %d ids, not the %d sent in order", len(seen), len(jobs))
	}
	select {
	case run := <-cancelled:
		t.Errorf("a withdrawal reached the cancel watchers as run %q", run)
	default:
	}
}
