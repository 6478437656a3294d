package sandbox

import (
	"context"
	"time"
)

// Clock is the time source of a Runner: deadlines, retry pauses and the reaper's ticks. Tests
// inject a fake so they never wait on wall time.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d; stop cancels it and reports whether it did.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
	// NewTicker delivers ticks every d until stop is called.
	NewTicker(d time.Duration) (ticks <-chan time.Time, stop func())
	// Sleep pauses for d or until ctx is done.
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

func (realClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
