package fleet

import (
	"context"

	"github.com/skillfleet/skillfleet/changes"
	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/flaky"
	"github.com/skillfleet/skillfleet/history"
	"github.com/skillfleet/skillfleet/internal/tenant"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
)

// ReportPolicy is what a finished run's report gets beyond its verdicts: what changed and the
// flaky labels from the history (when one is kept), and the quarantine policy. It is the
// coordinator's Changes.
type ReportPolicy struct {
	// History is the open history; nil leaves the section out (the quarantine list still
	// applies, and "--quarantine flaky" finds nothing flaky).
	History *History
	// Flaky tunes the labels (zero: flaky's defaults).
	Flaky flaky.Config
	// Quarantine is the policy; the zero value quarantines nothing.
	Quarantine flaky.Policy
}

var (
	_ coordinator.Changes = (*ReportPolicy)(nil)
	_ coordinator.Flaky   = (*ReportPolicy)(nil)
)

// Active reports whether the policy changes reports at all.
func (p *ReportPolicy) Active() bool {
	return p.History != nil || p.Quarantine.Flaky || len(p.Quarantine.Cells) > 0
}

// Annotate adds what changed, the flaky labels and the quarantine marks to a finished run's
// report (coordinator.Changes). The run's results are written to the history first: they are
// queued, not written, as they arrive.
func (p *ReportPolicy) Annotate(ctx context.Context, st *pb.RunStatus, rep *report.Report) error {
	spec := st.GetSpec()
	var err error
	if p.History != nil {
		err = p.annotate(ctx, st, rep)
	}
	if p.Quarantine.Flaky || len(p.Quarantine.Cells) > 0 {
		changes.Quarantine(rep, spec.GetName(), flaky.NewQuarantine(p.Quarantine))
	}
	return err
}

func (p *ReportPolicy) annotate(ctx context.Context, st *pb.RunStatus, rep *report.Report) error {
	if err := p.History.Writer.Flush(ctx); err != nil {
		return err
	}
	id := st.GetId()
	if id == "" {
		id = st.GetSpec().GetId()
	}
	rows, err := p.History.Store.RunResults(ctx, id)
	if err != nil {
		return err
	}
	spec := st.GetSpec()
	run := changes.Run{ID: id, Team: tenant.Team(spec.GetTeam()), Suite: spec.GetName(), Lane: history.Lane(spec.GetPriority()), Created: spec.GetCreatedAt().AsTime()}
	return changes.Annotate(ctx, p.History.Store, run, rows, rep, p.Flaky)
}

// FlakyCells lists a team's suite's flaky cells from the history (coordinator.Flaky).
func (p *ReportPolicy) FlakyCells(ctx context.Context, team, suite, lane string) ([]report.FlakyCell, error) {
	return changes.FlakyCells(ctx, p.History.Store, team, suite, lane, p.Flaky)
}

// wire sets the coordinator's Changes and Flaky from the policy.
func (p *ReportPolicy) wire(deps *coordinator.Deps) {
	if p.Active() {
		deps.Changes = p
	}
	if p.History != nil {
		deps.Flaky = p
	}
}
