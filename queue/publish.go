package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// PublishJob stores one job on its lane and waits for the server's ack. The message id is
// JobMsgID(run, jobID), so publishing a job again within JobsDuplicates stores it once: a
// coordinator that restarts mid-publication can simply publish the run's jobs again.
func (t *Topology) PublishJob(ctx context.Context, lane Lane, run, jobID string, data []byte) error {
	m, err := jobMsg(lane, run, jobID, data)
	if err != nil {
		return err
	}
	if err := publishIdempotent(ctx, t.js, m); err != nil {
		return fmt.Errorf("queue: publish job %s of run %s: %w", jobID, run, err)
	}
	return nil
}

// PublishResult stores one attempt's result on its case's subject (CaseResultSubject of run
// and key) and waits for the server's ack. The message id is ResultMsgID(run, jobID, attempt,
// data): a worker that retries the publish, or whose ack was lost, does not store the result
// twice, while a later attempt of the same job gets a message of its own.
func (t *Topology) PublishResult(ctx context.Context, run, key, jobID string, attempt int, data []byte) error {
	m, err := resultMsg(run, key, jobID, attempt, data)
	if err != nil {
		return err
	}
	if err := publishIdempotent(ctx, t.js, m); err != nil {
		return fmt.Errorf("queue: publish result of job %s attempt %d of run %s: %w", jobID, attempt, run, err)
	}
	return nil
}

func resultMsg(run, key, jobID string, attempt int, data []byte) (*nats.Msg, error) {
	if err := ValidateRunID(run); err != nil {
		return nil, err
	}
	if key != "" {
		if err := ValidateResultKey(key); err != nil {
			return nil, err
		}
	}
	if err := ValidateJobID(jobID); err != nil {
		return nil, err
	}
	if attempt < 1 {
		return nil, fmt.Errorf("queue: result attempt must be at least 1, got %d", attempt)
	}
	return &nats.Msg{Subject: CaseResultSubject(run, key), Data: data, Header: nats.Header{
		// Assigned, not Set: the keys are canonical already, and this runs for every result.
		jetstream.MsgIDHeader:          {ResultMsgID(run, jobID, attempt, data)},
		jetstream.ExpectedStreamHeader: {ResultsStream},
	}}, nil
}

const (
	// publishAttemptTimeout bounds one attempt of a synchronous publish. A publish written
	// into a connection as it breaks is lost without an error; only a timeout reveals it.
	publishAttemptTimeout = 5 * time.Second
	// publishRetryWait is the pause after the first attempt; it doubles up to maxRetryWait.
	publishRetryWait = 250 * time.Millisecond
	// maxRetryWait caps the pause between two resends of one message.
	maxRetryWait = 5 * time.Second
	// publishMaxAttempts bounds the attempts when ctx has no deadline (a deleted stream looks
	// like a restarting server: no stream answers).
	publishMaxAttempts = 10
)

// publishIdempotent publishes m, which carries a message id, until the server acks it, it
// refuses it, or ctx is done. Resending is safe: the server stores a message id once.
func publishIdempotent(ctx context.Context, js jetstream.JetStream, m *nats.Msg) error {
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, publishAttemptTimeout)
		_, err := js.PublishMsg(actx, m)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || !retryable(err) || attempt == publishMaxAttempts {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff(publishRetryWait, attempt-1)):
		}
	}
}

func jobMsg(lane Lane, run, jobID string, data []byte) (*nats.Msg, error) {
	if !lane.Valid() {
		return nil, fmt.Errorf("queue: unknown lane %q", lane)
	}
	if err := ValidateRunID(run); err != nil {
		return nil, err
	}
	if err := ValidateJobID(jobID); err != nil {
		return nil, err
	}
	return &nats.Msg{Subject: JobSubject(lane, run), Data: data, Header: nats.Header{
		jetstream.MsgIDHeader: {JobMsgID(run, jobID)},
		// A misconfigured account that binds the subject to another stream must not swallow jobs.
		jetstream.ExpectedStreamHeader: {JobsStream},
	}}, nil
}

// PublisherConfig tunes an asynchronous publisher (JobPublisher, ResultPublisher).
type PublisherConfig struct {
	// MaxInFlight bounds the publishes awaiting the server's ack; Publish blocks beyond it.
	MaxInFlight int
	// AckTimeout is how long one publish waits for its ack before it counts as failed (and is
	// retried).
	AckTimeout time.Duration
	// Retries is how many times a publish that failed for a transient reason (disconnection,
	// ack timeout, no stream response) is sent again. The message id makes resending safe.
	Retries int
	// RetryWait is the pause before the first resend; it doubles with each resend of the same
	// message, up to 5 s.
	RetryWait time.Duration
}

// DefaultJobPublisherConfig returns defaults that ride out a disconnection or a server restart
// of about half a minute.
func DefaultJobPublisherConfig() PublisherConfig {
	return PublisherConfig{MaxInFlight: 1024, AckTimeout: 10 * time.Second, Retries: 8, RetryWait: 250 * time.Millisecond}
}

// DefaultResultPublisherConfig returns defaults for a worker's results: a few hundred results
// in flight, and the same patience as the job publisher.
func DefaultResultPublisherConfig() PublisherConfig {
	return PublisherConfig{MaxInFlight: 256, AckTimeout: 10 * time.Second, Retries: 8, RetryWait: 250 * time.Millisecond}
}

// PublishStats counts what a publisher's publishes came to.
type PublishStats struct {
	// Stored is how many publishes the server acked as new messages.
	Stored int
	// Duplicates is how many it acked as already stored (same message id within the stream's
	// duplicate window). A resend whose first ack was lost counts here, so Stored + Duplicates
	// is what got through, not Stored alone.
	Duplicates int
	// Failed is how many failed for good.
	Failed int
	// Retried is how many resends there were.
	Retried int
}

// asyncPublisher publishes messages that carry a message id without waiting for each ack,
// with at most MaxInFlight awaiting one, and resends those that failed for a transient reason.
// Every publish is settled exactly once: stored, or failed for good.
type asyncPublisher struct {
	js   jetstream.JetStream
	cfg  PublisherConfig
	what string // "job" or "result", for errors

	slots chan struct{}

	mu       sync.Mutex
	pending  map[*nats.Msg]*pendingPub
	inflight int
	idle     chan struct{} // closed while inflight == 0
	first    error
	failed   int
	stats    PublishStats
}

// pendingPub is one publish awaiting its ack.
type pendingPub struct {
	resends int
	// done, when set, learns how the publish settled.
	done func(error)
}

func newAsyncPublisher(nc *nats.Conn, cfg PublisherConfig, what string) (*asyncPublisher, error) {
	if cfg.MaxInFlight < 1 || cfg.AckTimeout <= 0 || cfg.Retries < 0 || cfg.RetryWait < 0 {
		return nil, fmt.Errorf("queue: invalid %s publisher config %+v", what, cfg)
	}
	p := &asyncPublisher{
		cfg:     cfg,
		what:    what,
		slots:   make(chan struct{}, cfg.MaxInFlight),
		pending: make(map[*nats.Msg]*pendingPub),
		idle:    closedChan(),
	}
	js, err := jetstream.New(nc,
		// Our semaphore bounds in-flight publishes; the library's stall logic must never fire.
		jetstream.WithPublishAsyncMaxPending(cfg.MaxInFlight+1),
		jetstream.WithPublishAsyncTimeout(cfg.AckTimeout),
		jetstream.WithPublishAsyncAckHandler(p.onAck),
		jetstream.WithPublishAsyncErrHandler(p.onErr),
	)
	if err != nil {
		return nil, fmt.Errorf("queue: %s publisher: %w", what, err)
	}
	p.js = js
	return p, nil
}

// publish queues m, blocking while MaxInFlight publishes await their ack. done (optional) is
// called once when the publish settles, from the library's callback goroutine: it must not
// block.
func (p *asyncPublisher) publish(ctx context.Context, m *nats.Msg, done func(error)) error {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	p.mu.Lock()
	p.inflight++
	if p.inflight == 1 {
		p.idle = make(chan struct{})
	}
	p.pending[m] = &pendingPub{done: done}
	p.mu.Unlock()
	p.send(m)
	return nil
}

func (p *asyncPublisher) send(m *nats.Msg) {
	if _, err := p.js.PublishMsgAsync(m); err != nil {
		p.onErr(p.js, m, err)
	}
}

// wait blocks until every queued publish is settled, then returns the first failure since the
// last wait (with how many failed) and forgets it.
func (p *asyncPublisher) wait(ctx context.Context) error {
	p.mu.Lock()
	idle := p.idle
	p.mu.Unlock()
	select {
	case <-idle:
	default:
		select {
		case <-idle:
		case <-ctx.Done():
			return fmt.Errorf("queue: wait for %s publications: %w", p.what, ctx.Err())
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	first, failed := p.first, p.failed
	p.first, p.failed = nil, 0
	if first != nil {
		return fmt.Errorf("queue: %d %s publication(s) failed, the first: %w", failed, p.what, first)
	}
	return nil
}

func (p *asyncPublisher) snapshot() PublishStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

func (p *asyncPublisher) close(ctx context.Context) error {
	err := p.wait(ctx)
	p.js.CleanupPublisher()
	return err
}

func (p *asyncPublisher) onAck(_ jetstream.JetStream, m *nats.Msg, ack *jetstream.PubAck) {
	p.mu.Lock()
	if ack.Duplicate {
		p.stats.Duplicates++
	} else {
		p.stats.Stored++
	}
	done := p.settleLocked(m)
	p.mu.Unlock()
	if done != nil {
		done(nil)
	}
}

func (p *asyncPublisher) onErr(_ jetstream.JetStream, m *nats.Msg, err error) {
	p.mu.Lock()
	pp, ok := p.pending[m]
	if !ok {
		// Settled already (a late callback after CleanupPublisher).
		p.mu.Unlock()
		return
	}
	if retryable(err) && pp.resends < p.cfg.Retries {
		n := pp.resends
		pp.resends++
		p.stats.Retried++
		p.mu.Unlock()
		// Not inline: this runs on the library's callback goroutine, and during a
		// reconnection a prompt resend would only fail the same way.
		time.AfterFunc(backoff(p.cfg.RetryWait, n), func() { p.send(m) })
		return
	}
	p.stats.Failed++
	p.failed++
	err = fmt.Errorf("%s message %s on %s: %w", p.what, m.Header.Get(jetstream.MsgIDHeader), m.Subject, err)
	if p.first == nil {
		p.first = err
	}
	done := p.settleLocked(m)
	p.mu.Unlock()
	if done != nil {
		done(err)
	}
}

// settleLocked forgets a publish and returns its done callback, to be called without the lock.
func (p *asyncPublisher) settleLocked(m *nats.Msg) func(error) {
	pp, ok := p.pending[m]
	if !ok {
		return nil
	}
	delete(p.pending, m)
	<-p.slots
	p.inflight--
	if p.inflight == 0 {
		close(p.idle)
	}
	return pp.done
}

// JobPublisher publishes jobs asynchronously, with at most MaxInFlight awaiting an ack. Publish
// may be called from several goroutines, for several runs at once: failures are kept per run,
// and Wait(run) reports only that run's, so one run's refused job never surfaces as another's
// (which would leave the refused run looking published with a job missing).
type JobPublisher struct {
	p *asyncPublisher

	mu   sync.Mutex
	runs map[string]*runPublications
}

// runPublications are one run's publishes in flight and the failures no Wait has reported.
type runPublications struct {
	inflight int
	idle     chan struct{} // closed while inflight == 0
	first    error
	failed   int
}

// NewJobPublisher returns a JobPublisher on the topology's connection. It has its own
// JetStream context, so its ack handlers see only its own publishes. Close it when done.
func (t *Topology) NewJobPublisher(cfg PublisherConfig) (*JobPublisher, error) {
	p, err := newAsyncPublisher(t.conn.nc, cfg, "job")
	if err != nil {
		return nil, err
	}
	return &JobPublisher{p: p, runs: make(map[string]*runPublications)}, nil
}

// Publish queues one job for publication, blocking while MaxInFlight publishes await their
// ack. An error here is about this job (bad arguments, ctx done); failures of the publication
// itself are reported by Wait for its run.
func (p *JobPublisher) Publish(ctx context.Context, lane Lane, run, jobID string, data []byte) error {
	m, err := jobMsg(lane, run, jobID, data)
	if err != nil {
		return err
	}
	p.begin(run)
	if err := p.p.publish(ctx, m, func(err error) { p.settle(run, err, true) }); err != nil {
		p.settle(run, nil, false)
		return fmt.Errorf("queue: publish job %s of run %s: %w", jobID, run, err)
	}
	return nil
}

func (p *JobPublisher) begin(run string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rp := p.runs[run]
	if rp == nil {
		rp = &runPublications{}
		p.runs[run] = rp
	}
	rp.inflight++
	if rp.inflight == 1 {
		rp.idle = make(chan struct{})
	}
}

// settle ends one of run's publishes; sent is false for one that never went out (its error was
// returned by Publish). It runs on the library's callback goroutine and must not block.
func (p *JobPublisher) settle(run string, err error, sent bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rp := p.runs[run]
	if rp == nil {
		return
	}
	if sent && err != nil {
		rp.failed++
		if rp.first == nil {
			rp.first = err
		}
	}
	rp.inflight--
	if rp.inflight == 0 {
		close(rp.idle)
		if rp.failed == 0 {
			delete(p.runs, run) // nothing left to report
		}
	}
}

// Wait blocks until every queued publish of run is settled, then returns the first failure of
// that run since its last Wait (with how many failed) and forgets them. Other runs'
// publications neither delay it nor show in it. Do not call it while another goroutine may
// still Publish jobs of run it should cover.
func (p *JobPublisher) Wait(ctx context.Context, run string) error {
	p.mu.Lock()
	rp := p.runs[run]
	var idle chan struct{}
	if rp != nil {
		idle = rp.idle
	}
	p.mu.Unlock()
	if rp == nil {
		return nil
	}
	select {
	case <-idle:
	default:
		select {
		case <-idle:
		case <-ctx.Done():
			return fmt.Errorf("queue: wait for the job publications of run %s: %w", run, ctx.Err())
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	first, failed := rp.first, rp.failed
	rp.first, rp.failed = nil, 0
	if rp.inflight == 0 && p.runs[run] == rp {
		delete(p.runs, run)
	}
	if first != nil {
		return fmt.Errorf("queue: %d job publication(s) of run %s failed, the first: %w", failed, run, first)
	}
	return nil
}

// Stats returns the counts since the publisher was created.
func (p *JobPublisher) Stats() PublishStats { return p.p.snapshot() }

// Close waits for queued publishes (bounded by ctx) and releases the publisher's reply
// subscription. It returns an error only when ctx ends first: publication failures belong to
// their runs' Wait.
func (p *JobPublisher) Close(ctx context.Context) error {
	err := p.p.close(ctx)
	if ctx.Err() != nil {
		return err
	}
	return nil
}

// ResultPublisher publishes a worker's results asynchronously, so a slot is free for the next
// job while its last result is being stored. Each result's done callback says when it is
// stored (the job may then be acked) or that it failed for good (the job must not be acked).
type ResultPublisher struct {
	p *asyncPublisher
}

// NewResultPublisher returns a ResultPublisher on the topology's connection. Close it when
// done.
func (t *Topology) NewResultPublisher(cfg PublisherConfig) (*ResultPublisher, error) {
	p, err := newAsyncPublisher(t.conn.nc, cfg, "result")
	if err != nil {
		return nil, err
	}
	return &ResultPublisher{p: p}, nil
}

// PublishResult queues one attempt's result on its case's subject (CaseResultSubject of run
// and key) under ResultMsgID(run, jobID, attempt, data), blocking while MaxInFlight results
// await their ack. done is called exactly once, from the library's callback goroutine (so it
// must not block), unless an error is returned here.
func (p *ResultPublisher) PublishResult(ctx context.Context, run, key, jobID string, attempt int, data []byte, done func(error)) error {
	m, err := resultMsg(run, key, jobID, attempt, data)
	if err != nil {
		return err
	}
	if err := p.p.publish(ctx, m, done); err != nil {
		return fmt.Errorf("queue: publish result of job %s attempt %d of run %s: %w", jobID, attempt, run, err)
	}
	return nil
}

// Stats returns the counts since the publisher was created.
func (p *ResultPublisher) Stats() PublishStats { return p.p.snapshot() }

// Close waits for queued results (bounded by ctx) and releases the publisher's reply
// subscription.
func (p *ResultPublisher) Close(ctx context.Context) error { return p.p.close(ctx) }

// retryable reports whether a failed publish may have been lost in transit (a disconnection, a
// write on a broken connection, an ack that never came, a stream that did not answer during a
// restart) rather than refused: resending is then safe because of the message id. The server's
// refusals and a closed connection are final.
func retryable(err error) bool {
	var apiErr *jetstream.APIError
	switch {
	case errors.As(err, &apiErr),
		errors.Is(err, nats.ErrConnectionClosed),
		errors.Is(err, nats.ErrConnectionDraining),
		errors.Is(err, nats.ErrMaxPayload),
		errors.Is(err, nats.ErrBadSubject),
		errors.Is(err, jetstream.ErrJetStreamPublisherClosed):
		return false
	}
	return true
}

// backoff is the pause before resend number n+1: base doubled n times, at most maxRetryWait.
func backoff(base time.Duration, n int) time.Duration {
	if n > 10 {
		return maxRetryWait
	}
	return min(base<<n, maxRetryWait)
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
