package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/fleet"
	"github.com/skillfleet/skillfleet/history"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	runreport "github.com/skillfleet/skillfleet/report"
)

// runReader is what runs, compare and --baseline-run read of runs: a coordinator over HTTP
// (remoteRuns) or, without one, the local history `skillfleet test` keeps (localRuns).
type runReader interface {
	// List returns the runs, newest first.
	List(ctx context.Context) ([]*pb.RunStatus, error)
	Status(ctx context.Context, id string) (*pb.RunStatus, error)
	Report(ctx context.Context, id string) (runreport.Report, error)
	// WriteReport writes a run's report in format: json, junit or text.
	WriteReport(ctx context.Context, id, format string, w io.Writer) error
	// Trajectory writes one job's ATIF trajectory (JSON).
	Trajectory(ctx context.Context, id string, q coordinator.TrajectoryQuery, w io.Writer) error
	// Results calls fn with each result the run's report counts, documents inline.
	Results(ctx context.Context, id string, fn func(*pb.Result) error) error
	// Verdicts is Results for readers of verdicts only: documents may stay out.
	Verdicts(ctx context.Context, id string, fn func(*pb.Result) error) error
}

var (
	_ runReader = remoteRuns{}
	_ runReader = localRuns{}
)

// WriteReport copies the coordinator's rendering of a run's report.
func (r remoteRuns) WriteReport(ctx context.Context, id, format string, w io.Writer) error {
	return r.Client.Report(ctx, id, format, w)
}

// Verdicts reads a run's counted results without resolving their documents: of a run of a
// million jobs, the documents are most of what would cross the wire and be decoded.
func (r remoteRuns) Verdicts(ctx context.Context, id string, fn func(*pb.Result) error) error {
	return r.Client.ResultsOf(ctx, id, coordinator.ResultsQuery{}, fn)
}

// given reports whether a coordinator was named, by --coordinator or $SKILLFLEET_COORDINATOR.
func (r *remoteFlags) given(cmd *cobra.Command) bool {
	return cmd.Flags().Changed("coordinator") || os.Getenv("SKILLFLEET_COORDINATOR") != ""
}

// reader is the coordinator named, or else the local history (--history); close releases it.
func (r *remoteFlags) reader(cmd *cobra.Command) (rr runReader, close func(), err error) {
	if r.given(cmd) {
		client, err := r.client(cmd)
		if err != nil {
			return nil, nil, err
		}
		return remoteRuns{client}, func() {}, nil
	}
	store, err := openLocalHistory(cmd.Context(), r.history)
	if err != nil {
		return nil, nil, err
	}
	return localRuns{store}, func() { _ = store.Close() }, nil
}

// openLocalHistory opens the history `skillfleet test` writes, to read runs from it: target
// as test's --history takes it ("" its default file). A missing file is not made.
func openLocalHistory(ctx context.Context, target string) (*history.Store, error) {
	switch {
	case target == fleet.HistoryOff:
		return nil, usageErrorf("--history off: without --coordinator, runs are read from the local history")
	case target == "":
		path, err := fleet.DefaultLocalHistory()
		if err != nil {
			return nil, failf("%v", err)
		}
		target = path
	}
	if err := fleet.RefuseHistoryPassword(target, "$SKILLFLEET_HISTORY_PASSWORD"); err != nil {
		return nil, usageErrorf("%v", err)
	}
	pw := ""
	if history.IsPostgres(target) {
		pw = os.Getenv("SKILLFLEET_HISTORY_PASSWORD")
	} else if _, err := os.Stat(target); err != nil {
		return nil, failf("no local history at %s (skillfleet test writes it; name another with --history, or a coordinator with --coordinator): %v", target, err)
	}
	s, err := history.Open(ctx, history.Options{Target: target, Password: pw})
	if err != nil {
		return nil, failf("%v", err)
	}
	return s, nil
}

// localRuns reads the runs `skillfleet test` kept in the history: their status, report and
// results (history.Store.WriteArchive). It renders reports as the coordinator does.
type localRuns struct{ store *history.Store }

// List returns the history's runs, newest first.
func (l localRuns) List(ctx context.Context) ([]*pb.RunStatus, error) { return l.store.Runs(ctx, 0) }

// Status returns a run's final status.
func (l localRuns) Status(ctx context.Context, id string) (*pb.RunStatus, error) {
	return l.store.Status(ctx, id)
}

// Report returns a run's report as it was when the run ended.
func (l localRuns) Report(ctx context.Context, id string) (runreport.Report, error) {
	a, err := l.store.ArchivedRun(ctx, id)
	if err != nil {
		return runreport.Report{}, err
	}
	rep, err := runreport.FromJSON(strings.NewReader(string(a.Report)))
	if err != nil {
		return runreport.Report{}, fmt.Errorf("report of run %s: %w", id, err)
	}
	return rep, nil
}

// WriteReport writes a run's report: the kept JSON as it is, or rendered as text or JUnit.
func (l localRuns) WriteReport(ctx context.Context, id, format string, w io.Writer) error {
	if format == "json" {
		a, err := l.store.ArchivedRun(ctx, id)
		if err != nil {
			return err
		}
		_, err = w.Write(a.Report)
		return err
	}
	rep, err := l.Report(ctx, id)
	if err != nil {
		return err
	}
	if format == "junit" {
		return runreport.WriteJUnit(w, rep)
	}
	return runreport.WriteText(w, rep, runreport.TextOptions{})
}

// Trajectory writes the trajectory kept with the job q names, chosen as the coordinator
// chooses it.
func (l localRuns) Trajectory(ctx context.Context, id string, q coordinator.TrajectoryQuery, w io.Writer) error {
	d, err := coordinator.PickTrajectory(func(fn func(*pb.Result) error) error { return l.store.ArchivedResults(ctx, id, fn) }, id, q)
	if err != nil {
		return err
	}
	if d.GetEncoding() != "json" {
		return fmt.Errorf("the trajectory of %s/%s in run %s is kept as %q, not JSON", q.Skill, q.Case, id, d.GetEncoding())
	}
	_, err = w.Write(d.GetData())
	return err
}

// Results replays the results kept of a run. A run whose archive left results out (over its
// bound) is refused whole: a comparison or export of part of a run would say less than it
// seems to.
func (l localRuns) Results(ctx context.Context, id string, fn func(*pb.Result) error) error {
	return l.Verdicts(ctx, id, fn)
}

// Verdicts is Results: the history keeps each result with its documents inline.
func (l localRuns) Verdicts(ctx context.Context, id string, fn func(*pb.Result) error) error {
	a, err := l.store.ArchivedRun(ctx, id)
	if err != nil {
		return err
	}
	if n := a.Stats.Omitted; n > 0 {
		return fmt.Errorf("run %s: the history kept %d of its %d results (the rest were over the run's bound)", id, a.Stats.Results, a.Stats.Results+n)
	}
	return l.store.ArchivedResults(ctx, id, fn)
}

// usageLookup is true for a lookup error that is the user's to fix (exit 2), as the
// coordinator's 400 is.
func usageLookup(err error) bool { return errors.Is(err, coordinator.ErrAmbiguous) }
