package queue

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// CancelSubjectPrefix is the first two tokens of the subjects on which the coordinator says that
// a run ended early (cancelled, out of time or of budget), so that workers stop its running jobs.
const CancelSubjectPrefix = "skillfleet.cancel"

// CancelSubject is the subject of run's cancel notice. It does not validate: see ValidateRunID.
func CancelSubject(run string) string { return CancelSubjectPrefix + "." + run }

// NotifyCancelled tells the workers listening now (WatchCancelled) that run was cancelled. The
// notice is a plain NATS message, not stored: a worker disconnected at that moment lets its job
// of the run go on to its timeout, as every worker did before notices, and its result is then
// ignored by the run that has already ended. Its queued jobs are removed by PurgeRunJobs.
func (t *Topology) NotifyCancelled(ctx context.Context, run string) error {
	if err := ValidateRunID(run); err != nil {
		return err
	}
	nc := t.conn.nc
	if err := nc.Publish(CancelSubject(run), nil); err != nil {
		return fmt.Errorf("queue: cancel notice of run %s: %w", run, err)
	}
	// A flush, so the notice has left this process when the caller goes on (and exits).
	if err := flush(ctx, nc); err != nil {
		return fmt.Errorf("queue: cancel notice of run %s: %w", run, err)
	}
	return nil
}

// WatchCancelled calls fn with the id of every run cancelled from now on (NotifyCancelled),
// until stop is called. fn is called from one goroutine at a time and must not block. A notice
// whose subject is not a valid run id is ignored.
func (t *Topology) WatchCancelled(ctx context.Context, fn func(run string)) (stop func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	nc := t.conn.nc
	sub, err := nc.Subscribe(CancelSubjectPrefix+".*", func(m *nats.Msg) {
		run := strings.TrimPrefix(m.Subject, CancelSubjectPrefix+".")
		if ValidateRunID(run) == nil {
			fn(run)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("queue: watch cancel notices: %w", err)
	}
	// The subscription is known to the server once this returns: a notice published after
	// it reaches fn.
	if err := flush(ctx, nc); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("queue: watch cancel notices: %w", err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// flushWait bounds a flush whose context has no deadline (the client requires one).
const flushWait = 10 * time.Second

// flush waits until the server has processed what nc sent.
func flush(ctx context.Context, nc *nats.Conn) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, flushWait)
		defer cancel()
	}
	return nc.FlushWithContext(ctx)
}

// WithdrawSubjectPrefix is the first two tokens of the subjects on which the coordinator
// names jobs of a run it no longer needs (their case's verdict was settled without them), so
// that workers skip them if they come, and stop them if they are running.
const WithdrawSubjectPrefix = "skillfleet.withdraw"

// WithdrawSubject is the subject of run's withdrawal notices. It does not validate.
func WithdrawSubject(run string) string { return WithdrawSubjectPrefix + "." + run }

// withdrawBatch bounds the job ids of one notice, well inside the server's payload limit.
const withdrawBatch = 2048

// NotifyWithdrawn tells the workers listening now (WatchWithdrawn) that jobs of run are no
// longer needed: one notice per batch of ids, newline-separated. Like a cancel notice it is
// not stored: a worker that misses it runs the job, whose result changes nothing. A worker
// older than notices ignores them (they are not on the cancel subject, where it would stop
// the whole run).
func (t *Topology) NotifyWithdrawn(ctx context.Context, run string, jobs []string) error {
	if err := ValidateRunID(run); err != nil {
		return err
	}
	nc := t.conn.nc
	for len(jobs) > 0 {
		n := min(len(jobs), withdrawBatch)
		if err := nc.Publish(WithdrawSubject(run), []byte(strings.Join(jobs[:n], "\n"))); err != nil {
			return fmt.Errorf("queue: withdrawal notice of run %s: %w", run, err)
		}
		jobs = jobs[n:]
	}
	if err := flush(ctx, nc); err != nil {
		return fmt.Errorf("queue: withdrawal notice of run %s: %w", run, err)
	}
	return nil
}

// WatchWithdrawn calls fn with the run and job ids of every withdrawal notice from now on
// (NotifyWithdrawn), until stop is called. fn is called from one goroutine at a time and must
// not block. A notice whose subject is not a valid run id is ignored.
func (t *Topology) WatchWithdrawn(ctx context.Context, fn func(run string, jobs []string)) (stop func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	nc := t.conn.nc
	sub, err := nc.Subscribe(WithdrawSubjectPrefix+".*", func(m *nats.Msg) {
		run := strings.TrimPrefix(m.Subject, WithdrawSubjectPrefix+".")
		if ValidateRunID(run) != nil || len(m.Data) == 0 {
			return
		}
		fn(run, strings.Split(string(m.Data), "\n"))
	})
	if err != nil {
		return nil, fmt.Errorf("queue: watch withdrawal notices: %w", err)
	}
	if err := flush(ctx, nc); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("queue: watch withdrawal notices: %w", err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}
