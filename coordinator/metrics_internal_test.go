package coordinator

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// TestSuiteGaugesAreBounded: each suite and lane gets its last pass ratio; the gauges keep at
// most maxSuiteSeries suites, dropping the one that finished least recently; a run that did not
// complete updates only the time.
func TestSuiteGaugesAreBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	finish := func(suite string, prio pb.Priority, state pb.RunState, passed, total int32) {
		m.finished(&pb.RunStatus{State: state, Spec: &pb.RunSpec{Name: suite, Priority: prio},
			FinishedAt: timestamppb.New(time.Unix(1_800_000_000, 0)), Cases: &pb.Counts{Passed: passed, Total: total}}, time.Second)
	}
	finish("nightly", pb.Priority_PRIORITY_SCHEDULED, pb.RunState_RUN_STATE_COMPLETED, 3, 4)
	finish("nightly", pb.Priority_PRIORITY_ON_DEMAND, pb.RunState_RUN_STATE_COMPLETED, 1, 4)
	if got := testutil.ToFloat64(m.suitePass.WithLabelValues("nightly", "scheduled")); got != 0.75 {
		t.Errorf("nightly/scheduled pass ratio %v, want 0.75", got)
	}
	finish("nightly", pb.Priority_PRIORITY_SCHEDULED, pb.RunState_RUN_STATE_CANCELLED, 0, 4)
	if got := testutil.ToFloat64(m.suitePass.WithLabelValues("nightly", "scheduled")); got != 0.75 {
		t.Errorf("a cancelled run changed the pass ratio to %v", got)
	}
	for i := range maxSuiteSeries {
		finish(fmt.Sprintf("suite-%d", i), pb.Priority_PRIORITY_ON_DEMAND, pb.RunState_RUN_STATE_COMPLETED, 1, 1)
	}
	if n := testutil.CollectAndCount(m.suiteLast); n != maxSuiteSeries {
		t.Errorf("%d suite series, want %d", n, maxSuiteSeries)
	}
	// nightly/scheduled finished after nightly/ondemand: the ondemand pair went first.
	if n := testutil.CollectAndCount(m.suitePass); n != maxSuiteSeries {
		t.Errorf("%d pass-ratio series, want %d", n, maxSuiteSeries)
	}
	for _, lv := range [][2]string{{"nightly", "ondemand"}, {"nightly", "scheduled"}} {
		if m.suiteLast.DeleteLabelValues(lv[0], lv[1]) {
			t.Errorf("%v still has a series after %d newer suites", lv, maxSuiteSeries)
		}
	}
}
