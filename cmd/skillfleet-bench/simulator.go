package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/fleet"
	"github.com/skillfleet/skillfleet/internal/clock"
	"github.com/skillfleet/skillfleet/queue"
)

// simConfig is the fleet simulator: Workers workers of Slots slots, each with its own NATS
// connection, bound as the worker daemon binds (fleet.NewQueueWorker), running simulated jobs.
type simConfig struct {
	Workers, Slots int
	// IDPrefix names the workers: IDPrefix0, IDPrefix1, ...
	IDPrefix string
	// NATS is how every worker logs in; each gets a connection name of its own.
	NATS queue.ConnectConfig
	// CacheDir holds each worker's bundle cache, in a directory named after the worker.
	CacheDir   string
	DrainGrace time.Duration
	Exec       simExecConfig
	// MetricsAddr serves the simulator's /metrics and /healthz; empty serves none.
	MetricsAddr string
}

// simulator is the running fleet simulator.
type simulator struct {
	cfg     simConfig
	log     *zap.Logger
	exec    *simExecutor
	workers []*fleet.QueueWorker
	stop    func() // the metrics listener's
	started time.Time
}

// startSimulator connects and binds every worker, waiting for NATS and the coordinator's
// topology as a worker daemon does, until ctx ends.
func startSimulator(ctx context.Context, cfg simConfig, clk clock.Clock, log *zap.Logger) (s *simulator, err error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exec, err := newSimExecutor(cfg.Exec, clk, reg)
	if err != nil {
		return nil, err
	}
	s = &simulator{cfg: cfg, log: log, exec: exec, stop: func() {}}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	for i := range cfg.Workers {
		id := fmt.Sprintf("%s%d", cfg.IDPrefix, i)
		nc := cfg.NATS
		nc.Name = "skillfleet-fleetsim-" + id
		qw, err := fleet.NewQueueWorker(ctx, fleet.QueueWorkerConfig{
			ID: id, Slots: cfg.Slots, DrainGrace: cfg.DrainGrace, CacheDir: filepath.Join(cfg.CacheDir, id), NATS: nc,
		}, fleet.QueueWorkerDeps{
			Executor: exec,
			Log:      log.Named(id),
			// One registry for all: a worker label (bounded by --workers) keeps their series apart.
			Registry: prometheus.WrapRegistererWith(prometheus.Labels{"worker": id}, reg),
		})
		if err != nil {
			return nil, fmt.Errorf("worker %s: %w", id, err)
		}
		s.workers = append(s.workers, qw)
	}
	if cfg.MetricsAddr != "" {
		if s.stop, err = fleet.ServeWorkerMetrics(cfg.MetricsAddr, "", reg, s.connected, log); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// connected reports whether every worker's connection is up.
func (s *simulator) connected() bool {
	return !slices.ContainsFunc(s.workers, func(w *fleet.QueueWorker) bool { return !w.Connected() })
}

// run runs every worker until ctx ends and they have drained.
func (s *simulator) run(ctx context.Context) error {
	defer s.stop()
	s.started = time.Now()
	errs := make([]error, len(s.workers))
	var wg sync.WaitGroup
	for i, w := range s.workers {
		wg.Go(func() { errs[i] = w.Run(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// force stops the running jobs of every worker at once (a second signal).
func (s *simulator) force() {
	for _, w := range s.workers {
		w.Force()
	}
}

// close releases the workers of a simulator that does not get to run.
func (s *simulator) close() {
	s.stop()
	for _, w := range s.workers {
		w.Close()
	}
}

// writeSummary prints what the simulated workers ran.
func (s *simulator) writeSummary(w io.Writer) {
	c := s.exec.counts()
	verdicts := make([]string, 0, len(c.ByVerdict))
	for _, v := range slices.Sorted(maps.Keys(c.ByVerdict)) {
		verdicts = append(verdicts, fmt.Sprintf("%d %s", c.ByVerdict[v], verdictLabel(v)))
	}
	if len(verdicts) == 0 {
		verdicts = []string{"none"}
	}
	fmt.Fprintf(w, "fleet simulator: %d workers × %d slots ran %d jobs over %.1f s from the first one's start to the last one's end (%.0f jobs/s), up %.1f s: %s; %d made to fail (fail rate %.3g, seed %d)\n",
		len(s.workers), s.cfg.Slots, c.Executions, c.Span.Seconds(), float64(c.Executions)/max(c.Span.Seconds(), 1e-9), time.Since(s.started).Seconds(),
		strings.Join(verdicts, ", "), c.Made, s.cfg.Exec.FailRate, s.cfg.Exec.Seed)
}
