package coordinator_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/coordinator"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue/queuetest"
	"github.com/skillfleet/skillfleet/report"
)

// failingChanges fails as a database driver does, naming its host and user.
type failingChanges struct{}

func (failingChanges) Annotate(context.Context, *pb.RunStatus, *report.Report) error {
	return errors.New(`failed to connect to host=db.internal user=skillfleet database=history: FATAL: password authentication failed`)
}

// TestHistoryErrorInReportIsASentence: when the history cannot be read for a finished run's
// report, the report (which the API and the viewer show) says so in a sentence, without the
// driver's error.
func TestHistoryErrorInReportIsASentence(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := context.Background()
	c, err := coordinator.New(coordinator.Config{DataDir: t.TempDir()}, coordinator.Deps{Queue: topo, Runs: topo.Runs(), Bundles: topo, Changes: failingChanges{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(ctx) })
	st, err := c.Submit(ctx, bytes.NewReader(twoCaseSuite(t)), &pb.RunSpec{})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		job := takeJob(t, topo)
		publishResult(t, topo, job, 1, pb.Verdict_VERDICT_PASSED, job.GetSecret())
	}
	eventually(t, "the run to finish", func() bool {
		s, err := c.Status(ctx, st.GetId())
		return err == nil && s.GetState() == pb.RunState_RUN_STATE_COMPLETED
	})
	rep, err := c.Report(ctx, st.GetId())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Changes == nil || !strings.HasPrefix(rep.Changes.Note, "the history could not be read") {
		t.Fatalf("changes %+v: want a note that the history could not be read", rep.Changes)
	}
	if strings.Contains(rep.Changes.Note, "db.internal") || strings.Contains(rep.Changes.Note, "password") {
		t.Errorf("the report shows the driver's error: %q", rep.Changes.Note)
	}
}
