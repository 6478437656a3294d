package fleet

import (
	"bytes"
	"context"
	"errors"

	"github.com/skillfleet/skillfleet/history"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
)

// ArchiveRun keeps a finished run's status, report (the JSON `runs report --format json`
// gives) and accepted results in the history (history.Store.WriteArchive), each result's
// documents resolved inline first: they live in the fleet's embedded store, which goes with
// the process. It is how `skillfleet test` leaves a run that runs, compare and
// --baseline-run can read without a coordinator.
func (f *InProcess) ArchiveRun(ctx context.Context, id string, limits history.ArchiveLimits) (history.ArchiveStats, error) {
	if f.History == nil {
		return history.ArchiveStats{}, errors.New("fleet: no history to archive the run in")
	}
	st, err := f.Coordinator.Status(ctx, id)
	if err != nil {
		return history.ArchiveStats{}, err
	}
	rep, err := f.Coordinator.Report(ctx, id)
	if err != nil {
		return history.ArchiveStats{}, err
	}
	var doc bytes.Buffer
	if err := report.WriteJSON(&doc, rep); err != nil {
		return history.ArchiveStats{}, err
	}
	results := func(fn func(*pb.Result) error) error {
		return f.Coordinator.AcceptedResults(ctx, id, func(r *pb.Result) error {
			f.Coordinator.ResolveDocuments(ctx, r)
			return fn(r)
		})
	}
	return f.History.Store.WriteArchive(ctx, st, doc.Bytes(), results, limits)
}
