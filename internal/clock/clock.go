// Package clock is the time the coordinator's run loop and the worker's drain wait on: the
// real one, or a Fake that tests move by hand, so no test waits on wall time for a deadline
// or a grace period.
package clock

import (
	"context"
	"sync"
	"time"
)

// Clock tells the time and makes timers and tickers.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
	NewTicker(d time.Duration) Ticker
}

// Timer fires once on C, as time.Timer does.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
}

// Ticker fires on C every period, as time.Ticker does, dropping ticks a slow reader misses.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// Real is the system clock.
type Real struct{}

// Now is time.Now.
func (Real) Now() time.Time { return time.Now() }

// NewTimer is time.NewTimer.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

// NewTicker is time.NewTicker.
func (Real) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time { return t.t.C }
func (t realTimer) Stop() bool          { return t.t.Stop() }

type realTicker struct{ t *time.Ticker }

func (t realTicker) C() <-chan time.Time { return t.t.C }
func (t realTicker) Stop()               { t.t.Stop() }

// Sleep waits d on c, or until ctx is done; it reports whether the full d passed.
func Sleep(ctx context.Context, c Clock, d time.Duration) bool {
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}

// Fake is a clock that moves only when Advance is called. Safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []*fakeWaiter
	// changed is closed (and replaced) whenever a timer or ticker starts, for WaitFor.
	changed chan struct{}
}

// NewFake returns a Fake set to now.
func NewFake(now time.Time) *Fake { return &Fake{now: now, changed: make(chan struct{})} }

type fakeWaiter struct {
	f      *Fake
	at     time.Time
	period time.Duration // 0 for a timer
	c      chan time.Time
	active bool
}

// Now is the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTimer starts a timer that fires once Advance has moved the time d on.
func (f *Fake) NewTimer(d time.Duration) Timer { return f.start(d, 0) }

// NewTicker starts a ticker that fires each time Advance moves the time past another d.
func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive ticker period")
	}
	return fakeTicker{f.start(d, d)}
}

type fakeTicker struct{ w *fakeWaiter }

func (t fakeTicker) C() <-chan time.Time { return t.w.c }
func (t fakeTicker) Stop()               { t.w.Stop() }

func (f *Fake) start(d, period time.Duration) *fakeWaiter {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := &fakeWaiter{f: f, at: f.now.Add(d), period: period, c: make(chan time.Time, 1), active: true}
	if period == 0 && d <= 0 {
		w.c <- f.now
		w.active = false
		return w
	}
	f.waiters = append(f.waiters, w)
	close(f.changed)
	f.changed = make(chan struct{})
	return w
}

func (w *fakeWaiter) C() <-chan time.Time { return w.c }

func (w *fakeWaiter) Stop() bool {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	was := w.active
	w.active = false
	return was
}

// Advance moves the time on by d and fires every timer and ticker due by then, in order.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	live := f.waiters[:0]
	for _, w := range f.waiters {
		if !w.active {
			continue
		}
		if !w.at.After(f.now) {
			select {
			case w.c <- w.at:
			default: // a ticker whose last tick is unread drops this one, as time.Ticker does
			}
			if w.period == 0 {
				w.active = false
				continue
			}
			for !w.at.After(f.now) {
				w.at = w.at.Add(w.period)
			}
		}
		live = append(live, w)
	}
	f.waiters = live
}

// Pending is how many timers and tickers are running (started, not stopped, not fired).
func (f *Fake) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, w := range f.waiters {
		if w.active {
			n++
		}
	}
	return n
}

// WaitFor blocks until at least n timers and tickers are running, or ctx is done: how a test
// knows the code under test waits on the clock before it advances it.
func (f *Fake) WaitFor(ctx context.Context, n int) error {
	for {
		f.mu.Lock()
		changed := f.changed
		f.mu.Unlock()
		if f.Pending() >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
