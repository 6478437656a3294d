package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
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
//
// It speaks JetStream's publish protocol itself rather than through the client library's
// PublishMsgAsync, which decodes every ack by reflection (encoding/json, about 20 allocations
// an ack) and arms a timer per publish: a message goes out with a reply subject under one
// inbox subscription, the stream's ack comes back there and is read by parsePubAck, and one
// sweeper fails the acks that are overdue. Like the library it fails every publish awaiting an
// ack when the connection starts reconnecting (the ack may be lost with it), so that it is
// resent.
type asyncPublisher struct {
	nc   *nats.Conn
	cfg  PublisherConfig
	what string // "job" or "result", for errors

	slots  chan struct{}
	sub    *nats.Subscription
	prefix string // the reply subjects': an inbox and a dot
	status chan nats.Status
	quit   chan struct{}
	done   sync.WaitGroup // the sweeper and the status watcher
	once   sync.Once

	mu      sync.Mutex
	closed  bool
	token   uint64
	waiting map[uint64]*pendingPub // sent, awaiting an ack, by reply token
	// inflight counts the publishes not settled: waiting, or about to be resent.
	inflight int
	idle     chan struct{} // closed while inflight == 0
	first    error
	failed   int
	stats    PublishStats
}

// pendingPub is one publish not settled yet.
type pendingPub struct {
	m *nats.Msg
	// sending is held for the whole of a send: a resend can be due (its ack overdue, then a
	// backoff) before the send before it has returned, and each sets the message's Reply.
	sending sync.Mutex
	resends int
	// due is when its ack is overdue.
	due time.Time
	// done, when set, learns how the publish settled.
	done func(error)
}

func newAsyncPublisher(nc *nats.Conn, cfg PublisherConfig, what string) (*asyncPublisher, error) {
	if cfg.MaxInFlight < 1 || cfg.AckTimeout <= 0 || cfg.Retries < 0 || cfg.RetryWait < 0 {
		return nil, fmt.Errorf("queue: invalid %s publisher config %+v", what, cfg)
	}
	p := &asyncPublisher{
		nc:      nc,
		cfg:     cfg,
		what:    what,
		slots:   make(chan struct{}, cfg.MaxInFlight),
		prefix:  nc.NewInbox() + ".",
		quit:    make(chan struct{}),
		waiting: make(map[uint64]*pendingPub),
		idle:    closedChan(),
	}
	sub, err := nc.Subscribe(p.prefix+"*", p.onReply)
	if err != nil {
		return nil, fmt.Errorf("queue: %s publisher: %w", what, err)
	}
	p.sub = sub
	p.status = nc.StatusChanged(nats.RECONNECTING, nats.CLOSED)
	p.done.Add(2)
	go p.watch()
	go p.sweep(max(cfg.AckTimeout/4, time.Millisecond))
	return p, nil
}

// publish queues m, blocking while MaxInFlight publishes await their ack. done (optional) is
// called once when the publish settles, from the reply subscription's goroutine or a timer's:
// it must not block.
func (p *asyncPublisher) publish(ctx context.Context, m *nats.Msg, done func(error)) error {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.slots
		return jetstream.ErrJetStreamPublisherClosed
	}
	p.inflight++
	if p.inflight == 1 {
		p.idle = make(chan struct{})
	}
	p.mu.Unlock()
	p.send(&pendingPub{m: m, done: done})
	return nil
}

// send publishes pp under a new reply token. The message's Reply is set here: each send has
// its own, so that a late ack of an earlier one is not taken for this one's.
func (p *asyncPublisher) send(pp *pendingPub) {
	pp.sending.Lock()
	defer pp.sending.Unlock()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.fail(pp, jetstream.ErrJetStreamPublisherClosed)
		return
	}
	p.token++
	token := p.token
	pp.m.Reply = p.prefix + strconv.FormatUint(token, 36)
	pp.due = time.Now().Add(p.cfg.AckTimeout)
	p.waiting[token] = pp
	p.mu.Unlock()
	if err := p.nc.PublishMsg(pp.m); err != nil && p.take(token) == pp {
		p.fail(pp, err)
	}
}

// take removes the publish waiting under token and returns it; nil when none does.
func (p *asyncPublisher) take(token uint64) *pendingPub {
	p.mu.Lock()
	defer p.mu.Unlock()
	pp := p.waiting[token]
	delete(p.waiting, token)
	return pp
}

// onReply settles the publish a stream's answer is for.
func (p *asyncPublisher) onReply(m *nats.Msg) {
	rest, ok := strings.CutPrefix(m.Subject, p.prefix)
	if !ok {
		return
	}
	token, err := strconv.ParseUint(rest, 36, 64)
	if err != nil {
		return
	}
	pp := p.take(token)
	if pp == nil {
		// Failed already (overdue, or the connection broke) and resent under another token.
		return
	}
	if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
		// No stream listens on the subject (yet): a restarting server, or a deleted stream.
		p.fail(pp, jetstream.ErrNoStreamResponse)
		return
	}
	duplicate, err := parsePubAck(m.Data)
	if err != nil {
		p.fail(pp, err)
		return
	}
	p.mu.Lock()
	if duplicate {
		p.stats.Duplicates++
	} else {
		p.stats.Stored++
	}
	done := p.settleLocked(pp)
	p.mu.Unlock()
	if done != nil {
		done(nil)
	}
}

// pubAckPrefix is how the server begins the ack of a stored message, from its template
// {"stream":<name>,"seq":<n>} (with "domain" before "seq" in a domain, and "duplicate": true
// and batch fields after it for some); an error is {"error":{...}}.
var pubAckPrefix = []byte(`{"stream":"`)

// parsePubAck reads a stream's answer to a publish: whether it was a duplicate, or the error
// the stream refused it with. The acks the server writes from its template are read without
// decoding; anything else is decoded as the client library decodes it.
func parsePubAck(data []byte) (duplicate bool, err error) {
	rest, ok := bytes.CutPrefix(data, pubAckPrefix)
	if ok && len(rest) > 0 && rest[0] != '"' && bytes.HasSuffix(rest, []byte("}")) && !bytes.Contains(rest, []byte(`"error"`)) {
		// A name is quoted with its quotes escaped, so these keys cannot be part of it.
		_, after, found := bytes.Cut(rest, []byte(`"duplicate":`))
		return found && bytes.HasPrefix(bytes.TrimLeft(after, " "), []byte("true")), nil
	}
	var ack struct {
		Error     *jetstream.APIError `json:"error"`
		Stream    string              `json:"stream"`
		Duplicate bool                `json:"duplicate"`
	}
	if err := json.Unmarshal(data, &ack); err != nil {
		return false, jetstream.ErrInvalidJSAck
	}
	if ack.Error != nil {
		return false, ack.Error
	}
	if ack.Stream == "" {
		return false, jetstream.ErrInvalidJSAck
	}
	return ack.Duplicate, nil
}

// sweep fails the publishes whose acks are overdue, every interval, until the publisher
// closes.
func (p *asyncPublisher) sweep(every time.Duration) {
	defer p.done.Done()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-p.quit:
			return
		case now := <-tick.C:
			p.failWaiting(func(pp *pendingPub) bool { return !now.Before(pp.due) }, jetstream.ErrAsyncPublishTimeout)
		}
	}
}

// watch fails every publish awaiting an ack when the connection breaks: an ack in transit is
// lost with it. They are resent after RetryWait (the connection buffers what is published
// while it reconnects).
func (p *asyncPublisher) watch() {
	defer p.done.Done()
	for s := range p.status {
		switch s {
		case nats.RECONNECTING:
			p.failWaiting(nil, nats.ErrDisconnected)
		case nats.CLOSED:
			p.failWaiting(nil, nats.ErrConnectionClosed)
		}
	}
}

// failWaiting fails the publishes awaiting an ack that match (all when match is nil) with err.
func (p *asyncPublisher) failWaiting(match func(*pendingPub) bool, err error) {
	var failed []*pendingPub
	p.mu.Lock()
	for token, pp := range p.waiting {
		if match == nil || match(pp) {
			delete(p.waiting, token)
			failed = append(failed, pp)
		}
	}
	p.mu.Unlock()
	for _, pp := range failed {
		p.fail(pp, err)
	}
}

// fail resends pp, taken from waiting, after a pause when err is transient and resends are
// left, else settles it as failed.
func (p *asyncPublisher) fail(pp *pendingPub, err error) {
	p.mu.Lock()
	if retryable(err) && pp.resends < p.cfg.Retries && !p.closed {
		n := pp.resends
		pp.resends++
		p.stats.Retried++
		p.mu.Unlock()
		// Not inline: during a reconnection a prompt resend would only fail the same way.
		time.AfterFunc(backoff(p.cfg.RetryWait, n), func() { p.send(pp) })
		return
	}
	p.stats.Failed++
	p.failed++
	err = fmt.Errorf("%s message %s on %s: %w", p.what, pp.m.Header.Get(jetstream.MsgIDHeader), pp.m.Subject, err)
	if p.first == nil {
		p.first = err
	}
	done := p.settleLocked(pp)
	p.mu.Unlock()
	if done != nil {
		done(err)
	}
}

// waitIdle waits for idle to be closed, or for ctx to end: an idle channel wins over an ended
// ctx, so a wait with nothing pending never fails.
func waitIdle(ctx context.Context, idle <-chan struct{}) error {
	select {
	case <-idle:
		return nil
	default:
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// wait blocks until every queued publish is settled, then returns the first failure since the
// last wait (with how many failed) and forgets it.
func (p *asyncPublisher) wait(ctx context.Context) error {
	p.mu.Lock()
	idle := p.idle
	p.mu.Unlock()
	if err := waitIdle(ctx, idle); err != nil {
		return fmt.Errorf("queue: wait for %s publications: %w", p.what, err)
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

// close waits for queued publishes (bounded by ctx), then releases the subscription and fails
// whatever is still unsettled with jetstream.ErrJetStreamPublisherClosed.
func (p *asyncPublisher) close(ctx context.Context) error {
	err := p.wait(ctx)
	p.once.Do(func() {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		close(p.quit)
		p.nc.RemoveStatusListener(p.status)
		p.done.Wait()
		_ = p.sub.Unsubscribe()
		// A resend still to come finds the publisher closed and fails the same way.
		p.failWaiting(nil, jetstream.ErrJetStreamPublisherClosed)
	})
	return err
}

// settleLocked ends a publish and returns its done callback, to be called without the lock.
func (p *asyncPublisher) settleLocked(pp *pendingPub) func(error) {
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
// reply subscription, which sees only its own publishes' acks. Close it when done.
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
// returned by Publish). It runs on the publisher's callback goroutines and must not block.
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
	if err := waitIdle(ctx, idle); err != nil {
		return fmt.Errorf("queue: wait for the job publications of run %s: %w", run, err)
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
// subscription; what is still queued then fails. It returns an error only when ctx ends first: publication failures belong to
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
// await their ack. done is called exactly once, from the publisher's reply subscription or a
// timer (so it must not block), unless an error is returned here.
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
