package history

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/skillfleet/skillfleet/internal/testutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// TestWriterWaitsForASlowDatabase: a database that is slower than the results arrive (here
// one whose results table another session holds locked, so every write waits) fills the
// queue; then Record waits for room rather than dropping a result, and every result is written
// once the database keeps up again.
func TestWriterWaitsForASlowDatabase(t *testing.T) {
	target := postgresURL(t)
	s := open(t, target)
	other, err := sql.Open("pgx", target)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	hold, err := other.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback()
	if _, err := hold.Exec("LOCK TABLE results IN EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}

	w := NewWriter(s, WriterConfig{BatchRows: 2, QueueRows: 4, Writers: 1, FlushEvery: 10 * time.Millisecond},
		zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
	defer w.Close(context.Background())
	st := status("r1", "alpha", 0, pb.RunState_RUN_STATE_RUNNING, t0)
	const n = 20
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		for i := range n {
			w.Record(result("r1", fmt.Sprint("j", i), "sk", "c", 0, pb.Verdict_VERDICT_PASSED, "", t0), st)
		}
	}()
	testutil.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return len(w.parts[0].in) == cap(w.parts[0].in) }, "the queue fills while the database waits")
	// The writer holds at most a batch being written and one being gathered beside the full
	// queue: far fewer than n.
	select {
	case <-recorded:
		t.Errorf("every Record returned while the database could not keep up (dropped %d)", w.Dropped())
	default:
	}
	if d := w.Dropped(); d != 0 {
		t.Errorf("%d results dropped while the database was slow", d)
	}

	if err := hold.Rollback(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, 10*time.Millisecond, func() bool {
		select {
		case <-recorded:
			return count(t, s, "r1") == n
		default:
			return false
		}
	}, "every result written once the database keeps up")
	if d := w.Dropped(); d != 0 {
		t.Errorf("%d results dropped", d)
	}
}

// TestWriterNamesEveryRunThatLostARow: while the database refuses writes a full queue drops
// results, and the log names every run that lost one (its first loss), so that the runs to
// backfill are known; a count alone, or a run named only at some of the drops, would not say.
func TestWriterNamesEveryRunThatLostARow(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "h.db"))
	s.Close() // every write fails
	core, logs := observer.New(zap.WarnLevel)
	w := NewWriter(s, WriterConfig{BatchRows: 2, QueueRows: 4, MinBackoff: time.Hour}, zap.New(core))
	// r1 fills the failing batch and the queue and loses the rest; r2's one result is the
	// fifteenth lost.
	for _, run := range []struct {
		id string
		n  int
	}{{"r1", 20}, {"r2", 1}} {
		st := status(run.id, "alpha", 0, pb.RunState_RUN_STATE_RUNNING, t0)
		for i := range run.n {
			w.Record(result(run.id, fmt.Sprint("j", i), "sk", "c", 0, pb.Verdict_VERDICT_PASSED, "", t0), st)
		}
	}
	c, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	w.Close(c)
	if w.Dropped() < 15 {
		t.Fatalf("%d dropped, want at least 15", w.Dropped())
	}
	for _, run := range []string{"r1", "r2"} {
		if logs.FilterField(zap.String("run", run)).Len() == 0 {
			t.Errorf("no log line names run %s, which lost results", run)
		}
	}
}
