package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"go.uber.org/zap"
)

// Reap removes stray sandbox containers: those whose expires label is more than ReapGrace in
// the past (any worker's: a crashed worker cannot clean up after itself), and this worker's
// own that it no longer tracks (a previous incarnation's, or a removal that failed). Containers
// this Runner holds are never touched. Errors on single containers do not stop the sweep; it
// returns how many it removed and every error joined.
func (r *Runner) Reap(ctx context.Context) (int, error) {
	return r.reap(ctx, false)
}

func (r *Runner) reap(ctx context.Context, atStart bool) (int, error) {
	list, err := r.docker.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", LabelSandbox+"=1"),
	})
	if err != nil {
		return 0, fmt.Errorf("sandbox: reap: list containers: %w", err)
	}
	now := r.clock.Now()
	var errs []error
	n := 0
	for _, c := range list.Items {
		why := r.reapReason(c, now, atStart)
		if why == "" {
			continue
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		_, err := r.docker.ContainerRemove(rctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		cancel()
		switch {
		case err == nil:
			n++
			r.n.reaped.Add(1)
			r.n.removed.Add(1)
			r.m.reaped.Inc()
			r.m.removed.Inc()
			r.log.Info("reaped stray sandbox container", zap.String("container", shortID(c.ID)),
				zap.String("worker", c.Labels[LabelWorker]), zap.String("job", c.Labels[LabelJob]), zap.String("reason", why))
		case cerrdefs.IsNotFound(err):
			// Another worker's reaper or the owner got there first.
		default:
			errs = append(errs, fmt.Errorf("sandbox: reap %s: %w", shortID(c.ID), err))
		}
	}
	return n, errors.Join(errs...)
}

// reapReason says why c is a stray, or "" when it must be left alone.
func (r *Runner) reapReason(c container.Summary, now time.Time, atStart bool) string {
	if r.isLive(c.ID) {
		return ""
	}
	created := time.Unix(c.Created, 0)
	if c.Labels[LabelWorker] == r.cfg.WorkerID {
		switch {
		case atStart:
			return "left by a previous run of this worker"
		case c.Labels[LabelIncarnation] != r.incarnation:
			return "left by a previous run of this worker"
		case now.Sub(created) > r.cfg.ReapGrace:
			// Ours, untracked, and not being created right now: its removal failed.
			return "leaked by this worker"
		}
	}
	exp, err := strconv.ParseInt(c.Labels[LabelExpires], 10, 64)
	if err != nil {
		// No valid label: give it the longest life any sandbox can have.
		if now.Sub(created) > r.cfg.PoolTTL+r.cfg.MaxTimeout+startAllowance+r.cfg.ReapGrace {
			return "no valid expires label and older than any sandbox may live"
		}
		return ""
	}
	if now.After(time.Unix(exp, 0).Add(r.cfg.ReapGrace)) {
		return "expired"
	}
	return ""
}

// reapLoop reaps and expires idle pool containers on every tick until ctx ends.
func (r *Runner) reapLoop(ctx context.Context, ticks <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
			if n, err := r.Reap(ctx); err != nil && ctx.Err() == nil {
				r.log.Warn("reap incomplete", zap.Int("removed", n), zap.Error(err))
			}
			r.expirePool()
		}
	}
}
