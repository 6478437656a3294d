package fleet

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/history"
)

// auditQueue is how many audit records wait for the database: a burst of refused logins
// beyond it is dropped (and counted, and still in the coordinator's log) rather than held in
// memory or made to wait on the database.
const auditQueue = 4096

// AuditLog is the coordinator's audit log in the history database: records are queued without
// blocking and written in batches by one goroutine.
type AuditLog struct {
	store   *history.Store
	log     *zap.Logger
	ch      chan history.AuditEntry
	dropped prometheus.Counter
	done    chan struct{}
	// mu keeps Record from sending on the closed channel: a request may end after Close.
	mu     sync.RWMutex
	closed bool
}

var _ coordinator.AuditLog = (*AuditLog)(nil)

// NewAuditLog starts the writer of store's audit table; reg may be nil.
func NewAuditLog(store *history.Store, log *zap.Logger, reg prometheus.Registerer) (*AuditLog, error) {
	a := &AuditLog{
		store: store, log: log, ch: make(chan history.AuditEntry, auditQueue), done: make(chan struct{}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skillfleet_audit_dropped_total",
			Help: "Audit records the history could not take in time (they are in the coordinator's log only).",
		}),
	}
	if reg != nil {
		if err := reg.Register(a.dropped); err != nil {
			return nil, err
		}
	}
	go a.write()
	return a, nil
}

// Record queues r (coordinator.AuditLog).
func (a *AuditLog) Record(r coordinator.AuditRecord) {
	e := history.AuditEntry{At: r.At, Actor: r.Actor, Team: r.Team, Role: r.Role, Action: r.Action, Object: r.Object, Outcome: r.Outcome, Detail: r.Detail}
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		a.dropped.Inc()
		return
	}
	select {
	case a.ch <- e:
	default:
		a.dropped.Inc()
	}
}

// Records reads the audit log (coordinator.AuditLog).
func (a *AuditLog) Records(ctx context.Context, team string, beforeID int64, limit int) ([]coordinator.AuditRecord, error) {
	es, err := a.store.Audit(ctx, history.AuditQuery{Team: team, BeforeID: beforeID, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]coordinator.AuditRecord, len(es))
	for i, e := range es {
		out[i] = coordinator.AuditRecord{ID: e.ID, At: e.At, Actor: e.Actor, Role: e.Role, Team: e.Team, Action: e.Action, Object: e.Object, Outcome: e.Outcome, Detail: e.Detail}
	}
	return out, nil
}

// write stores queued records in batches until Close.
func (a *AuditLog) write() {
	defer close(a.done)
	for e := range a.ch {
		batch := []history.AuditEntry{e}
	more:
		for len(batch) < 256 {
			select {
			case e, ok := <-a.ch:
				if !ok {
					break more
				}
				batch = append(batch, e)
			default:
				break more
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := a.store.AppendAudit(ctx, batch...); err != nil {
			a.dropped.Add(float64(len(batch)))
			a.log.Warn("writing audit records failed (they are in this log)", zap.Int("records", len(batch)), zap.Error(err))
		}
		cancel()
	}
}

// Close writes what is queued, until ctx ends. Records after Close are dropped.
func (a *AuditLog) Close(ctx context.Context) error {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		close(a.ch)
	}
	a.mu.Unlock()
	select {
	case <-a.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
