package queue

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/klauspost/compress/s2"
	"github.com/nats-io/nats.go/jetstream"
)

// ReportsBucket is the object store of finished runs' final reports, keyed by run id. A
// finished run's report is served from it, never rebuilt from the results stream, whose
// messages expire (ResultsMaxAge) and which anyone with a worker's credentials can publish
// to: what a finished run reported does not change afterwards (issue 25).
const ReportsBucket = "skillfleet_reports"

func reportsStoreConfig(cfg Config) jetstream.ObjectStoreConfig {
	return jetstream.ObjectStoreConfig{
		Bucket:      ReportsBucket,
		Description: "skillfleet finished runs' final reports, keyed by run id",
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
	}
}

// reportStore returns the report store, binding it on a topology Open made.
func (t *Topology) reportStore(ctx context.Context) (jetstream.ObjectStore, error) {
	if t.reports != nil {
		return t.reports, nil
	}
	store, err := t.js.ObjectStore(ctx, ReportsBucket)
	if err != nil {
		return nil, fmt.Errorf("queue: open object store %s (has Ensure run?): %w", ReportsBucket, err)
	}
	t.reports = store
	return store, nil
}

// reportStoreOf checks run's id and returns the report store, for one of run's objects.
func (t *Topology) reportStoreOf(ctx context.Context, run string) (jetstream.ObjectStore, error) {
	if err := ValidateRunID(run); err != nil {
		return nil, err
	}
	return t.reportStore(ctx)
}

// deleteRunObject deletes run's object name of the report store (its what: "report",
// "records"); deleting one that is not there is no error.
func (t *Topology) deleteRunObject(ctx context.Context, run, name, what string) error {
	store, err := t.reportStoreOf(ctx, run)
	if err != nil {
		return err
	}
	if err := store.Delete(ctx, name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("queue: delete the %s of run %s: %w", what, run, err)
	}
	return nil
}

// A report is stored compressed: reportMagic, then the report's S2 block. A report of 100,000
// cases is about 70 MB of JSON that S2 makes 2 MB in 30 ms (its assertions and reasons repeat
// from case to case), and storing 70 MB took most of the seconds between a million-job run's
// last result and its final status. A stored report that starts without the magic is the JSON
// itself, as coordinators before it stored them.
const reportMagic = "skillfleet-report/s2\n"

// maxReportBytes bounds a stored report's JSON: a stored report whose block says it decodes to
// more is refused before anything is allocated for it. A report of a million cases, ten times
// the largest run a coordinator plans by default, is about 700 MB.
const maxReportBytes = 1 << 30

// PutReport stores a finished run's final report (its JSON), replacing what the run had stored.
func (t *Topology) PutReport(ctx context.Context, run string, data []byte) error {
	store, err := t.reportStoreOf(ctx, run)
	if err != nil {
		return err
	}
	if len(data) > maxReportBytes {
		return fmt.Errorf("queue: the report of run %s is %d bytes, over the %d a stored report may hold", run, len(data), maxReportBytes)
	}
	packed := make([]byte, len(reportMagic)+s2.MaxEncodedLen(len(data)))
	n := copy(packed, reportMagic)
	packed = packed[:n+len(s2.Encode(packed[n:], data))]
	if _, err := store.PutBytes(ctx, run, packed); err != nil {
		return fmt.Errorf("queue: store the report of run %s: %w", run, err)
	}
	return nil
}

// GetReport reads a finished run's stored report (its JSON): an error wrapping ErrNotFound
// when it has none (a run finished by a coordinator older than the store).
func (t *Topology) GetReport(ctx context.Context, run string) ([]byte, error) {
	store, err := t.reportStoreOf(ctx, run)
	if err != nil {
		return nil, err
	}
	data, err := store.GetBytes(ctx, run)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("%w: report of run %s", ErrNotFound, run)
	}
	if err != nil {
		return nil, fmt.Errorf("queue: read the report of run %s: %w", run, err)
	}
	block, packed := bytes.CutPrefix(data, []byte(reportMagic))
	if !packed {
		return data, nil
	}
	n, err := s2.DecodedLen(block)
	if err == nil && n > maxReportBytes {
		err = fmt.Errorf("it says it holds %d bytes, over the %d a stored report may hold", n, maxReportBytes)
	}
	if err == nil {
		data, err = s2.Decode(make([]byte, n), block)
	}
	if err != nil {
		return nil, fmt.Errorf("queue: read the report of run %s: %w", run, err)
	}
	return data, nil
}

// DeleteReport deletes a run's stored report; deleting one that is not there is no error.
func (t *Topology) DeleteReport(ctx context.Context, run string) error {
	return t.deleteRunObject(ctx, run, run, "report")
}

// ResultsUsage is how many bytes the results stream holds and its limit (0: none), read
// from one stream info request: the coordinator refuses new runs when it is nearly full,
// since a full stream refuses results (DiscardNew) and the runs' jobs would be retried
// until they are exhausted.
func (t *Topology) ResultsUsage(ctx context.Context) (used, max uint64, err error) {
	info, err := t.results.Info(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("queue: stream %s info: %w", ResultsStream, err)
	}
	if info.Config.MaxBytes > 0 {
		max = uint64(info.Config.MaxBytes)
	}
	return info.State.Bytes, max, nil
}

// ArtifactsUsage is how many bytes the artifacts stream holds and its limit (0: none): the
// coordinator removes finished runs' documents when it nears its limit.
func (t *Topology) ArtifactsUsage(ctx context.Context) (used, max uint64, err error) {
	if t.artifacts == nil {
		return 0, 0, nil
	}
	info, err := t.artifacts.Info(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("queue: stream %s info: %w", ArtifactsStream, err)
	}
	if info.Config.MaxBytes > 0 {
		max = uint64(info.Config.MaxBytes)
	}
	return info.State.Bytes, max, nil
}
