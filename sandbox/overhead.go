package sandbox

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// PhaseStats are percentiles of one phase over the measured jobs.
type PhaseStats struct {
	P50, P95 time.Duration
}

// PathStats break a job's sandbox overhead into phases. Critical is what the job waits for
// before its result is known (acquire + exec + collect); Total adds the removal, which the
// worker can do after publishing the result.
type PathStats struct {
	Acquire  PhaseStats // Acquire as the job sees it (create + start when cold; a pool pop when warm)
	Create   PhaseStats // container create (cold only; 0 when warm)
	Start    PhaseStats // container start (cold only)
	Exec     PhaseStats // exec create + attach + run `true` + end of output
	Collect  PhaseStats // exit code and classification after the output ended
	Remove   PhaseStats // Release: force remove
	Critical PhaseStats
	Total    PhaseStats
}

// Stats is what Overhead measured.
type Stats struct {
	N    int
	Cold PathStats
	Warm *PathStats // nil when the Runner has no warm pool
}

// Overhead runs n throw-away jobs that exec `true` and reports per-phase p50/p95: n cold
// (create, start, exec, collect, remove) and, when the Runner has a warm pool, n warm ones (each
// waits for the pool to refill first, so every one is a hit). The Runner must be started.
func Overhead(ctx context.Context, r *Runner, n int) (Stats, error) {
	if n <= 0 {
		return Stats{}, errors.New("sandbox: overhead: n must be positive")
	}
	st := Stats{N: n}
	cold, err := measure(ctx, r, n, false)
	if err != nil {
		return st, err
	}
	st.Cold = cold
	if r.cfg.WarmPool > 0 {
		warm, err := measure(ctx, r, n, true)
		if err != nil {
			return st, err
		}
		st.Warm = &warm
	}
	return st, nil
}

func measure(ctx context.Context, r *Runner, n int, warm bool) (PathStats, error) {
	var acq, create, start, exec, collect, remove, critical, total []time.Duration
	spec := Spec{Timeout: time.Minute}
	if warm {
		// Prime the key: the first Acquire is cold and makes the pool fill.
		s, err := r.acquire(ctx, Spec{JobID: "overhead-prime", Timeout: time.Minute}, true)
		if err != nil {
			return PathStats{}, err
		}
		if err := r.Release(ctx, s); err != nil {
			return PathStats{}, err
		}
	}
	for i := range n {
		spec.JobID = fmt.Sprintf("overhead-%d", i)
		if warm {
			if err := waitIdle(ctx, r); err != nil {
				return PathStats{}, err
			}
		}
		s, err := r.acquire(ctx, spec, warm)
		if err != nil {
			return PathStats{}, err
		}
		if warm && !s.Warm() {
			_ = r.Release(ctx, s)
			return PathStats{}, errors.New("sandbox: overhead: the warm pool missed although it had an idle container")
		}
		res, err := s.Exec(ctx, ExecRequest{Cmd: []string{"true"}})
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("sandbox: overhead: `true` exited %d: %s", res.ExitCode, res.Stderr)
		}
		if relErr := r.Release(ctx, s); err == nil {
			err = relErr
		}
		if err != nil {
			return PathStats{}, err
		}
		s.mu.Lock()
		tr, rm := s.lastExec, s.removeDur
		s.mu.Unlock()
		e, c := tr.streamDone.Sub(tr.start), tr.collected.Sub(tr.streamDone)
		acq = append(acq, s.startLatency)
		if !s.warm {
			create = append(create, s.createDur)
			start = append(start, s.startDur)
		}
		exec = append(exec, e)
		collect = append(collect, c)
		remove = append(remove, rm)
		critical = append(critical, s.startLatency+e+c)
		total = append(total, s.startLatency+e+c+rm)
	}
	return PathStats{
		Acquire: percentiles(acq), Create: percentiles(create), Start: percentiles(start),
		Exec: percentiles(exec), Collect: percentiles(collect), Remove: percentiles(remove),
		Critical: percentiles(critical), Total: percentiles(total),
	}, nil
}

// waitIdle waits until the pool has a started container, at most a minute.
func waitIdle(ctx context.Context, r *Runner) error {
	for range 6000 {
		if r.idleCount() > 0 {
			return nil
		}
		if err := r.clock.Sleep(ctx, 10*time.Millisecond); err != nil {
			return err
		}
	}
	return errors.New("sandbox: overhead: the warm pool did not refill within a minute")
}

// percentiles uses the nearest-rank method.
func percentiles(ds []time.Duration) PhaseStats {
	if len(ds) == 0 {
		return PhaseStats{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return PhaseStats{P50: rank(0.50), P95: rank(0.95)}
}

// String prints a one-line summary per path.
func (s Stats) String() string {
	line := func(name string, p PathStats) string {
		return fmt.Sprintf("%s: acquire p50 %v p95 %v | create %v/%v start %v/%v | exec %v/%v collect %v/%v | remove %v/%v | critical %v/%v | total %v/%v\n",
			name, p.Acquire.P50, p.Acquire.P95, p.Create.P50, p.Create.P95, p.Start.P50, p.Start.P95,
			p.Exec.P50, p.Exec.P95, p.Collect.P50, p.Collect.P95, p.Remove.P50, p.Remove.P95,
			p.Critical.P50, p.Critical.P95, p.Total.P50, p.Total.P95)
	}
	out := fmt.Sprintf("n=%d\n", s.N) + line("cold", s.Cold)
	if s.Warm != nil {
		out += line("warm", *s.Warm)
	}
	return out
}
