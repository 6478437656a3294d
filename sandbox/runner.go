package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/system"
	"github.com/moby/moby/client"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// Spec is what one job asks of its sandbox.
type Spec struct {
	JobID   string
	Mounts  []Mount           // read-only bind mounts, e.g. the suite's bundle cache dir at /skills
	Env     map[string]string // given to every Exec of the job (ExecRequest.Env wins on conflict)
	Limits  Limits            // zero fields: Config.Defaults; always clamped to Config.Max
	Timeout time.Duration     // wall clock for the whole job from Acquire; 0 = Config.DefaultTimeout; capped at Config.MaxTimeout
}

// Runner creates, hands out and removes sandbox containers for one worker.
type Runner struct {
	cfg         Config
	docker      Docker
	log         *zap.Logger
	clock       Clock
	m           *metrics
	n           counters
	incarnation string
	seccomp     string

	mu    sync.Mutex
	state runnerState
	// imageID is the content id of the image, read by Start.
	imageID string
	runtime string // what containers get: cfg.Runtime, or "" when it is optional and missing
	noSwap  bool   // the engine cannot limit swap
	live    map[string]liveContainer
	pool    pool
	poolSem chan struct{}

	bgCtx    context.Context // background work (pool refills, reaper loop); cancelled by Close
	bgCancel context.CancelFunc
	bg       sync.WaitGroup
}

type runnerState int

const (
	stateNew runnerState = iota
	stateStarted
	stateClosed
)

type liveContainer struct {
	name   string
	pooled bool
}

// Timeouts for calls that must finish even when the job's context is gone.
const (
	cleanupTimeout = 30 * time.Second
	killTimeout    = 10 * time.Second
	// createTimeout bounds a container create, which no caller's cancellation interrupts.
	createTimeout = time.Minute
)

// New checks cfg and builds a Runner; it does not talk to Docker (Start does). log may be nil
// (no logging); reg may be nil (metrics go to a private registry).
func New(cfg Config, docker Docker, log *zap.Logger, reg prometheus.Registerer) (*Runner, error) {
	if docker == nil {
		return nil, errors.New("sandbox: no Docker client")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	r := &Runner{
		cfg:         cfg,
		docker:      docker,
		log:         log.Named("sandbox"),
		clock:       cfg.Clock,
		incarnation: randomHex(6),
		live:        map[string]liveContainer{},
		pool:        pool{keys: map[string]*poolKey{}},
		poolSem:     make(chan struct{}, cfg.PoolConcurrency),
	}
	if cfg.SeccompProfile != "" {
		r.seccomp, _ = compactSeccomp(cfg.SeccompProfile) // validated above
	}
	m, err := newMetrics(reg, r.liveCount, r.idleCount)
	if err != nil {
		return nil, err
	}
	r.m = m
	r.bgCtx, r.bgCancel = context.WithCancel(context.Background())
	return r, nil
}

// ImageID is the content id ("sha256:…") of the sandbox image as Start found it: what a job's
// commands and agent CLIs ran in, for the digest of a cell. Empty before Start.
func (r *Runner) ImageID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.imageID
}

// Start checks the engine, failing closed when the image, the required runtime or seccomp is
// missing; removes containers left by a previous run of this worker and expired ones of any
// worker; and starts the background reaper. Start does not pre-start warm containers: a pool
// key fills after its first cold Acquire.
func (r *Runner) Start(ctx context.Context) error {
	r.mu.Lock()
	st := r.state
	r.mu.Unlock()
	if st != stateNew {
		return errors.New("sandbox: Start called twice or after Close")
	}
	img, err := r.docker.ImageInspect(ctx, r.cfg.Image)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return &ImageMissingError{Image: r.cfg.Image}
		}
		return fmt.Errorf("sandbox: inspect image %s: %w", r.cfg.Image, err)
	}
	r.mu.Lock()
	r.imageID = img.ID
	r.mu.Unlock()
	info, err := r.docker.Info(ctx, client.InfoOptions{})
	if err != nil {
		return fmt.Errorf("sandbox: docker info: %w", err)
	}
	runtime, err := checkRuntime(info.Info.Runtimes, r.cfg.Runtime, r.cfg.RequireRuntime)
	if err != nil {
		return err
	}
	if runtime != r.cfg.Runtime {
		r.log.Warn("runtime not registered with the Docker engine; using the engine default (set RequireRuntime to fail instead)",
			zap.String("runtime", r.cfg.Runtime), zap.String("default", info.Info.DefaultRuntime))
	}
	if !slices.ContainsFunc(info.Info.SecurityOptions, func(o string) bool { return strings.Contains(o, "name=seccomp") }) {
		return errors.New("sandbox: the Docker engine reports no seccomp support; refusing to run sandboxes without a syscall filter")
	}
	if !info.Info.SwapLimit {
		r.log.Warn("the Docker engine cannot limit swap (no swap accounting): a sandbox may swap beyond its memory limit; run sandbox hosts without swap")
	}

	r.mu.Lock()
	r.runtime, r.noSwap = runtime, !info.Info.SwapLimit
	r.state = stateStarted
	r.mu.Unlock()

	n, err := r.reap(ctx, true)
	if err != nil {
		// Strays are a leak, not a reason to refuse jobs; the periodic reaper tries again.
		r.log.Warn("initial reap incomplete", zap.Int("removed", n), zap.Error(err))
	}
	ticks, stop := r.clock.NewTicker(r.cfg.ReapInterval)
	r.goBackground(func(ctx context.Context) {
		defer stop()
		r.reapLoop(ctx, ticks)
	})
	r.log.Info("sandbox runner started", zap.String("image", r.cfg.Image), zap.String("runtime", runtime),
		zap.String("worker", r.cfg.WorkerID), zap.String("incarnation", r.incarnation),
		zap.Int("warm_pool", r.cfg.WarmPool), zap.Int("reaped", n))
	return nil
}

// checkRuntime returns the runtime containers will get.
func checkRuntime(registered map[string]system.RuntimeWithStatus, want string, require bool) (string, error) {
	if want == "" {
		return "", nil
	}
	if _, ok := registered[want]; ok {
		return want, nil
	}
	if require {
		names := make([]string, 0, len(registered))
		for n := range registered {
			names = append(names, n)
		}
		sort.Strings(names)
		return "", fmt.Errorf("sandbox: runtime %q is required but not registered with the Docker engine (registered: %s)",
			want, strings.Join(names, ", "))
	}
	return "", nil
}

// Acquire returns a started container for spec's job: a warm one from the pool when one
// matches (same image, runtime, mounts and limits) and has time left for the job, else a new
// one. The job's wall clock (Spec.Timeout) starts when Acquire returns; at its end the
// container is killed from outside. The caller must Release it.
func (r *Runner) Acquire(ctx context.Context, spec Spec) (*Sandbox, error) {
	return r.acquire(ctx, spec, r.cfg.WarmPool > 0)
}

// acquire is Acquire with the pool optional (Overhead measures the cold path on a pooled
// Runner).
func (r *Runner) acquire(ctx context.Context, spec Spec, usePool bool) (*Sandbox, error) {
	t0 := r.clock.Now()
	r.mu.Lock()
	st, runtime, noSwap := r.state, r.runtime, r.noSwap
	r.mu.Unlock()
	if st != stateStarted {
		return nil, errors.New("sandbox: runner not started or closed")
	}
	mounts, err := validateMounts(spec.Mounts)
	if err != nil {
		return nil, err
	}
	if _, err := mergeEnv(spec.Env, nil); err != nil {
		return nil, err
	}
	tmpl := template{
		image:   r.cfg.Image,
		runtime: runtime,
		mounts:  mounts,
		limits:  spec.Limits.WithDefaults(r.cfg.Defaults).Clamp(r.cfg.Max).atLeast(floors),
		seccomp: r.seccomp,
		noSwap:  noSwap,
	}
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = r.cfg.DefaultTimeout
	}
	timeout = min(timeout, r.cfg.MaxTimeout)
	key := tmpl.key()

	if usePool {
		if w := r.takeWarm(key, t0.Add(timeout)); w != nil {
			s := r.newSandbox(w, spec, tmpl.limits, timeout, t0, true)
			r.n.poolHits.Add(1)
			r.m.poolHits.Inc()
			r.m.startLatency.WithLabelValues("warm").Observe(s.startLatency.Seconds())
			r.refill(key)
			r.log.Debug("sandbox acquired (warm)", zap.String("job", spec.JobID), zap.String("container", shortID(w.id)))
			return s, nil
		}
		r.n.poolMisses.Add(1)
		r.m.poolMisses.Inc()
	}
	// The cold container's label must outlive the job: expires covers start-up and the job.
	expires := t0.Add(timeout + startAllowance)
	l, err := r.launch(ctx, tmpl, spec.JobID, "", expires)
	if err != nil {
		return nil, err
	}
	s := r.newSandbox(l, spec, tmpl.limits, timeout, t0, false)
	r.m.startLatency.WithLabelValues("cold").Observe(s.startLatency.Seconds())
	if usePool {
		// Refill only after the cold start so the two do not compete for the engine.
		r.wantPool(key, tmpl)
		r.refill(key)
	}
	r.log.Debug("sandbox acquired (cold)", zap.String("job", spec.JobID), zap.String("container", shortID(l.id)),
		zap.Duration("create", l.createDur), zap.Duration("start", l.startDur))
	return s, nil
}

// startAllowance is added to a cold container's expires label for the time create and start
// take; the job's deadline never passes the label (newSandbox).
const startAllowance = time.Minute

// launched is a created and started container.
type launched struct {
	id, name            string
	created, expires    time.Time
	createDur, startDur time.Duration
}

// launch creates and starts one container. Whatever fails, nothing is left behind: a create
// that errors may still have created the container (it timed out), so it is removed by name; a
// create that finishes after ctx ended, or a start that fails, removes the container.
func (r *Runner) launch(ctx context.Context, tmpl template, jobID, poolKey string, expires time.Time) (*launched, error) {
	name := "skillfleet-" + randomHex(8)
	labels := map[string]string{
		LabelSandbox:     "1",
		LabelWorker:      r.cfg.WorkerID,
		LabelIncarnation: r.incarnation,
		LabelJob:         jobID,
		LabelExpires:     strconv.FormatInt(expires.Unix(), 10),
	}
	if poolKey != "" {
		labels[LabelPool] = poolKey
	}
	cfg, hc := buildContainer(tmpl, labels)
	tc := r.clock.Now()
	// The create is never abandoned: an engine that has the request creates the container
	// even after the client hangs up, possibly after the clean-up below looked for it by name.
	// The caller's cancellation is honoured once the create has answered.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
	res, err := r.docker.ContainerCreate(cctx, client.ContainerCreateOptions{Config: cfg, HostConfig: hc, Name: name})
	cancel()
	if err != nil {
		err = fmt.Errorf("sandbox: create container: %w", err)
		if cerrdefs.IsNotFound(err) && strings.Contains(strings.ToLower(err.Error()), "image") {
			err = fmt.Errorf("%w (%w)", &ImageMissingError{Image: tmpl.image}, err)
		}
		if rmErr := r.removeByName(ctx, name); rmErr != nil {
			err = errors.Join(err, rmErr)
		}
		return nil, err
	}
	r.n.created.Add(1)
	r.m.created.Inc()
	r.track(res.ID, name, poolKey != "")
	for _, w := range res.Warnings {
		r.log.Debug("container create warning", zap.String("container", shortID(res.ID)), zap.String("warning", w))
	}
	if err := ctx.Err(); err != nil {
		err = fmt.Errorf("sandbox: create container: %w", err)
		if rmErr := r.remove(ctx, res.ID); rmErr != nil {
			err = errors.Join(err, rmErr)
		}
		return nil, err
	}
	ts := r.clock.Now()
	if _, err := r.docker.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		err = fmt.Errorf("sandbox: start container: %w", err)
		if rmErr := r.remove(ctx, res.ID); rmErr != nil {
			err = errors.Join(err, rmErr)
		}
		return nil, err
	}
	te := r.clock.Now()
	return &launched{id: res.ID, name: name, created: tc, expires: expires, createDur: ts.Sub(tc), startDur: te.Sub(ts)}, nil
}

// Release kills and removes the job's container; it is never reused. It uses its own short
// context, so a cancelled job context still cleans up, and retries. When removal keeps failing
// it returns the error and leaves the container to the reaper. Releasing twice is a no-op.
func (r *Runner) Release(ctx context.Context, s *Sandbox) error {
	if s == nil || !s.markReleased() {
		return nil
	}
	s.stopJobTimer()
	start := r.clock.Now()
	err := r.remove(ctx, s.id)
	s.mu.Lock()
	s.removeDur = r.clock.Now().Sub(start)
	s.mu.Unlock()
	return err
}

// remove force-removes a container (a force remove kills it first: one round trip, not two),
// retrying, under a fresh context derived from ctx's values only.
func (r *Runner) remove(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	var err error
	for attempt := range 3 {
		if attempt > 0 {
			if r.clock.Sleep(ctx, time.Duration(attempt)*200*time.Millisecond) != nil {
				break
			}
		}
		_, err = r.docker.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err == nil || cerrdefs.IsNotFound(err) {
			if err == nil {
				r.n.removed.Add(1)
				r.m.removed.Inc()
			}
			r.untrack(id)
			return nil
		}
	}
	// Untracked, it is a leak the reaper removes after ReapGrace.
	r.untrack(id)
	r.log.Error("cannot remove sandbox container; the reaper will retry", zap.String("container", shortID(id)), zap.Error(err))
	return fmt.Errorf("sandbox: remove container %s: %w", shortID(id), err)
}

// removeByName cleans up after a create whose outcome is unknown. Not found is the usual
// answer and fine.
func (r *Runner) removeByName(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_, err := r.docker.ContainerRemove(ctx, name, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	switch {
	case err == nil:
		r.n.removed.Add(1)
		r.m.removed.Inc()
		return nil
	case cerrdefs.IsNotFound(err):
		return nil
	default:
		return fmt.Errorf("sandbox: remove half-created container %s: %w", name, err)
	}
}

// Close stops background work and removes the idle warm containers. Sandboxes still held by
// jobs are left to their Release (or the next Start's reaper).
func (r *Runner) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.state == stateClosed {
		r.mu.Unlock()
		return nil
	}
	r.state = stateClosed
	r.mu.Unlock()
	r.bgCancel()
	r.bg.Wait()

	r.mu.Lock()
	idle := r.pool.drain()
	inUse := len(r.live) - len(idle)
	r.mu.Unlock()
	var errs []error
	for _, w := range idle {
		if err := r.remove(ctx, w.id); err != nil {
			errs = append(errs, err)
		}
	}
	if inUse > 0 {
		r.log.Warn("closing with sandboxes still in use; their jobs must Release them", zap.Int("in_use", inUse))
	}
	return errors.Join(errs...)
}

// Counters returns what the Runner has done so far.
func (r *Runner) Counters() Counters {
	return Counters{
		Created:    r.n.created.Load(),
		Removed:    r.n.removed.Load(),
		PoolHits:   r.n.poolHits.Load(),
		PoolMisses: r.n.poolMisses.Load(),
		Reaped:     r.n.reaped.Load(),
		Live:       int(r.liveCount()),
		Idle:       int(r.idleCount()),
	}
}

func (r *Runner) track(id, name string, pooled bool) {
	r.mu.Lock()
	r.live[id] = liveContainer{name: name, pooled: pooled}
	r.mu.Unlock()
}

func (r *Runner) untrack(id string) {
	r.mu.Lock()
	delete(r.live, id)
	r.mu.Unlock()
}

func (r *Runner) isLive(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.live[id]
	return ok
}

func (r *Runner) liveCount() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return float64(len(r.live))
}

func (r *Runner) idleCount() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return float64(r.pool.idle())
}

// goBackground runs f under the background context unless the Runner is closed; Close waits
// for it. It reports whether f was started.
func (r *Runner) goBackground(f func(ctx context.Context)) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state != stateStarted {
		return false
	}
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		f(r.bgCtx)
	}()
	return true
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
