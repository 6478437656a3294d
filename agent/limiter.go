package agent

import (
	"context"
	"math"
	"sync"
)

// limiter is an AIMD concurrency limit: each 429 halves it (never below 1), each success raises
// it by 1/limit (about +1 per limit's worth of successes) up to max. Requests in flight when it
// shrinks finish; new ones wait until fewer than floor(limit) are in flight.
type limiter struct {
	mu       sync.Mutex
	limit    float64
	max      float64
	inflight int
	// wake is closed (and replaced) whenever a slot may have become free.
	wake chan struct{}
	// onChange reports the new limit (the metrics gauge); called with mu held.
	onChange func(float64)
}

func newLimiter(max int, onChange func(float64)) *limiter {
	l := &limiter{limit: math.Min(4, float64(max)), max: float64(max), wake: make(chan struct{}), onChange: onChange}
	if onChange != nil {
		onChange(l.limit)
	}
	return l
}

// acquire takes a slot, waiting while the limit is reached; it gives up when ctx ends.
func (l *limiter) acquire(ctx context.Context) error {
	for {
		l.mu.Lock()
		if l.inflight < int(l.limit) {
			l.inflight++
			l.mu.Unlock()
			return nil
		}
		wake := l.wake
		l.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// signal is what an attempt tells the limiter when it gives its slot back.
type signal int

const (
	signalNone     signal = iota // no news about the endpoint's capacity (errors other than 429)
	signalSuccess                // an answer: grow
	signalOverload               // a 429: shrink
)

// release gives a slot back and adapts the limit.
func (l *limiter) release(s signal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inflight--
	switch s {
	case signalSuccess:
		l.limit = math.Min(l.max, l.limit+1/l.limit)
	case signalOverload:
		l.limit = math.Max(1, l.limit/2)
	}
	if s != signalNone && l.onChange != nil {
		l.onChange(l.limit)
	}
	close(l.wake)
	l.wake = make(chan struct{})
}

// current is the limit now (fractional; floor(limit) requests may be in flight).
func (l *limiter) current() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit
}
