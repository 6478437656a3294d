package queue_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

// TestRecordsStore: a run's records read back as streamed in, with their size, beside its
// report and apart from it; a put whose reader fails leaves what was stored before; a run
// without records, or whose records were deleted, reads ErrNotFound.
func TestRecordsStore(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	if _, _, err := topo.OpenRecords(ctx, "r1"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("OpenRecords of a run that stored none: %v, want ErrNotFound", err)
	}
	read := func() []byte {
		t.Helper()
		rc, size, err := topo.OpenRecords(ctx, "r1")
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		got, err := io.ReadAll(rc)
		if err != nil || int64(len(got)) != size {
			t.Fatalf("read %d bytes of %d: %v", len(got), size, err)
		}
		return got
	}
	if err := topo.PutReport(ctx, "r1", []byte(`{"run":"r1"}`)); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("records "), 3<<17) // 3 MiB: many chunks
	for _, data := range [][]byte{[]byte("SFRC"), big} {
		if err := topo.PutRecords(ctx, "r1", bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		if got := read(); !bytes.Equal(got, data) {
			t.Fatalf("records read back: %d bytes, want the %d stored", len(got), len(data))
		}
	}
	failing := io.MultiReader(bytes.NewReader(big[:1<<20]), &errReader{errors.New("encoder failed")})
	if err := topo.PutRecords(ctx, "r1", failing); err == nil {
		t.Error("a put whose reader failed succeeded")
	}
	if got := read(); !bytes.Equal(got, big) {
		t.Errorf("after a failed put: %d bytes, want the %d stored before", len(got), len(big))
	}
	if rep, err := topo.GetReport(ctx, "r1"); err != nil || string(rep) != `{"run":"r1"}` {
		t.Errorf("the report beside the records: %q, %v", rep, err)
	}
	if err := topo.DeleteRecords(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := topo.OpenRecords(ctx, "r1"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("OpenRecords after DeleteRecords: %v, want ErrNotFound", err)
	}
	if err := topo.DeleteRecords(ctx, "r1"); err != nil {
		t.Errorf("deleting records twice: %v", err)
	}
	if _, err := topo.GetReport(ctx, "r1"); err != nil {
		t.Errorf("deleting the records deleted the report: %v", err)
	}
}

type errReader struct{ err error }

func (e *errReader) Read([]byte) (int, error) { return 0, e.err }
