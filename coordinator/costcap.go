package coordinator

import (
	"context"
	"fmt"
	"math"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// CostCapReason starts the reason of a run its cost cap stopped, and so the reason of each
// case it skipped.
const CostCapReason = "cost cap"

// setInFlight marks job i in flight or not, keeping inFlightN.
func (r *run) setInFlight(i int, v bool) {
	if r.inFlight[i] == v {
		return
	}
	r.inFlight[i] = v
	if v {
		r.inFlightN++
	} else {
		r.inFlightN--
	}
}

// costSoFar is what the run's counted results cost and the mean cost of a finished job; ok is
// false before any job finished, when nothing says what a job costs.
func (r *run) costSoFar() (spent, mean float64, ok bool) {
	spent = r.builder.Usage().Cost
	done := r.builder.JobsDone()
	if done == 0 {
		return spent, 0, false
	}
	return spent, spent / float64(done), true
}

// costCapReached reports whether the run must stop at its cost cap, and the reason to stop
// with: its counted spend reached the cap, or nothing is in flight and the next job is
// expected (at the mean cost of a finished job) to pass it, so nothing more can be afforded.
//
// Jobs in flight while the spend is under the cap run on: each was dispatched only while the
// spend plus what the jobs in flight were expected to spend stayed within the cap (costRoom),
// and cancelling one would throw away what it already spent without a verdict for it.
func (r *run) costCapReached() (bool, string) {
	limit := r.spec.GetMaxCost()
	if limit <= 0 {
		return false, ""
	}
	spent, mean, ok := r.costSoFar()
	switch {
	case spent >= limit:
		return true, r.costCapReason(fmt.Sprintf("%d jobs in flight cancelled", r.inFlightN))
	case ok && mean > 0 && r.inFlightN == 0 && spent+mean > limit && !r.complete():
		return true, r.costCapReason(fmt.Sprintf("the next job is expected to cost $%.4f", mean))
	}
	return false, ""
}

// costRoom is how many more jobs the cost cap lets the run dispatch: once the spend plus what
// the jobs in flight are expected to spend (the mean cost of a finished job each) reaches the
// cap, nothing more is dispatched.
// capped is false when the run has no cap, or nothing says yet what a job costs (no job
// finished, or every one was free): the first jobs out are what a cap can overshoot by.
func (r *run) costRoom() (room int, capped bool) {
	limit := r.spec.GetMaxCost()
	if limit <= 0 {
		return 0, false
	}
	spent, mean, ok := r.costSoFar()
	if !ok || mean <= 0 {
		return 0, false
	}
	fits := math.Floor((limit - spent) / mean)
	return int(min(max(fits, -1), 1<<30)) - r.inFlightN, true
}

// costCapReason words a stop at the cost cap: what was spent of it, and why now.
func (r *run) costCapReason(why string) string {
	spent, _, _ := r.costSoFar()
	return fmt.Sprintf("%s: spent $%.4f of $%.2f (%s); the report is partial", CostCapReason, spent, r.spec.GetMaxCost(), why)
}

// stopAtCostCap ends the run at its cost cap through the cancel path: queued jobs removed,
// running ones cancelled, unfinished cases skipped with the reason, the run cancelled and
// marked cost_capped.
func (c *Coordinator) stopAtCostCap(ctx context.Context, r *run, reason string) {
	r.mu.Lock()
	r.status.CostCapped = true
	r.mu.Unlock()
	c.finish(ctx, r, pb.RunState_RUN_STATE_CANCELLED, reason)
}
