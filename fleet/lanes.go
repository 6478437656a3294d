package fleet

import (
	"context"
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

// queueArtifacts adapts the queue's artifacts stream to the worker's ArtifactStore.
type queueArtifacts struct{ t *queue.Topology }

// artifactPutTimeout bounds storing one document: a result waits for it, and a fleet whose
// coordinator predates the artifacts stream answers no publish there.
const artifactPutTimeout = 15 * time.Second

func (a queueArtifacts) PutArtifact(ctx context.Context, run string, data []byte) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, artifactPutTimeout)
	defer cancel()
	ref, err := a.t.PutArtifact(ctx, run, data)
	return ref.Digest, err
}
