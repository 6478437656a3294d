// Package worker runs jobs: it pulls them from JetStream one per free slot, executes each in a
// sandbox, and publishes exactly one final result per job.
package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/suite"
)

// Config tunes a worker.
type Config struct {
	// ID names the worker in results, logs and container labels; stable across restarts of
	// the same worker so its stray containers can be recognised.
	ID    string
	Slots int
	// MaxAttempts must equal the job consumers' MaxDeliver: the last delivery records an
	// errored result instead of asking for another.
	MaxAttempts int
	// Heartbeat is how often a running job's message is marked in progress (AckWait/3).
	Heartbeat time.Duration
	// FetchWait bounds one blocking fetch, and so how quickly an idle worker notices a stop.
	FetchWait time.Duration
	// RetryDelay is the redelivery delay after an infrastructure failure, times the attempt.
	RetryDelay time.Duration
	// DrainGrace is how long running jobs may finish after a graceful stop.
	DrainGrace time.Duration
	// CacheDir holds extracted suite bundles; KeepBundles bounds how many stay.
	CacheDir    string
	KeepBundles int
	// MaxResultBytes bounds a result message; it must not exceed the NATS server's max
	// payload (1 MiB by default).
	MaxResultBytes int
}

func (c *Config) defaults() error {
	if c.ID == "" {
		return errors.New("worker: an id is required")
	}
	if c.Slots < 1 {
		c.Slots = 1
	}
	if c.MaxAttempts < 1 {
		c.MaxAttempts = 3
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = 10 * time.Second
	}
	if c.FetchWait <= 0 {
		c.FetchWait = 500 * time.Millisecond
	}
	if c.RetryDelay <= 0 {
		c.RetryDelay = 2 * time.Second
	}
	if c.DrainGrace <= 0 {
		c.DrainGrace = 5 * time.Minute
	}
	if c.KeepBundles <= 0 {
		c.KeepBundles = 16
	}
	if c.MaxResultBytes <= 0 {
		c.MaxResultBytes = 1 << 20
	}
	if c.CacheDir == "" {
		return errors.New("worker: a bundle cache directory is required")
	}
	return nil
}

// Executor runs one job against an extracted bundle. A returned error is an infrastructure
// failure (sandbox would not start, bundle unreadable) and is retried; everything the case
// itself caused, including a timeout, is a Result.
type Executor interface {
	Execute(ctx context.Context, job *pb.Job, bundleDir string) (*pb.Result, error)
}

// ResultPublisher stores a result durably, deduplicated by run, job and attempt.
type ResultPublisher interface {
	PublishResult(ctx context.Context, run, jobID string, attempt int, data []byte) error
}

// Deps are a worker's collaborators.
type Deps struct {
	// Lanes are the job consumers in priority order (on-demand before scheduled).
	Lanes    []jetstream.Consumer
	Results  ResultPublisher
	Bundles  suite.BundleSource
	Executor Executor
	Log      *zap.Logger
	Registry prometheus.Registerer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Worker pulls and runs jobs.
type Worker struct {
	cfg     Config
	deps    Deps
	log     *zap.Logger
	now     func() time.Time
	cache   *suite.Cache
	metrics *metrics
	// force cancels running jobs; set while Run runs.
	mu    sync.Mutex
	force context.CancelFunc
}

// New checks the configuration and prepares the bundle cache.
func New(cfg Config, deps Deps) (*Worker, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if len(deps.Lanes) == 0 || deps.Results == nil || deps.Bundles == nil || deps.Executor == nil {
		return nil, errors.New("worker: lanes, results, bundles and executor are required")
	}
	if deps.Log == nil {
		deps.Log = zap.NewNop()
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	cache, err := suite.NewCache(cfg.CacheDir, deps.Bundles, cfg.KeepBundles)
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(deps.Registry, cfg.Slots)
	if err != nil {
		return nil, err
	}
	return &Worker{cfg: cfg, deps: deps, log: deps.Log.With(zap.String("worker", cfg.ID)), now: deps.Now, cache: cache, metrics: m}, nil
}

// Run pulls jobs until ctx is cancelled, then drains: it fetches nothing more, lets running
// jobs finish for up to DrainGrace, and returns nil. Jobs still running after the grace are
// stopped and handed back to the queue for another worker (a forced stop).
func (w *Worker) Run(ctx context.Context) error {
	jobCtx, force := context.WithCancel(context.WithoutCancel(ctx))
	defer force()
	w.mu.Lock()
	w.force = force
	w.mu.Unlock()
	free := make(chan struct{}, w.cfg.Slots)
	for range w.cfg.Slots {
		free <- struct{}{}
	}
	var running sync.WaitGroup
	w.log.Info("worker started", zap.Int("slots", w.cfg.Slots))
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
			continue
		case <-free:
		}
		n := 1
	more:
		for n < w.cfg.Slots {
			select {
			case <-free:
				n++
			default:
				break more
			}
		}
		msgs := w.fetch(ctx, n)
		for range n - len(msgs) {
			free <- struct{}{}
		}
		for _, msg := range msgs {
			running.Add(1)
			go func() {
				defer running.Done()
				defer func() { free <- struct{}{} }()
				w.handle(jobCtx, msg)
			}()
		}
	}
	w.log.Info("draining", zap.Duration("grace", w.cfg.DrainGrace))
	drained := make(chan struct{})
	go func() { running.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(w.cfg.DrainGrace):
		w.log.Warn("grace period over: stopping running jobs and returning them to the queue")
		force()
		<-drained
	}
	w.log.Info("worker stopped")
	return nil
}

// Force stops running jobs now and hands them back to the queue; use it after a graceful stop
// (cancelling Run's context) when the drain must not wait for the grace period.
func (w *Worker) Force() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.force != nil {
		w.force()
	}
}

// fetch takes up to n jobs, one per free slot, higher lanes first. It never prefetches more
// than it can run: each fetched message's AckWait starts at delivery.
func (w *Worker) fetch(ctx context.Context, n int) []jetstream.Msg {
	var out []jetstream.Msg
	for _, lane := range w.deps.Lanes {
		if len(out) == n {
			return out
		}
		out = append(out, w.take(lane, n-len(out), 0)...)
	}
	if len(out) > 0 {
		return out
	}
	// Idle: wait briefly on each lane in turn, so a stop or an on-demand job is noticed soon.
	wait := w.cfg.FetchWait / time.Duration(len(w.deps.Lanes))
	for _, lane := range w.deps.Lanes {
		if ctx.Err() != nil {
			return nil
		}
		if out = w.take(lane, n, wait); len(out) > 0 {
			return out
		}
	}
	return nil
}

func (w *Worker) take(lane jetstream.Consumer, n int, wait time.Duration) []jetstream.Msg {
	var (
		batch jetstream.MessageBatch
		err   error
	)
	if wait <= 0 {
		batch, err = lane.FetchNoWait(n)
	} else {
		batch, err = lane.Fetch(n, jetstream.FetchMaxWait(wait))
	}
	if err != nil {
		w.log.Warn("fetch failed", zap.Error(err))
		w.metrics.fetchErrors.Inc()
		return nil
	}
	var out []jetstream.Msg
	for m := range batch.Messages() {
		out = append(out, m)
	}
	if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) && !errors.Is(err, context.DeadlineExceeded) {
		w.log.Warn("fetch ended with an error", zap.Error(err))
		w.metrics.fetchErrors.Inc()
	}
	return out
}

// handle runs one delivery of one job and settles its message exactly once.
func (w *Worker) handle(ctx context.Context, msg jetstream.Msg) {
	start := w.now()
	attempt := 1
	if md, err := msg.Metadata(); err == nil {
		attempt = int(md.NumDelivered)
	}
	job := &pb.Job{}
	if err := proto.Unmarshal(msg.Data(), job); err != nil || job.GetId() == "" || job.GetRunId() == "" {
		// Not a job this fleet wrote: no run can be told, so say it loudly and drop it rather
		// than let it circle through every worker.
		w.metrics.malformed.Inc()
		w.log.Error("malformed job message terminated", zap.String("subject", msg.Subject()), zap.Int("bytes", len(msg.Data())), zap.Error(err))
		_ = msg.TermWithReason("malformed job message")
		return
	}
	log := w.log.With(zap.String("run", job.GetRunId()), zap.String("job", job.GetId()), zap.Int("attempt", attempt))
	w.metrics.inFlight.Inc()
	defer w.metrics.inFlight.Dec()
	if q := job.GetQueuedAt(); q != nil {
		w.metrics.queueWait.Observe(max(start.Sub(q.AsTime()), 0).Seconds())
	}

	stop := w.heartbeat(msg, log)
	res, err := w.execute(ctx, job)
	stop()

	last := attempt >= w.cfg.MaxAttempts
	gaveUp := false
	if err != nil {
		if ctx.Err() != nil {
			// Forced stop: not the job's fault; let another worker have it now.
			log.Warn("job interrupted by shutdown; returned to the queue", zap.Error(err))
			_ = msg.Nak()
			return
		}
		if !last {
			delay := w.cfg.RetryDelay * time.Duration(attempt)
			log.Warn("infrastructure failure; will retry", zap.Error(err), zap.Duration("delay", delay))
			w.metrics.retries.Inc()
			_ = msg.NakWithDelay(delay)
			return
		}
		log.Error("infrastructure failure on the last attempt; recording errored", zap.Error(err))
		res = erroredResult(job, fmt.Sprintf("infrastructure failure after %d attempts: %v", attempt, err))
		gaveUp = true
	}
	res.JobId, res.RunId, res.Skill, res.CaseName, res.Epoch, res.Kind = job.GetId(), job.GetRunId(), job.GetSkill(), job.GetCaseName(), job.GetEpoch(), job.GetKind()
	res.Agent = job.GetAgent()
	res.Attempt = int32(attempt)
	res.WorkerId = w.cfg.ID
	end := w.now()
	res.FinishedAt = timestamppb.New(end)
	if res.Timings == nil {
		res.Timings = &pb.Timings{}
	}
	res.Timings.TotalMs = end.Sub(start).Milliseconds()
	if q := job.GetQueuedAt(); q != nil {
		res.Timings.QueuedMs = max(start.Sub(q.AsTime()), 0).Milliseconds()
	}
	data, err := w.encodeResult(res)
	if err == nil {
		err = w.deps.Results.PublishResult(ctx, job.GetRunId(), job.GetId(), attempt, data)
	}
	if err != nil {
		// Without a stored result the job must not be acked: it comes back after AckWait.
		log.Error("publishing the result failed; leaving the job for redelivery", zap.Error(err))
		w.metrics.publishErrors.Inc()
		_ = msg.Nak()
		return
	}
	w.metrics.observe(res)
	if gaveUp {
		// MaxDeliver alone would leave the message in the work queue; terminating removes it
		// and tells advisories why.
		_ = msg.TermWithReason("final attempt recorded as errored")
		return
	}
	// A plain ack, not a confirmed one: the result is already stored, so a lost ack costs only
	// a redelivery whose duplicate result the coordinator ignores, and a round trip per job is
	// saved.
	if err := msg.Ack(); err != nil {
		log.Warn("ack failed", zap.Error(err))
	}
}

// execute fetches the job's bundle and runs it, bounding the whole with the job's timeout plus
// a margin for sandbox start and teardown, so a wedged executor cannot hold a slot forever.
func (w *Worker) execute(ctx context.Context, job *pb.Job) (*pb.Result, error) {
	timeout := time.Duration(job.GetTimeoutMs())*time.Millisecond + 2*time.Minute
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dir, release, err := w.cache.Get(ctx, job.GetBundleDigest())
	if err != nil {
		return nil, err
	}
	defer release()
	return w.deps.Executor.Execute(ctx, job, dir)
}

// heartbeat marks the message in progress until stop is called, so a long job is not
// redelivered while it runs.
func (w *Worker) heartbeat(msg jetstream.Msg, log *zap.Logger) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(w.cfg.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if err := msg.InProgress(); err != nil {
					log.Warn("heartbeat failed", zap.Error(err))
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// resultTextBytes is how much of each of output, stdout and stderr a result keeps. The
// assertions have already seen the whole captured text; reports show a few kilobytes.
const resultTextBytes = 64 << 10

// encodeResult trims the result's texts and marshals it within MaxResultBytes. A result that
// still does not fit is replaced by an errored one saying so: a result that cannot be stored
// would otherwise send the job round the fleet until it is blamed on the workers.
func (w *Worker) encodeResult(res *pb.Result) ([]byte, error) {
	for _, s := range []*string{&res.Output, &res.Stdout, &res.Stderr} {
		if t, cut := trimText(*s, resultTextBytes); cut {
			*s = t
			res.OutputTruncated = true
		}
	}
	data, err := proto.Marshal(res)
	if err != nil || len(data) <= w.cfg.MaxResultBytes {
		return data, err
	}
	small := &pb.Result{
		JobId: res.JobId, RunId: res.RunId, Skill: res.Skill, CaseName: res.CaseName, Epoch: res.Epoch,
		Kind: res.Kind, Agent: res.Agent, Attempt: res.Attempt, WorkerId: res.WorkerId,
		FinishedAt: res.FinishedAt, Timings: res.Timings, Usage: res.Usage,
		Verdict: pb.Verdict_VERDICT_ERRORED,
		Reason:  fmt.Sprintf("the result (%d bytes) exceeds the %d-byte message limit even with its output trimmed", len(data), w.cfg.MaxResultBytes),
	}
	return proto.Marshal(small)
}

// trimText keeps the head and tail of s within limit bytes (cut on rune boundaries), with a
// marker where text was left out.
func trimText(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	half := limit / 2
	head, tail := half, len(s)-half
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + fmt.Sprintf("\n[skillfleet: %d bytes left out of the stored result]\n", tail-head) + s[tail:], true
}

func erroredResult(job *pb.Job, reason string) *pb.Result {
	return &pb.Result{Verdict: pb.Verdict_VERDICT_ERRORED, Reason: reason, Kind: job.GetKind()}
}
