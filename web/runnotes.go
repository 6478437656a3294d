package web

import (
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
)

// partialView is the banner of a run its cost cap stopped: what it spent of its cap, and how
// many of its cases were skipped for it. A reader who sees only the verdicts would take them
// for the whole suite's answer.
type partialView struct {
	Spent, MaxCost float64
	// Skipped counts the with_skill cases skipped (the cap's, and any the run's end left).
	Skipped int
}

// epochsView is what curtailment and `runs: auto` did to a run's epochs: Run of Planned ran,
// NotNeeded did not because their cases' verdicts were settled without them.
type epochsView struct {
	Run, Planned, NotNeeded int
	// Curtailed counts the cases stopped before their planned epochs.
	Curtailed int
	// Sequential counts the `runs: auto` cases, Undecided those that reached max_runs.
	Sequential, Undecided int
	// Withdrawn is the status's count of jobs taken back from the queue (or never published).
	Withdrawn int32
}

// partialOf is the banner of a cost-capped run, or nil. The report's account (the spend of
// its counted results) is preferred; a report written before it leaves the status's.
func partialOf(st *pb.RunStatus, rep *report.Report) *partialView {
	var p *partialView
	switch {
	case rep.Partial != nil:
		p = &partialView{Spent: rep.Partial.Spent, MaxCost: rep.Partial.MaxCost}
	case st.GetCostCapped():
		p = &partialView{Spent: st.GetSpent(), MaxCost: st.GetSpec().GetMaxCost()}
	default:
		return nil
	}
	p.Skipped = rep.Summary.Skipped
	return p
}

// epochsOf sums what curtailment and `runs: auto` did to a report's epochs; nil when neither
// touched any case (every planned epoch ran, or the report predates the counts).
func epochsOf(st *pb.RunStatus, rep *report.Report) *epochsView {
	e := epochsView{Withdrawn: st.GetWithdrawnJobs()}
	for i := range rep.Cases {
		c := &rep.Cases[i]
		if c.EpochsPlanned == 0 {
			continue
		}
		e.Run += c.EpochsRun
		e.Planned += c.EpochsPlanned
		if n := c.NotNeeded(); n > 0 {
			e.NotNeeded += n
			e.Curtailed++
		}
		if c.Sequential {
			e.Sequential++
		}
		if c.Undecided {
			e.Undecided++
		}
	}
	if e.Curtailed == 0 && e.Sequential == 0 && e.Withdrawn == 0 {
		return nil
	}
	return &e
}
