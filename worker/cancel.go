package worker

import (
	"context"
	"errors"
	"sync"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Cancellations tells the worker which runs were cancelled, so that their running jobs stop
// instead of running on to their timeouts.
type Cancellations interface {
	// WatchCancelled calls fn with the id of each run cancelled from now on, until stop is
	// called; fn must not block.
	WatchCancelled(ctx context.Context, fn func(run string)) (stop func(), err error)
}

// Withdrawals tells the worker which jobs the coordinator no longer needs (their case's
// verdict was settled without them), so that they are skipped instead of run.
type Withdrawals interface {
	// WatchWithdrawn calls fn with the run and job ids of each withdrawal from now on, until
	// stop is called; fn must not block.
	WatchWithdrawn(ctx context.Context, fn func(run string, jobs []string)) (stop func(), err error)
}

// errRunCancelled is the cause a job's context ends with when its run is cancelled.
var errRunCancelled = errors.New("run cancelled")

// errJobWithdrawn is the cause a job's context ends with when it is withdrawn.
var errJobWithdrawn = errors.New("withdrawn: its case's verdict was settled without it")

// rememberWithdrawn bounds how many withdrawn jobs a worker remembers, for those it receives
// after the notice (queued when their case settled).
const rememberWithdrawn = 8192

// rememberCancelled bounds how many cancelled runs a worker remembers, for jobs of theirs it
// receives after the notice (delivered before the coordinator purged them).
const rememberCancelled = 256

// cancels holds the running jobs' contexts by run, and the runs cancelled lately.
type cancels struct {
	mu      sync.Mutex
	running map[string]map[*context.CancelCauseFunc]struct{}
	// cancelled are the runs cancelled lately.
	cancelled *recent[string]
	// byJob holds the running jobs' contexts by run and job id; withdrawn the jobs withdrawn
	// lately.
	byJob     map[[2]string]*context.CancelCauseFunc
	withdrawn *recent[[2]string]
}

func newCancels() *cancels {
	return &cancels{running: map[string]map[*context.CancelCauseFunc]struct{}{}, cancelled: newRecent[string](rememberCancelled),
		byJob: map[[2]string]*context.CancelCauseFunc{}, withdrawn: newRecent[[2]string](rememberWithdrawn)}
}

// recent is a set of the last max keys added: a notice for a job or run may come before
// the job does, and a worker must not remember every one it ever heard of.
type recent[K comparable] struct {
	limit int
	set   map[K]struct{}
	order []K // oldest first
}

func newRecent[K comparable](limit int) *recent[K] {
	return &recent[K]{limit: limit, set: map[K]struct{}{}}
}

// has reports whether k is among the keys remembered.
func (r *recent[K]) has(k K) bool {
	_, ok := r.set[k]
	return ok
}

// add remembers k, forgetting the oldest key when full.
func (r *recent[K]) add(k K) {
	if r.has(k) {
		return
	}
	if len(r.order) == r.limit {
		delete(r.set, r.order[0])
		r.order = r.order[1:]
	}
	r.set[k] = struct{}{}
	r.order = append(r.order, k)
}

// track returns a context for job of run that ends with errRunCancelled when the run is
// cancelled, or errJobWithdrawn when the job is withdrawn (at once, if it already was); done
// forgets the job.
func (c *cancels) track(ctx context.Context, run, job string) (context.Context, func()) {
	jctx, cancel := context.WithCancelCause(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancelled.has(run) {
		cancel(errRunCancelled)
		return jctx, func() { cancel(nil) }
	}
	key := [2]string{run, job}
	if c.withdrawn.has(key) {
		cancel(errJobWithdrawn)
		return jctx, func() { cancel(nil) }
	}
	c.byJob[key] = &cancel
	jobs := c.running[run]
	if jobs == nil {
		jobs = map[*context.CancelCauseFunc]struct{}{}
		c.running[run] = jobs
	}
	jobs[&cancel] = struct{}{}
	return jctx, func() {
		c.mu.Lock()
		delete(jobs, &cancel)
		if c.byJob[key] == &cancel {
			delete(c.byJob, key)
		}
		if cur, ok := c.running[run]; ok && len(cur) == 0 {
			delete(c.running, run)
		}
		c.mu.Unlock()
		cancel(nil)
	}
}

// cancel stops the running jobs of run and remembers it for jobs of it still to come.
func (c *cancels) cancel(run string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for f := range c.running[run] {
		(*f)(errRunCancelled)
	}
	delete(c.running, run)
	c.cancelled.add(run)
}

// withdraw stops the running jobs of run named in jobs and remembers them for when they
// come.
func (c *cancels) withdraw(run string, jobs []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, j := range jobs {
		key := [2]string{run, j}
		if f := c.byJob[key]; f != nil {
			(*f)(errJobWithdrawn)
		}
		c.withdrawn.add(key)
	}
}

// jobWithdrawn reports whether ctx, a job's context from track, ended because the job was
// withdrawn.
func jobWithdrawn(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errJobWithdrawn)
}

// withdrawnResult is the result of a job withdrawn before or while it ran: skipped, as
// nothing went wrong with it.
func withdrawnResult(job *pb.Job) *pb.Result {
	return &pb.Result{Verdict: pb.Verdict_VERDICT_SKIPPED, Reason: errJobWithdrawn.Error(), Kind: job.GetKind()}
}

// runCancelled reports whether ctx, a job's context from track, ended because its run was
// cancelled.
func runCancelled(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errRunCancelled)
}

// cancelledResult is the result of a job stopped because its run was cancelled: skipped, not
// errored, as nothing went wrong with the job or the fleet.
func cancelledResult(job *pb.Job) *pb.Result {
	return &pb.Result{Verdict: pb.Verdict_VERDICT_SKIPPED, Reason: errRunCancelled.Error(), Kind: job.GetKind()}
}
