package fleet

import (
	"context"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/skillfleet/skillfleet/flaky"
	"github.com/skillfleet/skillfleet/history"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
	"github.com/skillfleet/skillfleet/worker"
)

// A finished run's report, as the coordinator serves it, says what changed since the previous
// run of its suite and lane, read from the history; a listed case that fails does not fail
// the run.
func TestReportSaysWhatChanged(t *testing.T) {
	var failing atomic.Value
	failing.Store("usage-error")
	exec := newScripted()
	exec.fail = func(j *pb.Job) bool { return j.GetCaseName() == failing.Load().(string) }
	f, err := StartInProcess(context.Background(), InProcessConfig{
		DataDir: t.TempDir(), Workers: 2, Slots: 2, Queue: testQueue(), Executor: exec,
		Worker: worker.Config{RetryDelay: 50 * time.Millisecond, FetchWait: 100 * time.Millisecond, DrainGrace: 5 * time.Second},
		// A flush interval far away: the report must not depend on the writer's timing.
		History:    HistoryConfig{Target: filepath.Join(t.TempDir(), "history.db"), Writer: history.WriterConfig{FlushEvery: time.Hour}},
		Quarantine: flaky.Policy{Cells: []flaky.Cell{{Case: "default_is_dev"}}},
		Log:        zaptest.NewLogger(t).Named(t.Name()),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(context.Background())
	spec := func() *pb.RunSpec { return &pb.RunSpec{Name: "examples", Priority: pb.Priority_PRIORITY_SCHEDULED} }

	first := submit(t, f.Coordinator, spec())
	wait(t, f.Coordinator, first.GetId())
	rep, err := f.Coordinator.Report(context.Background(), first.GetId())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Changes == nil || rep.Changes.Previous != nil || rep.Changes.Note == "" {
		t.Fatalf("first run's section %+v, want no previous run", rep.Changes)
	}

	failing.Store("default_is_dev")
	second := submit(t, f.Coordinator, spec())
	wait(t, f.Coordinator, second.GetId())
	rep, err = f.Coordinator.Report(context.Background(), second.GetId())
	if err != nil {
		t.Fatal(err)
	}
	ch := rep.Changes
	if ch == nil || ch.Previous == nil || *ch.Previous != first.GetId() {
		t.Fatalf("second run's section %+v, want the first run as previous", ch)
	}
	var newly, fixed []string
	for _, c := range ch.NewlyFailing {
		newly = append(newly, c.Case)
	}
	for _, c := range ch.Fixed {
		fixed = append(fixed, c.Case)
	}
	if !slices.Equal(newly, []string{"default_is_dev"}) || !slices.Equal(fixed, []string{"usage-error"}) {
		t.Errorf("newly failing %v, fixed %v; want [default_is_dev] and [usage-error]", newly, fixed)
	}
	if ch.Stats == nil || ch.Stats.Cases == 0 {
		t.Errorf("no paired statistics: %+v", ch.Stats)
	}
	var quarantined []report.Case
	for _, c := range rep.Cases {
		if c.Quarantined != "" {
			quarantined = append(quarantined, c)
		}
	}
	if len(quarantined) != 1 || quarantined[0].Status != report.StatusFailed || rep.Summary.Quarantined != 1 || rep.Summary.Failing() {
		t.Errorf("quarantined %+v, summary %+v: the listed failing case must not fail the run", quarantined, rep.Summary)
	}
	// The flaky list answers from the same history: two runs are too few for a label.
	cells, err := (&ReportPolicy{History: f.History}).FlakyCells(context.Background(), "", "examples", "scheduled")
	if err != nil || len(cells) != 0 {
		t.Errorf("flaky cells after two runs: %+v, %v", cells, err)
	}
}
