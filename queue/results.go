package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ResultMsg is one stored result of a run.
type ResultMsg struct {
	Run string
	// MsgID is ResultMsgID(run, job, attempt, data).
	MsgID string
	// Seq is the message's sequence in the results stream; it increases along the iteration.
	Seq uint64
	// Stored is when the server stored it.
	Stored time.Time
	// Pending is how many of the run's results were stored after this one when it was
	// delivered: 0 means the iteration had caught up at that moment.
	Pending uint64
	Data    []byte
}

// ResultIterator iterates over a run's results: every stored one, oldest first, then each new
// one as it is stored. Not safe for concurrent use.
type ResultIterator struct {
	run     string
	it      jetstream.MessagesContext
	backlog uint64
}

// FollowResults opens a ResultIterator over run's results, for a coordinator to rebuild a run's
// aggregate after a restart and then follow it live.
//
// It rides on an ordered consumer: an ephemeral, unacknowledged, in-memory consumer that the
// client library recreates from the last delivered sequence whenever it sees a gap, a deleted
// consumer, a reconnection or two missed idle heartbeats (5 s apart), which is the cure for the
// silent stalls reported against pull consumers. Results therefore arrive in order, without
// gaps or repeats, across server restarts. Deduplication happens on publication; the same job
// may still have several results, one per attempt.
func (t *Topology) FollowResults(ctx context.Context, run string) (*ResultIterator, error) {
	if err := ValidateRunID(run); err != nil {
		return nil, err
	}
	cons, err := t.js.OrderedConsumer(ctx, ResultsStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{ResultSubject(run)},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("queue: results of run %s: %w", run, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return nil, fmt.Errorf("queue: results of run %s: %w", run, err)
	}
	s := &ResultIterator{run: run, it: it}
	if info := cons.CachedInfo(); info != nil {
		s.backlog = info.NumPending
	}
	return s, nil
}

// Backlog is how many of the run's results were stored when the stream was opened: after that
// many, the iteration is live.
func (s *ResultIterator) Backlog() uint64 { return s.backlog }

// Next returns the next result, waiting for one to be stored until ctx is done.
func (s *ResultIterator) Next(ctx context.Context) (ResultMsg, error) {
	m, err := s.it.Next(jetstream.NextContext(ctx))
	if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
		return ResultMsg{}, fmt.Errorf("queue: next result of run %s: %w", s.run, ErrStopped)
	}
	if err != nil {
		return ResultMsg{}, fmt.Errorf("queue: next result of run %s: %w", s.run, err)
	}
	md, err := m.Metadata()
	if err != nil {
		return ResultMsg{}, fmt.Errorf("queue: next result of run %s: %w", s.run, err)
	}
	return ResultMsg{
		Run:     s.run,
		MsgID:   m.Headers().Get(jetstream.MsgIDHeader),
		Seq:     md.Sequence.Stream,
		Stored:  md.Timestamp,
		Pending: md.NumPending,
		Data:    m.Data(),
	}, nil
}

// ErrStopped is what ResultIterator.Next returns once Stop was called.
var ErrStopped = errors.New("queue: iteration stopped")

// Stop ends the iteration; Next then returns an error wrapping ErrStopped.
// The server drops the consumer after its inactivity threshold.
func (s *ResultIterator) Stop() { s.it.Stop() }
