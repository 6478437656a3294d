package fleet

import (
	"time"

	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/worker"
)

// queueLanes adapts the queue's lane consumers, in priority order, to the worker's Lanes:
// the worker knows jobs, not the broker.
func queueLanes(consumers []*queue.LaneConsumer) []worker.Lane {
	out := make([]worker.Lane, len(consumers))
	for i, c := range consumers {
		out[i] = queueLane{c}
	}
	return out
}

type queueLane struct{ c *queue.LaneConsumer }

func (l queueLane) Fetch(n int, wait time.Duration) ([]worker.Delivery, error) {
	got, err := l.c.Fetch(n, wait)
	out := make([]worker.Delivery, len(got))
	for i, d := range got {
		out[i] = d
	}
	return out, err
}
