package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/flaky"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/worker"
)

// InProcessConfig describes a fleet in one process.
type InProcessConfig struct {
	// DataDir holds the JetStream store, bundle caches and coordinator data; a temporary
	// directory (removed on Close) when empty.
	DataDir string
	// Workers is the number of worker instances, each with Slots slots; 0 starts none (tests
	// add them later).
	Workers int
	Slots   int
	Queue   queue.Config
	// Executor runs jobs; required (a sandbox executor in production, a no-op in benchmarks).
	Executor worker.Executor
	// Coordinator and Worker override defaults where set.
	Coordinator coordinator.Config
	Worker      worker.Config
	// History keeps the fleet's results: a SQLite file or postgres:// URL; empty or HistoryOff
	// keeps none.
	History HistoryConfig
	// Flaky tunes flaky labels; Quarantine is the quarantine policy of the fleet's reports.
	Flaky      flaky.Config
	Quarantine flaky.Policy
	Log        *zap.Logger
	// Rates, when set, is bound to the fleet's rate budgets (Topology.Rates) once its NATS is
	// up: the store of the models the Executor runs (ModelsConfig.RateStore).
	Rates *LateRates
	// Registry receives the coordinator's and workers' metrics; nil keeps them private.
	Registry prometheus.Registerer
}

// InProcess is a whole fleet running in one process: an embedded nats-server, a coordinator and
// N workers sharing one executor. It is `skillfleet test`, and the harness of the end-to-end
// tests and benchmarks: the same code paths as a distributed fleet, wired in memory.
type InProcess struct {
	Server      *queue.Embedded
	Conn        *queue.Conn
	Topology    *queue.Topology
	Coordinator *coordinator.Coordinator
	// History is the open history, nil when off, and Audit its audit log.
	History *History
	Audit   *AuditLog

	cfg     InProcessConfig
	reg     prometheus.Registerer
	dir     string
	tmp     string
	log     *zap.Logger
	wctx    context.Context
	stop    context.CancelFunc
	workers sync.WaitGroup
	nextID  int
}

// StartInProcess brings a fleet up in this process; Close takes it down.
func StartInProcess(ctx context.Context, cfg InProcessConfig) (f *InProcess, err error) {
	if cfg.Executor == nil {
		return nil, errors.New("fleet: an executor is required")
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	if cfg.Slots < 1 {
		cfg.Slots = 1
	}
	if cfg.Queue == (queue.Config{}) {
		cfg.Queue = queue.DefaultConfig()
	}
	f = &InProcess{log: cfg.Log}
	defer func() {
		if err != nil {
			_ = f.Close(context.Background())
		}
	}()
	dir := cfg.DataDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "skillfleet-local-"); err != nil {
			return nil, err
		}
		f.tmp = dir
	}
	if f.Server, err = queue.StartEmbedded(queue.EmbeddedConfig{StoreDir: filepath.Join(dir, "jetstream")}, cfg.Log.Named("nats")); err != nil {
		return nil, err
	}
	if f.Conn, err = f.Server.Connect("skillfleet-local"); err != nil {
		return nil, err
	}
	if f.Topology, err = queue.Ensure(ctx, f.Conn, cfg.Queue); err != nil {
		return nil, err
	}
	if cfg.Rates != nil {
		cfg.Rates.Bind(f.Topology.Rates())
	}
	reg := cfg.Registry
	cc := cfg.Coordinator
	cc.DataDir = filepath.Join(dir, "coordinator")
	cc.MaxAttempts = cfg.Queue.MaxDeliver
	cc.Retention = cfg.Queue.ResultsMaxAge
	// One process is one user's: the team bounds that keep teams apart on a fleet would only
	// stop a big local run short of the streams' own limits.
	if cc.TeamDefaults.MaxResultBytes == 0 {
		cc.TeamDefaults.MaxResultBytes = cfg.Queue.ResultsMaxBytes
	}
	if cc.TeamDefaults.MaxArtifactBytes == 0 {
		cc.TeamDefaults.MaxArtifactBytes = cfg.Queue.ArtifactsMaxBytes
	}
	if cc.TeamDefaults.MaxBundleBytes == 0 {
		cc.TeamDefaults.MaxBundleBytes = cfg.Queue.BundlesMaxBytes
	}
	deps := coordinator.Deps{Queue: f.Topology, Runs: f.Topology.Runs(), Bundles: f.Topology, Log: cfg.Log.Named("coordinator"), Registry: reg}
	if f.History, err = OpenHistory(ctx, cfg.History, cfg.Log.Named("history")); err != nil {
		return nil, err
	}
	if f.History != nil {
		deps.History, deps.Reuse = f.History, f.History
		if f.Audit, err = NewAuditLog(f.History.Store, cfg.Log.Named("audit"), reg); err != nil {
			return nil, err
		}
		deps.Audit = f.Audit
	}
	(&ReportPolicy{History: f.History, Flaky: cfg.Flaky, Quarantine: cfg.Quarantine}).wire(&deps)
	if f.Coordinator, err = coordinator.New(cc, deps); err != nil {
		return nil, err
	}
	if err := f.Coordinator.Start(ctx); err != nil {
		return nil, err
	}
	f.cfg, f.reg, f.dir = cfg, reg, dir
	f.wctx, f.stop = context.WithCancel(context.WithoutCancel(ctx))
	for range cfg.Workers {
		if err := f.startWorker(cfg.Executor); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// startWorker adds a worker that runs until Close.
func (f *InProcess) startWorker(exec worker.Executor) error {
	f.nextID++
	cfg := f.cfg
	wc := cfg.Worker
	wc.ID = fmt.Sprintf("local-%d", f.nextID)
	wc.Slots = cfg.Slots
	wc.MaxAttempts = cfg.Queue.MaxDeliver
	wc.Heartbeat = cfg.Queue.HeartbeatInterval()
	wc.CacheDir = filepath.Join(f.dir, "worker-cache", wc.ID)
	wc.MaxResultBytes = int(f.Conn.MaxPayload())
	var reg prometheus.Registerer
	if f.reg != nil {
		// Several workers in one registry: a worker label (bounded by --workers) keeps their
		// series apart.
		reg = prometheus.WrapRegistererWith(prometheus.Labels{"worker": wc.ID}, f.reg)
	}
	results, err := f.Topology.NewResultPublisher(queue.DefaultResultPublisherConfig())
	if err != nil {
		return err
	}
	w, err := worker.New(wc, worker.Deps{
		Lanes:         queueLanes(f.Topology.LaneConsumers()),
		Results:       results,
		Bundles:       f.Topology,
		Executor:      exec,
		Artifacts:     queueArtifacts{f.Topology},
		Cancellations: f.Topology,
		Withdrawals:   f.Topology,
		Log:           f.log.Named("worker"),
		Registry:      reg,
	})
	if err != nil {
		return err
	}
	f.workers.Add(1)
	go func() {
		defer f.workers.Done()
		_ = w.Run(f.wctx)
		// Run has waited for its results to be confirmed (or given up on them).
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = results.Close(ctx)
	}()
	return nil
}

// Close drains the workers, stops the coordinator and the server, and removes a temporary data
// directory.
func (f *InProcess) Close(ctx context.Context) error {
	var errs []error
	if f.stop != nil {
		f.stop()
		f.workers.Wait()
	}
	if f.Coordinator != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		errs = append(errs, f.Coordinator.Close(cctx))
		cancel()
	}
	if f.History != nil {
		hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		if f.Audit != nil {
			errs = append(errs, f.Audit.Close(hctx))
		}
		errs = append(errs, f.History.Close(hctx))
		cancel()
	}
	if f.Conn != nil {
		f.Conn.Close()
	}
	if f.Server != nil {
		f.Server.Shutdown()
	}
	if f.tmp != "" {
		errs = append(errs, os.RemoveAll(f.tmp))
	}
	return errors.Join(errs...)
}
