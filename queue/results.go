package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
	// Key is the result key of the subject it was stored on ("" for a worker older than
	// keys): the case it was filed under, which its job's may not be.
	Key  string
	Data []byte
	// Bytes is about what the message takes of the stream: its subject, headers and data.
	Bytes int64
}

// storedBytes estimates what a result takes of the results stream: the server's own count
// adds its record framing to the subject, headers and data.
func storedBytes(subject, msgID string, data []byte) int64 {
	const framing = 22 + len("Nats-Msg-Id: \r\nNats-Expected-Stream: SKILLFLEET_RESULTS\r\nNATS/1.0\r\n\r\n")
	return int64(framing + len(subject) + len(msgID) + len(data))
}

// ResultIterator iterates over a run's results: every stored one, oldest first, then each new
// one as it is stored. Next is not safe for concurrent use; Stop may be called from another
// goroutine.
type ResultIterator struct {
	t       *Topology
	run     string
	it      jetstream.MessagesContext
	cons    jetstream.Consumer
	backlog uint64
	// last is the stream sequence of the last result delivered (0: none yet).
	last uint64
	// quiet is how long Next waits for a result before it asks the stream whether one was
	// stored past last (StallCheck).
	quiet time.Duration
	// reopened counts the iterations reopened; cause is why the last one was (a silence with
	// results stored, or the client library's error).
	reopened int
	cause    error
	// mu keeps Stop, called from another goroutine, and a reopen from missing each other: a
	// stopped iteration is never reopened.
	mu      sync.Mutex
	stopped bool
}

// StallCheck is how long a ResultIterator waits in silence before it asks the results stream
// whether a result of its run was stored that it was not given. The client library's ordered
// consumer can stop delivering without an error when the stream or its consumer changes
// leader at a bad moment (it resets its pull without issuing a new one; nats.go #2063): a
// cluster that lost a node then left runs waiting for results that were stored. The check is
// one last-message lookup per silent run per StallCheck.
const StallCheck = 20 * time.Second

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
	s := &ResultIterator{t: t, run: run, quiet: StallCheck}
	info, err := s.open(ctx)
	if err != nil {
		return nil, err
	}
	if info != nil {
		s.backlog = info.NumPending
	}
	return s, nil
}

// open starts the iteration after the last result delivered (from the first, at the start).
func (s *ResultIterator) open(ctx context.Context) (*jetstream.ConsumerInfo, error) {
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects: runResultSubjects(s.run), DeliverPolicy: jetstream.DeliverAllPolicy,
		// Unbounded, the library retries recreating its consumer forever after a node loss
		// (seen: a run waiting five minutes, its iteration in the library's reset loop); bounded,
		// Next gets the error and opens a new consumer.
		MaxResetAttempts: 3,
		// No short inactive threshold here (Stop deletes the consumer): a run loop busy for
		// a while stops pulling once its buffer is full, and its consumer must not be taken
		// away meanwhile. What a coordinator that dies leaves goes after nats.go's 5 minutes.
	}
	if s.last > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, s.last+1
	}
	cons, err := s.t.js.OrderedConsumer(ctx, ResultsStream, cfg)
	if err != nil {
		return nil, fmt.Errorf("queue: results of run %s: %w", s.run, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return nil, fmt.Errorf("queue: results of run %s: %w", s.run, err)
	}
	s.it, s.cons = it, cons
	return cons.CachedInfo(), nil
}

// runResultSubjects filters every result of run: its cases' subjects and the one of workers
// older than result keys.
func runResultSubjects(run string) []string {
	return []string{ResultSubject(run), ResultSubject(run) + ".>"}
}

// stalled reports whether the stream holds a result of the run past the last one delivered.
func (s *ResultIterator) stalled(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, subj := range runResultSubjects(s.run) {
		m, err := s.t.results.GetLastMsgForSubject(ctx, subj)
		if err == nil && m.Sequence > s.last {
			return true
		}
	}
	return false
}

// reopen replaces a stalled iteration with one that starts after the last result delivered.
func (s *ResultIterator) reopen(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return fmt.Errorf("queue: next result of run %s: %w", s.run, ErrStopped)
	}
	s.it.Stop()
	s.t.dropConsumer(ctx, ResultsStream, s.cons)
	if _, err := s.open(ctx); err != nil {
		return fmt.Errorf("queue: next result of run %s: reopening a stalled iteration: %w", s.run, err)
	}
	s.reopened++
	return nil
}

// Reopened is how many times the iteration was reopened, and why the last time.
func (s *ResultIterator) Reopened() (int, error) { return s.reopened, s.cause }

func (s *ResultIterator) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// Backlog is how many of the run's results were stored when the stream was opened: after that
// many, the iteration is live.
func (s *ResultIterator) Backlog() uint64 { return s.backlog }

// Next returns the next result, waiting for one to be stored until ctx is done. It reopens the
// iteration from the last result delivered when the client library gives up recreating its
// consumer, and when after StallCheck of silence the stream holds a result past that one.
func (s *ResultIterator) Next(ctx context.Context) (ResultMsg, error) {
	for {
		wait, cancel := context.WithTimeout(ctx, s.quiet)
		m, err := s.it.Next(jetstream.NextContext(wait))
		cancel()
		switch {
		case err == nil:
			return s.message(m)
		case ctx.Err() != nil:
			return ResultMsg{}, fmt.Errorf("queue: next result of run %s: %w", s.run, ctx.Err())
		case s.isStopped():
			return ResultMsg{}, fmt.Errorf("queue: next result of run %s: %w", s.run, ErrStopped)
		case errors.Is(err, context.DeadlineExceeded) && !s.stalled(ctx):
			continue
		}
		s.cause = err
		if err := s.reopen(ctx); err != nil {
			if errors.Is(err, ErrStopped) {
				return ResultMsg{}, err
			}
			s.cause = err
			select {
			case <-ctx.Done():
				return ResultMsg{}, fmt.Errorf("queue: next result of run %s: %w", s.run, ctx.Err())
			case <-time.After(time.Second):
			}
		}
	}
}

// message is m as a ResultMsg; its sequence becomes the one a reopened iteration follows.
func (s *ResultIterator) message(m jetstream.Msg) (ResultMsg, error) {
	md, err := m.Metadata()
	if err != nil {
		return ResultMsg{}, fmt.Errorf("queue: next result of run %s: %w", s.run, err)
	}
	s.last = md.Sequence.Stream
	return resultMsgOf(s.run, m.Subject(), m.Headers().Get(jetstream.MsgIDHeader), md.Sequence.Stream, md.Timestamp, md.NumPending, m.Data()), nil
}

func resultMsgOf(run, subject, msgID string, seq uint64, stored time.Time, pending uint64, data []byte) ResultMsg {
	_, key, _ := ParseResultSubject(subject)
	return ResultMsg{
		Run: run, MsgID: msgID, Seq: seq, Stored: stored, Pending: pending, Key: key, Data: data,
		Bytes: storedBytes(subject, msgID, data),
	}
}

// ErrStopped is what ResultIterator.Next returns once Stop was called.
var ErrStopped = errors.New("queue: iteration stopped")

// Stop ends the iteration and deletes its consumer (consumers.go); Next then returns an
// error wrapping ErrStopped.
func (s *ResultIterator) Stop() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	s.it.Stop()
	cons := s.cons
	s.mu.Unlock()
	s.t.dropConsumer(context.Background(), ResultsStream, cons)
}

// ReadCaseResults calls fn, in stored order, with each result stored on the subject of run's
// case with result key key ("" reads the subject of workers older than keys), as stored when
// it is called; it stops at fn's first error. It reads the case's messages and no others, so
// its cost is the case's whatever the size of the run.
func (t *Topology) ReadCaseResults(ctx context.Context, run, key string, fn func(ResultMsg) error) error {
	if err := ValidateRunID(run); err != nil {
		return err
	}
	if key != "" {
		if err := ValidateResultKey(key); err != nil {
			return err
		}
	}
	subj := CaseResultSubject(run, key)
	if key == "" {
		// Most runs have none there: one look-up rather than a consumer.
		if _, err := t.results.GetLastMsgForSubject(ctx, subj); errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
	}
	cons, err := t.js.OrderedConsumer(ctx, ResultsStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subj}, DeliverPolicy: jetstream.DeliverAllPolicy, InactiveThreshold: readIdle,
	})
	if err != nil {
		return fmt.Errorf("queue: results of run %s case %s: %w", run, key, err)
	}
	defer t.dropConsumer(ctx, ResultsStream, cons)
	n := cons.CachedInfo().NumPending
	if n == 0 {
		return nil
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("queue: results of run %s case %s: %w", run, key, err)
	}
	defer it.Stop()
	for range n {
		wait, cancel := context.WithTimeout(ctx, StallCheck)
		m, err := it.Next(jetstream.NextContext(wait))
		cancel()
		if err != nil {
			return fmt.Errorf("queue: results of run %s case %s: %w", run, key, err)
		}
		md, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("queue: results of run %s case %s: %w", run, key, err)
		}
		if err := fn(resultMsgOf(run, m.Subject(), m.Headers().Get(jetstream.MsgIDHeader), md.Sequence.Stream, md.Timestamp, md.NumPending, m.Data())); err != nil {
			return err
		}
	}
	return nil
}

// GetResult reads the result stored at seq, which must be one of run's: a counted result a
// worker filed under another case (pb.RunStatus.misfiled). ErrNotFound when it is gone.
func (t *Topology) GetResult(ctx context.Context, run string, seq uint64) (ResultMsg, error) {
	raw, err := t.results.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return ResultMsg{}, fmt.Errorf("queue: result %d of run %s: %w", seq, run, ErrNotFound)
	}
	if err != nil {
		return ResultMsg{}, fmt.Errorf("queue: result %d of run %s: %w", seq, run, err)
	}
	if r, _, ok := ParseResultSubject(raw.Subject); !ok || r != run {
		return ResultMsg{}, fmt.Errorf("queue: result %d is not one of run %s: %w", seq, run, ErrNotFound)
	}
	return resultMsgOf(run, raw.Subject, raw.Header.Get(jetstream.MsgIDHeader), raw.Sequence, raw.Time, 0, raw.Data), nil
}

// PurgeRunResults removes every stored result of run from the results stream: what evicting a
// finished run does, once its report is stored, to give its room to running ones.
func (t *Topology) PurgeRunResults(ctx context.Context, run string) error {
	if err := ValidateRunID(run); err != nil {
		return err
	}
	for _, subj := range runResultSubjects(run) {
		if err := t.results.Purge(ctx, jetstream.WithPurgeSubject(subj)); err != nil {
			return fmt.Errorf("queue: purge the results of run %s: %w", run, err)
		}
	}
	return nil
}
