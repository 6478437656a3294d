package testutil

import (
	"runtime"
	"testing"
	"time"
)

func TestWaitFor(t *testing.T) {
	tests := []struct {
		name   string
		trueAt int // the call from which cond holds; 0 never
		want   bool
	}{
		{"at once", 1, true},
		{"after a few ticks", 3, true},
		{"never", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			cond := func() bool { calls++; return tt.trueAt > 0 && calls >= tt.trueAt }
			if got := waitFor(time.Second/2, time.Millisecond, cond); got != tt.want {
				t.Errorf("waitFor = %v after %d calls, want %v", got, calls, tt.want)
			}
		})
	}
}

func TestMessage(t *testing.T) {
	tests := []struct {
		msg  []any
		want string
	}{
		{nil, "condition never held"},
		{[]any{"job %s not acked", "j1"}, "job j1 not acked"},
		{[]any{"plain"}, "plain"},
		{[]any{42}, "42"},
	}
	for _, tt := range tests {
		if got := message(tt.msg); got != tt.want {
			t.Errorf("message(%v) = %q, want %q", tt.msg, got, tt.want)
		}
	}
}

// TestPeakHeap: a heap grown by 64 MiB while sampled peaks about that far above its base (other
// spans may have been freed meanwhile), seen by the last sample if by no other.
func TestPeakHeap(t *testing.T) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	stop := PeakHeap(m.HeapInuse)
	held := make([]byte, 64<<20)
	for i := range held {
		held[i] = byte(i)
	}
	peak := stop()
	runtime.KeepAlive(held)
	if peak < 60<<20 {
		t.Errorf("peak %d bytes above the base, want about the 64 MiB held", peak)
	}
}
