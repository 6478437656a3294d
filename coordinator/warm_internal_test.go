package coordinator

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue/queuetest"
	"github.com/skillfleet/skillfleet/report"
)

// TestWarmReportsNewestFirst: a starting coordinator loads the stored reports of the runs that
// finished last, newest first, while its report cache has room, and none that would make it
// evict one it loaded; runs still going and runs without a stored report are left alone.
func TestWarmReportsNewestFirst(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	c, err := New(Config{DataDir: t.TempDir(), KeepReportCases: 25}, Deps{Queue: topo, Runs: topo.Runs(), Bundles: topo})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	at := time.Unix(1_800_000_000, 0)
	var statuses []*pb.RunStatus
	for i, cases := range []int{10, 10, 10, 3} { // r0 oldest; r3 newest but still running
		id := fmt.Sprintf("r%d", i)
		rep := report.Report{Run: id, Cases: make([]report.Case, cases)}
		if err := c.storeReport(ctx, id, rep); err != nil {
			t.Fatal(err)
		}
		st := &pb.RunStatus{Id: id, State: pb.RunState_RUN_STATE_COMPLETED, Cases: &pb.Counts{Total: int32(cases)}, ReportStored: true,
			FinishedAt: timestamppb.New(at.Add(time.Duration(i) * time.Hour))}
		if i == 3 {
			st.State, st.FinishedAt = pb.RunState_RUN_STATE_RUNNING, nil
		}
		statuses = append(statuses, st)
	}
	statuses = append(statuses, &pb.RunStatus{Id: "r4", State: pb.RunState_RUN_STATE_COMPLETED, Cases: &pb.Counts{Total: 1}, FinishedAt: timestamppb.New(at.Add(9 * time.Hour))})
	c.warmReports(ctx, statuses)
	for id, want := range map[string]bool{"r0": false, "r1": true, "r2": true, "r3": false, "r4": false} {
		if _, got := c.finished.get(id); got != want {
			t.Errorf("report of %s cached: %v, want %v", id, got, want)
		}
	}
}
