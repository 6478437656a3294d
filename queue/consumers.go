package queue

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A read that opens an ordered consumer (a bundle's chunks, a case's results, a run's
// results) deletes it when it ends. Stopped, nats.go's ordered consumer stays on the server
// until it has been idle for its inactive threshold, 5 minutes by default, and the server
// refuses a stream's 1,001st consumer by default (JSDefaultMaxConsumersPerStream). Left
// there, 1,000 case pages or result exports in 5 minutes refused every further one and every
// new run's following of its results, and 1,000 bundle reads (100 workers starting 10 runs)
// every further bundle read.

// readIdle is the inactive threshold of a short read's ordered consumer (a case's results):
// what a reader that dies mid-read leaves goes after this. Such a read pulls until it is
// done, so it is never idle this long.
const readIdle = 30 * time.Second

// dropConsumer deletes c from stream once a read is over, however it ended (ctx may be done
// by then: the delete gets two seconds of its own, short so that a stop during a lost
// connection does not hold up a shutdown). A failed delete is left to the consumer's
// inactive threshold.
func (t *Topology) dropConsumer(ctx context.Context, stream string, c jetstream.Consumer) {
	if c == nil {
		return
	}
	info := c.CachedInfo()
	if info == nil || info.Name == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = t.js.DeleteConsumer(ctx, stream, info.Name)
}
