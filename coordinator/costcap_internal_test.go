package coordinator

import (
	"fmt"
	"strings"
	"testing"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
)

// costRun is a run of one case of 20 epochs capped at limit, with done of its jobs finished
// at cost each and inFlight more in flight.
func costRun(t *testing.T, limit float64, done int, cost float64, inFlight int) *run {
	t.Helper()
	const epochs = 20
	r := &run{
		spec:     &pb.RunSpec{Id: "r", MaxCost: limit},
		builder:  report.NewBuilder("r", []report.PlannedCase{{Skill: "s", Case: "c", Epochs: epochs}}),
		inFlight: make([]bool, epochs),
	}
	for i := range done {
		r.builder.Add(&pb.Result{JobId: fmt.Sprintf("j%d", i), RunId: "r", Skill: "s", CaseName: "c", Epoch: int32(i + 1),
			Verdict: pb.Verdict_VERDICT_PASSED, Usage: &pb.Usage{Cost: cost}})
	}
	for i := range inFlight {
		r.setInFlight(done+i, true)
	}
	if inFlight > 0 {
		r.setInFlight(done, true) // marking twice counts once
	}
	if r.inFlightN != inFlight {
		t.Fatalf("in flight %d, want %d", r.inFlightN, inFlight)
	}
	return r
}

// TestCostCap: the arithmetic of the cap, worked by hand. room = ⌊(cap − spent)/mean⌋ − in
// flight; the run stops when spent ≥ cap, or nothing is in flight and spent + mean > cap.
func TestCostCap(t *testing.T) {
	tests := []struct {
		name         string
		limit        float64
		done         int
		cost         float64
		inFlight     int
		room         int
		capped, stop bool
		reason       string
	}{
		{name: "no cap", limit: 0, done: 3, cost: 1, inFlight: 2},
		// Nothing says yet what a job costs: the lane's share decides.
		{name: "no result yet", limit: 5, inFlight: 8},
		// Free jobs (command cases, unpriced models) are never held back.
		{name: "free jobs", limit: 5, done: 3, cost: 0, inFlight: 2},
		// spent 2, mean 1: ⌊3/1⌋ − 1 = 2 more.
		{name: "room", limit: 5, done: 2, cost: 1, inFlight: 1, room: 2, capped: true},
		// spent 3, mean 1, 2 in flight: ⌊2/1⌋ − 2 = 0: nothing more, but the two run on.
		{name: "full", limit: 5, done: 3, cost: 1, inFlight: 2, room: 0, capped: true},
		// spent 4.5 of 5, mean 1.5, nothing in flight: the next job would pass the cap.
		{name: "next would pass", limit: 5, done: 3, cost: 1.5, room: 0, capped: true, stop: true, reason: "the next job is expected to cost $1.5000"},
		// spent 5 of 5 with one in flight: stop, cancelling it.
		{name: "spent", limit: 5, done: 5, cost: 1, inFlight: 1, room: -1, capped: true, stop: true, reason: "1 jobs in flight cancelled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := costRun(t, tt.limit, tt.done, tt.cost, tt.inFlight)
			room, capped := r.costRoom()
			if capped != tt.capped || (capped && room != tt.room) {
				t.Errorf("room %d, capped %v; want %d, %v", room, capped, tt.room, tt.capped)
			}
			stop, reason := r.costCapReached()
			if stop != tt.stop || !strings.Contains(reason, tt.reason) || (stop && !strings.HasPrefix(reason, CostCapReason+": spent $")) {
				t.Errorf("stop %v %q; want %v with %q", stop, reason, tt.stop, tt.reason)
			}
		})
	}
}
