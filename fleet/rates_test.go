package fleet

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

// stepClock is a clock that moves only when slept on, recording the sleeps.
type stepClock struct {
	mu    sync.Mutex
	t     time.Time
	slept []time.Duration
}

func (c *stepClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *stepClock) sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slept = append(c.slept, d)
	return ctx.Err()
}

func (c *stepClock) take() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.slept
	c.slept = nil
	return out
}

// TestRateLimitFallsBackWhenNATSIsDown: two gates (two processes) share an endpoint's budget
// through the NATS KV; once the server is gone, each paces on its own at the configured rate,
// and so does a gate whose store was never bound.
func TestRateLimitFallsBackWhenNATSIsDown(t *testing.T) {
	e, _, topo := queuetest.Start(t)
	clk := &stepClock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	gate := func(store agent.RateStore) *agent.RateGate {
		return agent.NewRateGate("ep", agent.RateLimit{RequestsPerMinute: 60}, agent.RateGateDeps{
			Store: store, StoreTimeout: 200 * time.Millisecond, Now: clk.now, Sleep: clk.sleep})
	}
	first, second := gate(topo.Rates()), gate(topo.Rates())
	ctx := context.Background()
	for _, g := range []*agent.RateGate{first, second, first} {
		if err := g.Wait(ctx, 0); err != nil {
			t.Fatal(err)
		}
	}
	// 60 a minute, stretched 2%: the second process's request waits for the first's.
	if got, want := clk.take(), []time.Duration{1020 * time.Millisecond, 2040 * time.Millisecond}; !slices.Equal(got, want) {
		t.Fatalf("sleeps through the store %v, want %v", got, want)
	}

	e.Shutdown()
	for range 3 {
		if err := second.Wait(ctx, 0); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := clk.take(), []time.Duration{1020 * time.Millisecond, 2040 * time.Millisecond}; !slices.Equal(got, want) {
		t.Fatalf("sleeps with NATS down %v, want %v: the configured rate, this process alone", got, want)
	}

	unbound := gate(&LateRates{})
	for range 2 {
		if err := unbound.Wait(ctx, 0); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := clk.take(), []time.Duration{1020 * time.Millisecond}; !slices.Equal(got, want) {
		t.Fatalf("sleeps of an unbound store %v, want %v", got, want)
	}
}

// TestRateWaitBoundsAgree: the gate and the store bound a wait alike, so that neither lets
// through what the other would hold, nor holds what the other would let through.
func TestRateWaitBoundsAgree(t *testing.T) {
	if agent.MaxRateWait != queue.RateMaxWait {
		t.Fatalf("agent.MaxRateWait %s, queue.RateMaxWait %s: want them equal", agent.MaxRateWait, queue.RateMaxWait)
	}
}
