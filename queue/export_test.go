package queue

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
)

// What this package's own tests see below the sealed API: the raw handles, to check what the
// server holds.

func (t *Topology) RawJS() jetstream.JetStream            { return t.js }
func (t *Topology) RawJobs() jetstream.Stream             { return t.jobs }
func (t *Topology) RawResults() jetstream.Stream          { return t.results }
func (t *Topology) RawOnDemand() jetstream.Consumer       { return t.onDemand }
func (t *Topology) RawScheduled() jetstream.Consumer      { return t.scheduled }
func (t *Topology) RawRuns() jetstream.KeyValue           { return t.runs }
func (t *Topology) RawRates() jetstream.KeyValue          { return t.rates }
func (t *Topology) RawArtifacts() jetstream.Stream        { return t.artifacts }
func (t *Topology) RawBundles() jetstream.ObjectStore     { return t.bundles }
func (t *Topology) RawConsumer(l Lane) jetstream.Consumer { return t.consumer(l) }

func (c *Conn) NATS() *nats.Conn { return c.nc }

// ConnectRaw is Connect with the client library's options.
func ConnectRaw(cfg ConnectConfig, log *zap.Logger, opts ...nats.Option) (*nats.Conn, error) {
	return connect(cfg, log, opts...)
}

// ConnectRaw is Embedded.Connect with the client library's options.
func (e *Embedded) ConnectRaw(opts ...nats.Option) (*nats.Conn, error) { return e.connect(opts...) }

// ConnOf wraps a raw connection as Ensure and Open take it.
func ConnOf(nc *nats.Conn) (*Conn, error) { return newConn(nc) }

func (t *Topology) RawConn() *Conn { return t.conn }

// DeliveryOf wraps a message fetched raw from lane's consumer as the lanes deliver it.
func (t *Topology) DeliveryOf(m jetstream.Msg, lane Lane) *Delivery { return t.delivery(m, lane) }

// Stall makes the iteration stall as the client library's can after a leader change: its
// iterator is swapped for one of a subject no result is stored on, which delivers nothing and
// reports no error; quiet shortens StallCheck.
func (s *ResultIterator) Stall(quiet time.Duration) error {
	s.it.Stop()
	cons, err := s.t.js.OrderedConsumer(context.Background(), ResultsStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{ResultSubject("stalled-nowhere")}})
	if err != nil {
		return err
	}
	it, err := cons.Messages()
	if err != nil {
		return err
	}
	s.it, s.quiet = it, quiet
	return nil
}

// Break ends the iteration's inner iterator under it, as the client library does when it gives
// up: Next must open a new one rather than report the iteration stopped.
func (s *ResultIterator) Break() { s.it.Stop() }

// IdleInboxes is how many subscriptions the lane's fetches have left for the next ones.
func (l *LaneConsumer) IdleInboxes() int {
	l.pull.mu.Lock()
	defer l.pull.mu.Unlock()
	return len(l.pull.idle)
}

// RouteRequests sends the lane's pull requests to subject instead of the consumer's, and
// returns the consumer's, so that a test can hold a request back.
func (l *LaneConsumer) RouteRequests(subject string) (consumer string) {
	consumer, l.pull.next = l.pull.next, subject
	return consumer
}
