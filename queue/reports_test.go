package queue_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/klauspost/compress/s2"

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
	// A report's cases repeat their assertions and reasons: what is stored is a fraction.
	rep := []byte(`{"cases":[` + strings.Repeat(`{"status":"passed","assertions":[{"type":"output_contains","passed":true}]},`, 20000) + `{}]}`)
	if err := topo.PutReport(ctx, "r2", rep); err != nil {
		t.Fatal(err)
	}
	if info, err := topo.RawJS().ObjectStore(ctx, queue.ReportsBucket); err != nil {
		t.Fatal(err)
	} else if obj, err := info.GetInfo(ctx, "r2"); err != nil || obj.Size*10 > uint64(len(rep)) {
		t.Errorf("a report of %d bytes is stored as %+v (%v), want a tenth of it or less", len(rep), obj, err)
	}
	if got, err := topo.GetReport(ctx, "r2"); err != nil || !bytes.Equal(got, rep) {
		t.Errorf("GetReport of a compressed report = %d bytes (%v), want the %d put", len(got), err, len(rep))
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

// TestStoredReportsOfEveryForm: a report an older coordinator stored as plain JSON reads as
// it is; a compressed one that is damaged, or whose block claims more than a report may hold,
// is an error, and the claim is refused before it is allocated.
func TestStoredReportsOfEveryForm(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	store, err := topo.RawJS().ObjectStore(ctx, queue.ReportsBucket)
	if err != nil {
		t.Fatal(err)
	}
	huge := []byte{0xff, 0xff, 0xff, 0xff, 0x0f} // a varint block length of 4 GiB - 1
	for _, tc := range []struct {
		name   string
		stored []byte
		want   []byte // nil: an error
	}{
		{"plain JSON of an older coordinator", []byte(`{"run":"r"}`), []byte(`{"run":"r"}`)},
		{"compressed", append([]byte("skillfleet-report/s2\n"), s2.Encode(nil, []byte(`{"run":"r"}`))...), []byte(`{"run":"r"}`)},
		{"damaged", append([]byte("skillfleet-report/s2\n"), 0x20, 0x01, 0x02), nil},
		{"claims 4 GiB", append([]byte("skillfleet-report/s2\n"), huge...), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := store.PutBytes(ctx, "r", tc.stored); err != nil {
				t.Fatal(err)
			}
			got, err := topo.GetReport(ctx, "r")
			switch {
			case tc.want == nil && err == nil:
				t.Errorf("GetReport = %q, want an error", got)
			case tc.want != nil && (err != nil || !bytes.Equal(got, tc.want)):
				t.Errorf("GetReport = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
