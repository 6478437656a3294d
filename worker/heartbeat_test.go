package worker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/internal/clock"
)

// beatMsg is a delivery whose heartbeat fails; settle, when set, runs first, as a job that
// settles while the beat is on its way.
type beatMsg struct {
	fakeMsg
	settle func()
	beaten chan struct{}
}

func (m *beatMsg) InProgress() error {
	if m.settle != nil {
		m.settle()
	}
	m.beaten <- struct{}{}
	return errors.New("nats: message was already acknowledged")
}

// warnings records what it is asked to warn about.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Warn(msg string, _ ...zap.Field) {
	w.mu.Lock()
	w.msgs = append(w.msgs, msg)
	w.mu.Unlock()
}

func (w *warnings) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.msgs)
}

// TestHeartbeatOfASettledJobIsNoFailure: a beat that fails because its job was settled (acked)
// after the beats were listed is not warned about; a beat that fails while its job is still
// running is.
func TestHeartbeatOfASettledJobIsNoFailure(t *testing.T) {
	for _, tc := range []struct {
		name    string
		settles bool
		want    int
	}{
		{"settled meanwhile", true, 0},
		{"still running", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHeartbeats()
			clk := clock.NewFake(time.Unix(0, 0))
			m := &beatMsg{beaten: make(chan struct{}, 1)}
			if tc.settles {
				m.settle = func() { h.remove(m) }
			}
			w := &warnings{}
			h.add(m, w)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			done := make(chan struct{})
			go func() { h.run(ctx, clk, time.Second); close(done) }()
			if err := clk.WaitFor(ctx, 1); err != nil {
				t.Fatal(err)
			}
			clk.Advance(time.Second)
			select {
			case <-m.beaten:
			case <-ctx.Done():
				t.Fatal("no heartbeat within 10 s of the tick")
			}
			cancel()
			<-done
			if got := w.count(); got != tc.want {
				t.Errorf("%d warnings, want %d", got, tc.want)
			}
		})
	}
}
