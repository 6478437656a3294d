// Package worker runs jobs: it pulls them from JetStream one per free slot, executes each in a
// sandbox, and publishes exactly one final result per job.
package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/skillfleet/skillfleet/bundle"
	"github.com/skillfleet/skillfleet/internal/clock"
	"github.com/skillfleet/skillfleet/internal/text"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
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
	// FetchWait bounds one blocking fetch of an idle worker, and so how long a stopping
	// worker may wait for its last pull requests to end.
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
	// AgentDigests are the digests of the configuration of each agent this worker runs, by
	// name (see CellDigest); "" is the configuration of jobs that name no agent. A job whose
	// agent has none gets no cell digest and is never reused.
	AgentDigests map[string]string
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

// ResultPublisher stores results durably, deduplicated by run, job and attempt, without making
// the caller wait: done is called once the result is stored (nil) or has failed for good, and
// must not block. An error returned instead means done will not be called. key is the job's
// result key (pb.Job.result_key): the case whose subject the result is stored on.
type ResultPublisher interface {
	PublishResult(ctx context.Context, run, key, jobID string, attempt int, data []byte, done func(error)) error
}

// Deps are a worker's collaborators.
type Deps struct {
	// Lanes are the job sources in priority order (on-demand before scheduled).
	Lanes    []Lane
	Results  ResultPublisher
	Bundles  bundle.BundleSource
	Executor Executor
	// Artifacts keeps a result's large documents (a long trajectory) apart; nil keeps them
	// inline while the result fits a message.
	Artifacts ArtifactStore
	// Cancellations stops the running jobs of cancelled runs; nil lets them run on to their
	// timeouts.
	Cancellations Cancellations
	// Withdrawals skips and stops the jobs the coordinator no longer needs; nil lets them
	// run (their results change nothing).
	Withdrawals Withdrawals
	Log         *zap.Logger
	Registry    prometheus.Registerer
	// Clock times the drain and the heartbeats; nil means the system clock.
	Clock clock.Clock
	// Now stamps results; nil means Clock.Now.
	Now func() time.Time
}

// Worker pulls and runs jobs.
type Worker struct {
	cfg   Config
	deps  Deps
	log   *zap.Logger
	now   func() time.Time
	cache *bundle.Cache
	// catalogs resolves the run catalogs prompt jobs name by digest.
	catalogs *catalogs
	metrics  *metrics
	beats    *heartbeats
	// cancels stops the jobs of cancelled runs.
	cancels *cancels
	// force cancels running jobs; set while Run runs.
	mu    sync.Mutex
	force context.CancelFunc
	// settling counts results published but not yet confirmed: their jobs are acked (or
	// handed back) when the confirmation comes.
	settling sync.WaitGroup
}

// settleWait bounds how long a stopping worker waits for its last results to be confirmed. A
// job whose result is not confirmed by then is not acked and comes back after AckWait.
const settleWait = 30 * time.Second

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
	if deps.Clock == nil {
		deps.Clock = clock.Real{}
	}
	if deps.Now == nil {
		deps.Now = deps.Clock.Now
	}
	cache, err := bundle.NewCache(cfg.CacheDir, deps.Bundles, cfg.KeepBundles)
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(deps.Registry, cfg.Slots)
	if err != nil {
		return nil, err
	}
	return &Worker{cfg: cfg, deps: deps, log: deps.Log.With(zap.String("worker", cfg.ID)), now: deps.Now, cache: cache, catalogs: newCatalogs(deps.Bundles, cfg.KeepBundles), metrics: m, beats: newHeartbeats(), cancels: newCancels()}, nil
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
	// A token in free is a slot with nothing to do. A fetch takes one token per job it may
	// receive; a job gives its token back when it ends.
	free := make(chan struct{}, w.cfg.Slots)
	for range w.cfg.Slots {
		free <- struct{}{}
	}
	beatCtx, stopBeats := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBeats()
	go w.beats.run(beatCtx, w.deps.Clock, w.cfg.Heartbeat)
	if c := w.deps.Cancellations; c != nil {
		// Until Run returns: jobs still draining stop too when their run is cancelled.
		stop, err := c.WatchCancelled(ctx, w.cancels.cancel)
		if err != nil {
			w.log.Error("not watching for cancelled runs: their running jobs will run on to their timeouts", zap.Error(err))
		} else {
			defer stop()
		}
	}
	if wd := w.deps.Withdrawals; wd != nil {
		stop, err := wd.WatchWithdrawn(ctx, w.cancels.withdraw)
		if err != nil {
			w.log.Error("not watching for withdrawn jobs: they will run, though no longer needed", zap.Error(err))
		} else {
			defer stop()
		}
	}
	var running sync.WaitGroup
	start := func(msg Delivery) {
		running.Add(1)
		go func() {
			defer running.Done()
			defer func() { free <- struct{}{} }()
			w.handle(jobCtx, msg)
		}()
	}
	// Long polls run on their own while the worker is idle, one at most per lane; each ends
	// with its lane's index here.
	polls := make(chan int, len(w.deps.Lanes))
	open := make([]bool, len(w.deps.Lanes))
	outstanding := func() int {
		n := 0
		for _, o := range open {
			if o {
				n++
			}
		}
		return n
	}
	next := 0 // the lane a worker with fewer free slots than lanes polls next
	w.log.Info("worker started", zap.Int("slots", w.cfg.Slots))
	for ctx.Err() == nil {
		for more := true; more; {
			select {
			case i := <-polls:
				open[i] = false
			default:
				more = false
			}
		}
		select {
		case <-ctx.Done():
			continue
		case <-free:
		}
		n := 1
	grab:
		for n < w.cfg.Slots {
			select {
			case <-free:
				n++
			default:
				break grab
			}
		}
		msgs := w.fetchNow(n)
		for range n - len(msgs) {
			free <- struct{}{}
		}
		for _, msg := range msgs {
			start(msg)
		}
		if len(msgs) > 0 {
			continue
		}
		// Idle: every lane without an open poll gets one, so that a job published on any lane
		// is picked up the moment it is (a lane left unpolled while another's poll ran out its
		// wait held its jobs that long: half a second per job when the coordinator publishes
		// them one by one as slots free).
		next = w.longPoll(free, polls, start, open, next)
		if outstanding() == 0 {
			// No free slot to poll with: the next job to end frees one.
			continue
		}
		select {
		case i := <-polls:
			open[i] = false
		case <-ctx.Done():
		}
	}
	// A job delivered to a pull request nobody reads would wait out AckWait: let the long
	// polls end (within FetchWait) and run what they bring.
	for outstanding() > 0 {
		open[<-polls] = false
	}
	w.log.Info("draining", zap.Duration("grace", w.cfg.DrainGrace))
	drained := make(chan struct{})
	go func() { running.Wait(); close(drained) }()
	grace := w.deps.Clock.NewTimer(w.cfg.DrainGrace)
	defer grace.Stop()
	select {
	case <-drained:
	case <-grace.C():
		w.log.Warn("grace period over: stopping running jobs and returning them to the queue")
		force()
		<-drained
	}
	settled := make(chan struct{})
	go func() { w.settling.Wait(); close(settled) }()
	settle := w.deps.Clock.NewTimer(settleWait)
	defer settle.Stop()
	select {
	case <-settled:
	case <-settle.C():
		w.log.Warn("results still unconfirmed at exit; their jobs will be redelivered", zap.Duration("waited", settleWait))
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

// fetchNow takes up to n jobs that are ready now, one per free slot, higher lanes first. It
// never prefetches more than it can run: each fetched message's AckWait starts at delivery.
func (w *Worker) fetchNow(n int) []Delivery {
	var out []Delivery
	for _, lane := range w.deps.Lanes {
		if len(out) == n {
			break
		}
		out = append(out, w.take(lane, n-len(out), 0)...)
	}
	return out
}

// longPoll starts a pull request for a single job on every lane that has none open (open),
// each holding a free slot, so an idle worker picks up a job the moment it is published on any
// lane. A worker with fewer free slots than such lanes polls them in turn, starting at next,
// with shorter waits, and the next to start at is returned. Each poll sends its lane's index to
// polls when it ends, after starting the job it got, if any.
func (w *Worker) longPoll(free chan struct{}, polls chan<- int, start func(Delivery), open []bool, next int) int {
	lanes := w.deps.Lanes
	var missing []int
	for k := range lanes {
		if i := (next + k) % len(lanes); !open[i] {
			missing = append(missing, i)
		}
	}
	tokens := 0
take:
	for tokens < len(missing) {
		select {
		case <-free:
			tokens++
		default:
			break take
		}
	}
	wait := w.cfg.FetchWait
	if tokens < len(missing) {
		// A lane not polled now waits for its turn: keep turns short.
		wait = w.cfg.FetchWait / time.Duration(len(lanes))
		next = (next + tokens) % len(lanes)
	}
	for _, i := range missing[:tokens] {
		open[i] = true
		go func() {
			defer func() { polls <- i }()
			if msgs := w.take(lanes[i], 1, wait); len(msgs) == 1 {
				start(msgs[0])
				return
			}
			free <- struct{}{}
		}()
	}
	return next
}

func (w *Worker) take(lane Lane, n int, wait time.Duration) []Delivery {
	out, err := lane.Fetch(n, wait)
	if err != nil {
		w.log.Warn("fetch failed", zap.Error(err), zap.Int("jobs", len(out)))
		w.metrics.fetchErrors.Inc()
	}
	return out
}

// handle runs one delivery of one job and settles its message exactly once.
func (w *Worker) handle(ctx context.Context, msg Delivery) {
	start := w.now()
	attempt := 1
	if n, _, err := msg.Attempt(); err == nil {
		attempt = n
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
	// Lazy: most jobs never log, and encoding the fields up front costs every one of them.
	log := &jobLog{base: w.log, run: job.GetRunId(), job: job.GetId(), attempt: attempt}
	w.metrics.inFlight.Inc()
	defer w.metrics.inFlight.Dec()
	if q := job.GetQueuedAt(); q != nil {
		w.metrics.queueWait.Observe(max(start.Sub(q.AsTime()), 0).Seconds())
	}

	// The secret proves the result comes from the worker that received the job; nothing the
	// executor runs (sandboxed, untrusted code) gets to see it.
	secret := job.GetSecret()
	job.Secret = nil

	w.beats.add(msg, log)
	digest := w.cellDigest(job)
	// jctx ends when the job's run is cancelled: the sandbox is killed and the job skipped.
	jctx, untrack := w.cancels.track(ctx, job.GetRunId(), job.GetId())
	defer untrack()
	var (
		res *pb.Result
		err error
	)
	switch {
	case runCancelled(jctx):
		// Cancelled before it started: no sandbox for it.
		res = cancelledResult(job)
	case jobWithdrawn(jctx):
		res = withdrawnResult(job)
	case reusable(job, digest):
		res = reusedResult(job)
	default:
		res, err = w.execute(jctx, job)
	}
	if ctx.Err() == nil && runCancelled(jctx) {
		log.Info("job stopped: its run was cancelled", zap.NamedError("interrupted", err))
		res, err = cancelledResult(job), nil
	}
	if ctx.Err() == nil && jobWithdrawn(jctx) {
		log.Info("job stopped: withdrawn, its case's verdict settled without it", zap.NamedError("interrupted", err))
		res, err = withdrawnResult(job), nil
	}

	last := attempt >= w.cfg.MaxAttempts
	gaveUp := false
	if err != nil {
		if ctx.Err() != nil {
			// Forced stop: not the job's fault; let another worker have it now.
			log.Warn("job interrupted by shutdown; returned to the queue", zap.Error(err))
			w.beats.remove(msg)
			_ = msg.Nak()
			return
		}
		if !last {
			delay := w.cfg.RetryDelay * time.Duration(attempt)
			log.Warn("infrastructure failure; will retry", zap.Error(err), zap.Duration("delay", delay))
			w.metrics.retries.Inc()
			w.beats.remove(msg)
			_ = msg.NakWithDelay(delay)
			return
		}
		log.Error("infrastructure failure on the last attempt; recording errored", zap.Error(err))
		res = erroredResult(job, fmt.Sprintf("infrastructure failure after %d attempts: %v", attempt, err))
		gaveUp = true
	}
	res.JobId, res.RunId, res.Skill, res.CaseName, res.Epoch, res.Kind = job.GetId(), job.GetRunId(), job.GetSkill(), job.GetCaseName(), job.GetEpoch(), job.GetKind()
	res.Agent = job.GetAgent()
	res.Arm = job.GetArm()
	res.CaseDigest = job.GetCaseDigest()
	res.CellKey, res.CellDigest = job.GetCellKey(), digest
	res.Secret = secret
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
	w.storeDocuments(ctx, res, log)
	data, err := w.encodeResult(res)
	if err != nil {
		// Cannot happen for a result this worker built; never ack a job without a result.
		log.Error("encoding the result failed; leaving the job for redelivery", zap.Error(err))
		w.beats.remove(msg)
		_ = msg.Nak()
		return
	}
	// The slot is free as soon as the result is queued; the job is settled when the server
	// confirms the result, and only then.
	w.settling.Add(1)
	err = w.deps.Results.PublishResult(ctx, job.GetRunId(), job.GetResultKey(), job.GetId(), attempt, data, func(err error) {
		defer w.settling.Done()
		w.settle(msg, res, gaveUp, err, log)
	})
	if err != nil {
		w.settling.Done()
		w.settle(msg, res, gaveUp, err, log)
	}
}

// settle acks a job whose result is stored, or hands it back when the result could not be.
func (w *Worker) settle(msg Delivery, res *pb.Result, gaveUp bool, err error, log *jobLog) {
	w.beats.remove(msg)
	if err != nil {
		// Without a stored result the job must not be acked: it comes back after a Nak.
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

// warner is where what goes wrong with one job is said: its jobLog, or any *zap.Logger.
type warner interface {
	Warn(msg string, fields ...zap.Field)
}

// jobLog is a job's logger, made with the job's fields the first time the job logs: most jobs
// never do, and even zap's WithLazy costs every job six allocations up front.
type jobLog struct {
	base     *zap.Logger
	run, job string
	attempt  int
	once     sync.Once
	log      *zap.Logger
}

func (l *jobLog) get() *zap.Logger {
	l.once.Do(func() {
		l.log = l.base.With(zap.String("run", l.run), zap.String("job", l.job), zap.Int("attempt", l.attempt))
	})
	return l.log
}

// Info, Warn and Error log with the job's fields.
func (l *jobLog) Info(msg string, fields ...zap.Field)  { l.get().Info(msg, fields...) }
func (l *jobLog) Warn(msg string, fields ...zap.Field)  { l.get().Warn(msg, fields...) }
func (l *jobLog) Error(msg string, fields ...zap.Field) { l.get().Error(msg, fields...) }

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
	if err := w.catalogs.resolve(ctx, job); err != nil {
		return nil, err
	}
	return w.deps.Executor.Execute(ctx, job, dir)
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
		Kind: res.Kind, Agent: res.Agent, Arm: res.Arm, Secret: res.Secret, Attempt: res.Attempt, WorkerId: res.WorkerId,
		FinishedAt: res.FinishedAt, Timings: res.Timings, Usage: res.Usage,
		Verdict: pb.Verdict_VERDICT_ERRORED,
		Reason:  fmt.Sprintf("the result (%d bytes) exceeds the %d-byte message limit even with its output trimmed", len(data), w.cfg.MaxResultBytes),
	}
	return proto.Marshal(small)
}

// trimText keeps the head and tail of s within limit bytes (cut on rune boundaries), with a
// marker where text was left out.
func trimText(s string, limit int) (string, bool) {
	return text.HeadTail(s, limit, func(omitted int) string {
		return fmt.Sprintf("\n[skillfleet: %d bytes left out of the stored result]\n", omitted)
	})
}

func erroredResult(job *pb.Job, reason string) *pb.Result {
	return &pb.Result{Verdict: pb.Verdict_VERDICT_ERRORED, Reason: reason, Kind: job.GetKind()}
}
