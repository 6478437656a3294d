package coordinator

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// probeKey is the run-state key the readiness probe writes; List skips it.
const probeKey = "readyz-probe"

// probeTTL is how long a probe's outcome is reused, so readiness checks cannot hammer the store.
const probeTTL = 2 * time.Second

// storeProbe checks that the store takes writes, with one real write (a put of probeKey in the
// run-state bucket) at most every probeTTL. A connected NATS whose JetStream cannot write (a
// full disk, a latched write error) stores no result: such a coordinator is not ready.
type storeProbe struct {
	c *Coordinator

	mu   sync.Mutex
	at   time.Time
	last error
}

// check returns the last outcome if it is fresh, else probes.
func (p *storeProbe) check(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.c.now()
	if !p.at.IsZero() && now.Sub(p.at) < probeTTL && !now.Before(p.at) {
		return p.last
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	p.last = nil
	if _, err := p.c.runStore.Put(ctx, probeKey, []byte(now.UTC().Format(time.RFC3339Nano))); err != nil {
		p.last = fmt.Errorf("the store cannot write: %w", err)
	}
	p.at = now
	return p.last
}
