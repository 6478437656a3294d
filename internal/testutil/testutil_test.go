package testutil

import (
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
