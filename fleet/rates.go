package fleet

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/queue"
)

// The fleet's store is what the gates take.
var (
	_ agent.RateStore = (*queue.RateStore)(nil)
	_ agent.RateStore = (*LateRates)(nil)
)

// errRatesUnbound is what a LateRates answers before Bind.
var errRatesUnbound = errors.New("fleet: the rate store is not bound to NATS yet")

// LateRates is the fleet's rate store (agent.RateStore) for models built before NATS is
// reached: the worker daemon and `skillfleet test` build theirs first, so that a bad agents
// config is refused before anything waits on the network. Until Bind every call fails, and the
// gates pace on their own at the configured rate.
type LateRates struct {
	s atomic.Pointer[queue.RateStore]
}

// Bind points the store at a topology's rate budgets (queue.Topology.Rates).
func (l *LateRates) Bind(s *queue.RateStore) { l.s.Store(s) }

// Reserve is queue.RateStore.Reserve, once bound.
func (l *LateRates) Reserve(ctx context.Context, key string, interval time.Duration, burst int, cost float64, now time.Time) (time.Duration, error) {
	s := l.s.Load()
	if s == nil {
		return 0, errRatesUnbound
	}
	return s.Reserve(ctx, key, interval, burst, cost, now)
}

// Defer is queue.RateStore.Defer, once bound.
func (l *LateRates) Defer(ctx context.Context, key string, until, now time.Time) error {
	s := l.s.Load()
	if s == nil {
		return errRatesUnbound
	}
	return s.Defer(ctx, key, until, now)
}

// Probe is queue.RateStore.Probe, once bound.
func (l *LateRates) Probe(ctx context.Context, key string, now time.Time) (time.Duration, bool, error) {
	s := l.s.Load()
	if s == nil {
		return 0, false, errRatesUnbound
	}
	return s.Probe(ctx, key, now)
}
