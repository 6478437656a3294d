package queue

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A read that opens an ordered consumer (a bundle's chunks, a case's results) deletes it when
// it ends. Stopped, nats.go's ordered consumer stays on the server until it has been idle for
// its inactive threshold (5 minutes by default): every worker's every bundle read and every
// case page a viewer opens would hold one, and a viewer paging quickly through a run could pile
// up thousands on the results stream.

// readIdle is the inactive threshold of a short read's ordered consumer: what a reader that
// dies mid-read leaves goes after this. A live read pulls continually, so it is never idle
// this long.
const readIdle = 30 * time.Second

// dropConsumer deletes c from stream once a read is over, however it ended (ctx may be done
// by then: the delete gets a few seconds of its own). A failed delete is left to the
// consumer's inactive threshold.
func (t *Topology) dropConsumer(ctx context.Context, stream string, c jetstream.Consumer) {
	info := c.CachedInfo()
	if info == nil || info.Name == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = t.js.DeleteConsumer(ctx, stream, info.Name)
}
