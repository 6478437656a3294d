package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/report"
)

// A finished run's report is stored when the run finishes and served from the store from then
// on: rebuilt from the results stream, it would change whenever the stream lost results (they
// expire; a flood from a worker's credentials evicted them while the stream discarded old
// messages, and a failed run then reported its failures as pending, issue 25). A run finished
// by a coordinator older than the store has none, and its report is rebuilt as before.

// storedReport is a final report as stored: the report's JSON, and the JUnit properties of
// its comparison, which the JSON leaves out.
type storedReport struct {
	Report               report.Report     `json:"report"`
	ComparisonProperties []report.Property `json:"comparison_properties,omitempty"`
}

// storeReport stores a finished run's final report.
func (c *Coordinator) storeReport(ctx context.Context, id string, rep report.Report) error {
	data, err := json.Marshal(storedReport{Report: rep, ComparisonProperties: rep.ComparisonProperties})
	if err != nil {
		return fmt.Errorf("store the report of run %s: %w", id, err)
	}
	return c.queue.PutReport(ctx, id, data)
}

// loadReport reads a finished run's stored report; ok is false when the run stored none.
func (c *Coordinator) loadReport(ctx context.Context, id string) (rep report.Report, ok bool, err error) {
	data, err := c.queue.GetReport(ctx, id)
	if errors.Is(err, queue.ErrNotFound) {
		return report.Report{}, false, nil
	}
	if err != nil {
		return report.Report{}, false, err
	}
	var s storedReport
	if err := json.Unmarshal(data, &s); err != nil {
		return report.Report{}, false, fmt.Errorf("the stored report of run %s: %w", id, err)
	}
	s.Report.ComparisonProperties = s.ComparisonProperties
	return s.Report, true, nil
}

// resultsFullAbove is the share of the results stream's MaxBytes above which a new run is
// refused: the stream refuses results once full, so the runs it holds keep the room they
// need to finish, and a new run is answered now rather than stalled later.
const resultsFullAbove = 0.9

// CapacityError is a run refused because the fleet's storage is nearly full; the API answers
// it 507.
type CapacityError struct{ Err error }

func (e *CapacityError) Error() string { return e.Err.Error() }

func (e *CapacityError) Unwrap() error { return e.Err }

// checkResultsRoom refuses a new run while the results stream is nearly full: one stream
// info request per admission.
func (c *Coordinator) checkResultsRoom(ctx context.Context) error {
	used, limit, err := c.queue.ResultsUsage(ctx)
	if err != nil {
		// The stream's own limit still protects the results: a failed look-up is logged,
		// not a reason to refuse every run.
		c.log.Warn("reading the results stream's usage failed", zap.Error(err))
		return nil
	}
	if limit > 0 && float64(used) > resultsFullAbove*float64(limit) {
		return &CapacityError{Err: fmt.Errorf("the results stream is %d%% full (%d of %d bytes): no new run is admitted until results expire or an operator raises its limit (ResultsMaxBytes)",
			used*100/limit, used, limit)}
	}
	return nil
}
