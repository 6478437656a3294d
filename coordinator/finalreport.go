package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"go.uber.org/zap"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"

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

// warmReports loads the stored reports of the most recently finished runs into the report
// cache, newest first, while it has room: a report of 100,000 cases takes seconds to decode,
// and after a restart the first reader of each recent run would otherwise wait for it.
func (c *Coordinator) warmReports(ctx context.Context, statuses []*pb.RunStatus) {
	var done []*pb.RunStatus
	for _, st := range statuses {
		if isFinal(st.GetState()) && st.GetReportStored() && st.GetFinishedAt() != nil {
			done = append(done, st)
		}
	}
	sort.Slice(done, func(i, j int) bool { return done[i].GetFinishedAt().AsTime().After(done[j].GetFinishedAt().AsTime()) })
	loaded := 0
	for _, st := range done {
		if ctx.Err() != nil || int(st.GetCases().GetTotal()) > c.finished.room() {
			break
		}
		if _, ok := c.finished.get(st.GetId()); ok {
			continue
		}
		rep, ok, err := c.loadReport(ctx, st.GetId())
		if err != nil || !ok {
			continue
		}
		c.finished.put(st.GetId(), rep)
		loaded++
	}
	if loaded > 0 {
		c.log.Info("loaded the reports of recently finished runs", zap.Int("runs", loaded))
	}
}
