package queue_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

func publishResults(t *testing.T, topo *queue.Topology, run string, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := topo.PublishResult(testCtx(t), run, "", fmt.Sprintf("j%d", i), 1, fmt.Appendf(nil, "%s/%d", run, i)); err != nil {
			t.Fatal(err)
		}
	}
}

// caughtUp publishes n results of run and returns an iteration that has read them; the test's
// end stops it.
func caughtUp(t *testing.T, topo *queue.Topology, run string, n int) *queue.ResultIterator {
	t.Helper()
	publishResults(t, topo, run, 0, n)
	it, err := topo.FollowResults(testCtx(t), run)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(it.Stop)
	expectResults(t, it, run, 0, n)
	return it
}

// expectResults reads want results of run in order.
func expectResults(t *testing.T, it *queue.ResultIterator, run string, from, to int) []queue.ResultMsg {
	t.Helper()
	var got []queue.ResultMsg
	for i := from; i < to; i++ {
		r, err := it.Next(testCtx(t))
		if err != nil {
			t.Fatalf("result %d: %v", i, err)
		}
		if want := fmt.Sprintf("%s/%d", run, i); string(r.Data) != want || r.Run != run ||
			r.MsgID != queue.ResultMsgID(run, fmt.Sprintf("j%d", i), 1, r.Data) {
			t.Fatalf("result %d = %q (id %s), want %q", i, r.Data, r.MsgID, want)
		}
		got = append(got, r)
	}
	return got
}

func TestFollowResultsReplaysThenFollows(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	publishResults(t, topo, "run1", 0, 3)
	publishResults(t, topo, "other", 0, 2)

	it, err := topo.FollowResults(ctx, "run1")
	if err != nil {
		t.Fatal(err)
	}
	defer it.Stop()
	if it.Backlog() != 3 {
		t.Errorf("Backlog = %d, want 3", it.Backlog())
	}
	replayed := expectResults(t, it, "run1", 0, 3)
	for i, r := range replayed {
		if want := uint64(2 - i); r.Pending != want {
			t.Errorf("replayed result %d: Pending %d, want %d", i, r.Pending, want)
		}
	}
	// Live: published after the iterator caught up.
	publishResults(t, topo, "other", 2, 3)
	publishResults(t, topo, "run1", 3, 5)
	live := expectResults(t, it, "run1", 3, 5)
	if live[0].Seq <= replayed[2].Seq {
		t.Errorf("sequence went from %d to %d", replayed[2].Seq, live[0].Seq)
	}

	it.Stop()
	if _, err := it.Next(ctx); !errors.Is(err, queue.ErrStopped) {
		t.Errorf("Next after Stop = %v, want ErrStopped", err)
	}
}

// TestFollowResultsRecoversFromALostConsumer deletes the ordered consumer under the iterator, as
// a server that lost it would: the library recreates it from the next sequence, so nothing is
// missed or repeated.
func TestFollowResultsRecoversFromALostConsumer(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	it := caughtUp(t, topo, "run1", 2)

	deleted := 0
	for name := range topo.RawResults().ConsumerNames(ctx).Name() {
		if err := topo.RawResults().DeleteConsumer(ctx, name); err != nil {
			t.Fatal(err)
		}
		deleted++
	}
	if deleted != 1 {
		t.Fatalf("deleted %d consumers, want the iterator's one", deleted)
	}
	publishResults(t, topo, "run1", 2, 5)
	expectResults(t, it, "run1", 2, 5)
}

func TestFollowResultsAcrossServerRestart(t *testing.T) {
	e, _, topo := queuetest.Start(t)
	it := caughtUp(t, topo, "run1", 2)

	if err := e.Restart(); err != nil {
		t.Fatal(err)
	}
	publishResults(t, topo, "run1", 2, 4)
	expectResults(t, it, "run1", 2, 4)
}

func TestFollowResultsRejectsBadRunID(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	if _, err := topo.FollowResults(testCtx(t), "run.>"); err == nil {
		t.Fatal("FollowResults accepted a wildcard run id")
	}
}

// TestFollowResultsReopensAStalledIteration: an iteration that stops delivering without an
// error, as the client library's ordered consumer can after a leader change (nats.go #2063; a
// three-node cluster that lost the jobs stream's leader left a run waiting five minutes for
// eight stored results), is reopened after the quiet period from the last result delivered:
// the stored results arrive, none twice. A quiet iteration with nothing stored is left alone.
func TestFollowResultsReopensAStalledIteration(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	it := caughtUp(t, topo, "run1", 2)
	if err := it.Stall(100 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// Nothing stored: a quiet period is no stall.
	short, cancel := context.WithTimeout(ctx, 350*time.Millisecond)
	if _, err := it.Next(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Next with nothing stored = %v, want the caller's deadline", err)
	}
	cancel()
	if n, _ := it.Reopened(); n != 0 {
		t.Errorf("reopened %d times with nothing stored", n)
	}
	publishResults(t, topo, "run1", 2, 5)
	expectResults(t, it, "run1", 2, 5)
	if n, cause := it.Reopened(); n != 1 || !errors.Is(cause, context.DeadlineExceeded) {
		t.Errorf("reopened %d times (the last for %v), want once for a silence", n, cause)
	}
	publishResults(t, topo, "run1", 5, 6)
	expectResults(t, it, "run1", 5, 6)
	// The library's iterator ending under it (not Stop) is reopened as well.
	it.Break()
	publishResults(t, topo, "run1", 6, 7)
	expectResults(t, it, "run1", 6, 7)
	if n, cause := it.Reopened(); n != 2 || cause == nil {
		t.Errorf("reopened %d times (the last for %v), want twice", n, cause)
	}
	it.Stop()
	if _, err := it.Next(ctx); !errors.Is(err, queue.ErrStopped) {
		t.Errorf("Next after Stop = %v, want ErrStopped", err)
	}
}
