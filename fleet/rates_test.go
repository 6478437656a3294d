package fleet

import (
	"context"
	"fmt"
	"net/http"
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

// simClock is a discrete-event clock for actors that run in goroutines: time moves only
// when every actor sleeps, to the earliest wake. A sleep whose context is cancelled (an answer
// ending a probe's wait) wakes without moving the clock.
type simClock struct {
	stepClock // its now; its record of sleeps is not kept
	running   int
	waiters   []*simWaiter
}

type simWaiter struct {
	at    time.Time
	ctx   context.Context
	ch    chan struct{}
	woken bool
}

func (c *simClock) sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	w := &simWaiter{at: c.t.Add(d), ctx: ctx, ch: make(chan struct{})}
	c.waiters = append(c.waiters, w)
	c.running--
	c.advance()
	c.mu.Unlock()
	select {
	case <-w.ch:
	case <-ctx.Done():
		c.mu.Lock()
		if !w.woken {
			c.waiters = slices.DeleteFunc(c.waiters, func(x *simWaiter) bool { return x == w })
			c.running++
		}
		c.mu.Unlock()
	}
	return ctx.Err()
}

// done is an actor's end.
func (c *simClock) done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running--
	c.advance()
}

// advance wakes the next sleeper once no actor runs: one whose sleep was cancelled, else the
// earliest, moving the clock to its time.
func (c *simClock) advance() {
	if c.running > 0 || len(c.waiters) == 0 {
		return
	}
	i := slices.IndexFunc(c.waiters, func(w *simWaiter) bool { return w.ctx.Err() != nil })
	if i < 0 {
		i = 0
		for j, w := range c.waiters {
			if w.at.Before(c.waiters[i].at) {
				i = j
			}
		}
		if c.waiters[i].at.After(c.t) {
			c.t = c.waiters[i].at
		}
	}
	w := c.waiters[i]
	c.waiters = slices.Delete(c.waiters, i, i+1)
	w.woken = true
	c.running++
	close(w.ch)
}

// slidingEndpoint takes perSecond requests in any sliding second and refuses the rest, as
// fleet's benchmark endpoint does (limitedEndpoint), on the simulated clock.
type slidingEndpoint struct {
	perSecond int
	mu        sync.Mutex
	accepted  []time.Time
	refused   int
}

func (e *slidingEndpoint) take(at time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n := len(e.accepted); n >= e.perSecond && at.Sub(e.accepted[n-e.perSecond]) < time.Second {
		e.refused++
		return false
	}
	e.accepted = append(e.accepted, at)
	return true
}

// TestAnnouncedLimitFleetStart: three workers of eight slots start together, without a
// configured rate, against an endpoint that takes 2 requests in any sliding second and
// announces 120 a minute on every answer, sharing the budget through the NATS KV. None of their
// requests is refused (the first ones, sent before any worker knows the limit, included), and
// they reach 0.9 of the limit. Before probes were booked in the budget, three went at once
// (the third refused), the first worker to know the limit paced from an empty budget (its
// first request the third in that second) and a worker still probing sent into a paced
// request's slot.
func TestAnnouncedLimitFleetStart(t *testing.T) {
	const (
		workers, slots = 3, 8
		rtt            = 50 * time.Millisecond
		answers        = 80
	)
	e, _, _ := queuetest.Start(t)
	clk := &simClock{stepClock: stepClock{t: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}, running: workers * slots}
	ep := &slidingEndpoint{perSecond: 2}
	header := func(ok bool) http.Header {
		h := http.Header{"X-Ratelimit-Limit-Requests": {"120"}}
		if !ok {
			h.Set("Retry-After", "1")
		}
		return h
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		n       int
		first   time.Time
		last    time.Time
		errs    []error
		stopped bool
	)
	for i := range workers {
		topo, err := queue.OpenWorker(context.Background(), queuetest.Connect(t, e), queue.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		gate := agent.NewRateGate("ep", agent.RateLimit{}, agent.RateGateDeps{Store: topo.Rates(), Now: clk.now, Sleep: clk.sleep})
		for range slots {
			wg.Go(func() {
				defer clk.done()
				ctx := context.Background()
				for {
					mu.Lock()
					stop := stopped
					mu.Unlock()
					if stop {
						return
					}
					if err := gate.Wait(ctx, 0); err != nil {
						mu.Lock()
						errs = append(errs, fmt.Errorf("worker %d: %w", i, err))
						mu.Unlock()
						return
					}
					at := clk.now()
					ok := ep.take(at)
					_ = clk.sleep(ctx, rtt)
					if ok {
						gate.Observe(http.StatusOK, header(true))
						mu.Lock()
						if n == 0 {
							first = at
						}
						n, last = n+1, at
						stopped = stopped || n >= answers
						mu.Unlock()
						continue
					}
					gate.Observe(http.StatusTooManyRequests, header(false))
					_ = clk.sleep(ctx, time.Second) // the client's retry after Retry-After
				}
			})
		}
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	share := float64(n-1) / last.Sub(first).Seconds() / 2
	t.Logf("%d answered in %s (%.3f of the limit), %d refused", n, last.Sub(first), share, ep.refused)
	if ep.refused > 0 {
		t.Errorf("%d of %d requests refused, want none", ep.refused, n+ep.refused)
	}
	if share < 0.9 {
		t.Errorf("%.3f of the limit, want at least 0.9", share)
	}
}
