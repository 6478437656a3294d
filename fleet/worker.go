package fleet

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/config"
	"github.com/skillfleet/skillfleet/internal/httpserve"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/worker"
)

// WorkerConfig is the worker daemon: its identity and slots, where it keeps bundles and
// gateway sockets, its sandboxes, the NATS it pulls jobs from and the models it serves.
type WorkerConfig struct {
	// ID is stable across restarts, so stray containers of a crashed worker are recognised.
	ID    string
	Slots int
	// MetricsAddr serves /metrics and /healthz; empty serves none.
	MetricsAddr string
	// MetricsToken, when set, is the bearer token /metrics asks of scrapers; empty leaves it
	// open (/healthz stays open either way).
	MetricsToken string
	// CacheDir is the bundle cache; a path the Docker engine can bind-mount.
	CacheDir string
	// SharedDir, when set, is a directory the workers of one Docker engine share: this worker
	// claims SharedDir/ID (worker.ClaimDir) and keeps its bundle cache and gateway sockets
	// there, in place of CacheDir and Models.GatewayDir.
	SharedDir string
	// DrainGrace is how long running jobs may finish once Run's context ends.
	DrainGrace time.Duration
	// Sandbox's Runner.WorkerID is set to ID and its BuildDir to the bundle cache.
	Sandbox SandboxConfig
	NATS    queue.ConnectConfig
	Models  ModelsConfig
	// Agents is the agents config the worker serves (its agents and judge); nil: Models alone.
	Agents *config.Settings
}

// WorkerDaemon is the worker process: its sandboxes, models, NATS and the worker, wired from
// a WorkerConfig.
type WorkerDaemon struct {
	cfg WorkerConfig
	log *zap.Logger

	forceOnce sync.Once
	force     chan struct{}
}

// NewWorkerDaemon checks cfg (CheckWorker: a refusal is a *ConfigError); Run starts the
// daemon.
func NewWorkerDaemon(cfg WorkerConfig, log *zap.Logger) (*WorkerDaemon, error) {
	if err := CheckWorker(cfg); err != nil {
		return nil, err
	}
	return &WorkerDaemon{cfg: cfg, log: log, force: make(chan struct{})}, nil
}

// Force stops running jobs at once (they go back to the queue for other workers); for a
// second signal after the first ended Run's context.
func (d *WorkerDaemon) Force() { d.forceOnce.Do(func() { close(d.force) }) }

// Run pulls and runs jobs until ctx ends, then drains: running jobs may finish within
// DrainGrace, or until Force.
func (d *WorkerDaemon) Run(ctx context.Context) error {
	cfg, log := d.cfg, d.log
	if cfg.SharedDir != "" {
		claim, err := worker.ClaimDir(cfg.SharedDir, cfg.ID, worker.ClaimOptions{}, log.Named("shared-dir"))
		if errors.Is(err, worker.ErrBadID) {
			return refuse("--id with --shared-dir: %w", err)
		}
		if err != nil {
			return err
		}
		// Deferred first, so released last: the gateways' sockets live in the directory.
		defer func() { _ = claim.Release() }()
		cfg.CacheDir = filepath.Join(claim.Dir, "bundles")
		cfg.Models.GatewayDir = filepath.Join(claim.Dir, "gateways")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// The models pace their endpoints on the fleet's shared budget, bound once NATS is.
	rates := &LateRates{}
	cfg.Models.RateStore = rates
	models, err := BuildModels(cfg.Models, cfg.Agents, reg, log)
	if err != nil {
		return &ConfigError{Err: err}
	}
	// Last out: the gateways of command agents serve jobs until the worker has stopped.
	defer func() { _ = models.Close() }()

	sc := cfg.Sandbox
	sc.Runner.WorkerID = cfg.ID
	sc.BuildDir = cfg.CacheDir
	sandboxes, err := StartSandboxes(ctx, sc, log, reg)
	if err != nil {
		return err
	}
	defer func() { _ = sandboxes.Close(context.Background()) }()

	qw, err := NewQueueWorker(ctx, QueueWorkerConfig{
		ID: cfg.ID, Slots: cfg.Slots, DrainGrace: cfg.DrainGrace, CacheDir: cfg.CacheDir, NATS: cfg.NATS,
		AgentDigests: models.AgentDigests(sc.Runner.Image, sandboxes.Runner.ImageID()),
	}, QueueWorkerDeps{Executor: sandboxes.Executor(models, log), Log: log, Registry: reg, Rates: rates})
	if err != nil {
		return err
	}
	// Run closes it; this is for the returns before it.
	defer qw.Close()
	if cfg.MetricsAddr != "" {
		stop, err := ServeWorkerMetrics(cfg.MetricsAddr, cfg.MetricsToken, reg, qw.Connected, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-d.force:
			qw.Force()
		case <-done:
		}
	}()
	return qw.Run(ctx)
}

// ServeWorkerMetrics serves /metrics from g (asking for token, when set) and /healthz
// (503 while connected says no) on addr, for a worker process; stop closes the listener.
func ServeWorkerMetrics(addr, token string, g prometheus.Gatherer, connected func() bool, log *zap.Logger) (stop func(), err error) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", httpserve.RequireBearer(token, promhttp.HandlerFor(g, promhttp.HandlerOpts{})))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !connected() {
			http.Error(w, "not connected to NATS", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	// Scrapes only: a small connection cap, so a flood on this port cannot take the worker's
	// descriptors from its sandboxes.
	srv, err := httpserve.Listen("tcp", addr, mux, httpserve.Config{MaxConns: 64, MaxConnsPerIP: 16, ErrorLog: zap.NewStdLog(log.Named("metrics"))})
	if err != nil {
		return nil, refuse("--metrics: %w", err)
	}
	go func() {
		if err := srv.Serve(); err != nil {
			log.Error("metrics server", zap.Error(err))
		}
	}()
	return func() { _ = srv.HTTP.Close() }, nil
}
