package queue_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

// TestResultsStreamRefusesWhenFull: a flood into the results stream (anyone with a worker's
// credentials can publish there) is refused once the stream is full, and the results stored
// before it stay (issue 25: the stream discarded the oldest, a finished run's among them).
func TestResultsStreamRefusesWhenFull(t *testing.T) {
	cfg := queue.DefaultConfig()
	cfg.ResultsMaxBytes = 64 << 10
	_, _, topo := queuetest.StartConfig(t, cfg, queue.EmbeddedConfig{})
	ctx := testCtx(t)
	publishResults(t, topo, "victim", 0, 2)

	junk := bytes.Repeat([]byte("x"), 4<<10)
	var refused error
	for i := 0; refused == nil; i++ {
		if i > 100 {
			t.Fatal("100 results of 4 KB stored in a stream of 64 KB: nothing refused")
		}
		refused = topo.PublishResult(ctx, "flood", "", fmt.Sprintf("j%d", i), 1, append(junk, byte(i)))
	}
	it, err := topo.FollowResults(ctx, "victim")
	if err != nil {
		t.Fatal(err)
	}
	defer it.Stop()
	if it.Backlog() != 2 {
		t.Fatalf("the victim run has %d results after the flood (%v), want its 2", it.Backlog(), refused)
	}
	expectResults(t, it, "victim", 0, 2)

	used, limit, err := topo.ResultsUsage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if limit != 64<<10 || used > limit || used < limit*9/10 {
		t.Errorf("ResultsUsage = %d of %d, want nearly all of %d", used, limit, 64<<10)
	}
}

// TestReportStore: a stored report reads back as stored, replaced by a later put; a run
// without one, or whose report was deleted, reads ErrNotFound.
func TestReportStore(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	if _, err := topo.GetReport(ctx, "r1"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("GetReport of a run that stored none: %v, want ErrNotFound", err)
	}
	big := bytes.Repeat([]byte("r"), 3<<20) // over a message: the store chunks it
	for _, data := range [][]byte{[]byte(`{"run":"r1"}`), big} {
		if err := topo.PutReport(ctx, "r1", data); err != nil {
			t.Fatal(err)
		}
		got, err := topo.GetReport(ctx, "r1")
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("GetReport = %d bytes (%v), want the %d stored", len(got), err, len(data))
		}
	}
	if err := topo.DeleteReport(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if _, err := topo.GetReport(ctx, "r1"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("GetReport after DeleteReport: %v, want ErrNotFound", err)
	}
	if err := topo.DeleteReport(ctx, "r1"); err != nil {
		t.Errorf("deleting a report twice: %v", err)
	}
}
