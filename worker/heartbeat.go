package worker

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/internal/clock"
)

// heartbeats marks the message of every unsettled job in progress, from one goroutine, so a
// long job is not redelivered while it runs or while its result is being stored. A job is
// first marked within one interval of its start, which is enough when the interval is a third
// of AckWait; a short job costs a map entry rather than a goroutine and a timer.
type heartbeats struct {
	mu   sync.Mutex
	msgs map[Delivery]warner
}

func newHeartbeats() *heartbeats {
	return &heartbeats{msgs: make(map[Delivery]warner)}
}

func (h *heartbeats) add(msg Delivery, log warner) {
	h.mu.Lock()
	h.msgs[msg] = log
	h.mu.Unlock()
}

// remove stops the heartbeat of a job about to be acked, handed back or terminated.
func (h *heartbeats) remove(msg Delivery) {
	h.mu.Lock()
	delete(h.msgs, msg)
	h.mu.Unlock()
}

// run beats every interval until ctx is done.
func (h *heartbeats) run(ctx context.Context, clk clock.Clock, interval time.Duration) {
	t := clk.NewTicker(interval)
	defer t.Stop()
	var due []Delivery
	var logs []warner
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		due, logs = due[:0], logs[:0]
		h.mu.Lock()
		for m, l := range h.msgs {
			due = append(due, m)
			logs = append(logs, l)
		}
		h.mu.Unlock()
		for i, m := range due {
			// A job settled since the list was taken has nothing to beat for: its message was
			// acked (the server then says so), and that is no failure.
			if err := m.InProgress(); err != nil && h.has(m) {
				logs[i].Warn("heartbeat failed", zap.Error(err))
			}
		}
	}
}

// has reports whether msg's job is still unsettled.
func (h *heartbeats) has(msg Delivery) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.msgs[msg]
	return ok
}
