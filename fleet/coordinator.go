package fleet

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/flaky"
	"github.com/skillfleet/skillfleet/internal/authlimit"
	"github.com/skillfleet/skillfleet/internal/httpserve"
	"github.com/skillfleet/skillfleet/queue"
)

// CoordinatorConfig is the coordinator daemon: where it listens, the NATS it uses (or embeds),
// the topology it creates, and the coordinator and API behind it.
type CoordinatorConfig struct {
	// HTTPAddr serves the API, /healthz and /readyz (and /metrics when MetricsAddr is empty),
	// and the web viewer at every other path.
	HTTPAddr string
	// MetricsAddr is a separate /metrics listener; empty serves /metrics on HTTPAddr, "off"
	// serves none.
	MetricsAddr string
	// MetricsToken, when set, is the bearer token /metrics asks of scrapers, wherever it is
	// served; empty leaves it open.
	MetricsToken string
	// DataDir holds the embedded server's store, spooled uploads and extracted bundles.
	DataDir string
	// EmbeddedNATS (host:port) runs an embedded nats-server there instead of connecting to
	// NATS; it takes NATS.Token only (CheckEmbeddedNATS).
	EmbeddedNATS string
	NATS         queue.ConnectConfig
	// Queue is the topology the coordinator creates; its TempDir is set under DataDir.
	Queue queue.Config
	// Coordinator's DataDir, MaxAttempts and Retention are set from DataDir and Queue.
	Coordinator coordinator.Config
	// API's Ready, Gatherer and WriteTimeout are set by the daemon.
	API coordinator.APIConfig
	// Web is the viewer's own configuration (its read-only tokens); it takes the API's
	// tokens for its operators.
	Web WebConfig
	// History keeps every result for months; an empty Target is a SQLite file under
	// DataDir, HistoryOff none.
	History HistoryConfig
	// Flaky tunes flaky labels; Quarantine is the quarantine policy of every run's report.
	Flaky      flaky.Config
	Quarantine flaky.Policy
	// MaxConns and MaxConnsPerIP bound the API's connections (httpserve.Config: -1 per IP is
	// no per-address cap).
	MaxConns, MaxConnsPerIP int
	// TrustedProxies are the proxies in front whose X-Forwarded-For names the client that the
	// limit on wrong tokens charges (authlimit.Config).
	TrustedProxies []netip.Prefix
}

// CoordinatorDaemon is the coordinator process: NATS, the topology, the coordinator and its
// HTTP listeners, wired from a CoordinatorConfig.
type CoordinatorDaemon struct {
	cfg CoordinatorConfig
	log *zap.Logger
}

// NewCoordinatorDaemon checks cfg (CheckCoordinator: a refusal is a *ConfigError) and logs its
// warnings; Run starts the daemon.
func NewCoordinatorDaemon(cfg CoordinatorConfig, log *zap.Logger) (*CoordinatorDaemon, error) {
	warnings, err := CheckCoordinator(cfg)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		log.Warn(w)
	}
	return &CoordinatorDaemon{cfg: cfg, log: log}, nil
}

// Run serves until ctx ends, then shuts down; runs resume when a coordinator starts again.
func (d *CoordinatorDaemon) Run(ctx context.Context) error {
	cfg, log := d.cfg, d.log
	qcfg := cfg.Queue
	// Uploads are spooled under DataDir, not /tmp: the coordinator's image has no /tmp, and a
	// hardened pod's root file system is read-only.
	qcfg.TempDir = filepath.Join(cfg.DataDir, "spool")
	if err := os.MkdirAll(qcfg.TempDir, 0o700); err != nil {
		return fmt.Errorf("--data: %w", err)
	}
	var nc *queue.Conn
	if cfg.EmbeddedNATS != "" {
		host, port, err := SplitHostPort(cfg.EmbeddedNATS)
		if err != nil {
			return refuse("--embedded-nats: %w", err)
		}
		srv, err := queue.StartEmbedded(queue.EmbeddedConfig{StoreDir: filepath.Join(cfg.DataDir, "jetstream"), Host: host, Port: port, Token: cfg.NATS.Token}, log.Named("nats"))
		if err != nil {
			return err
		}
		defer srv.Shutdown()
		log.Info("embedded NATS listening", zap.String("url", srv.ClientURL()))
		if nc, err = srv.Connect("skillfleet-coordinator"); err != nil {
			return err
		}
	} else {
		var err error
		if nc, err = queue.Connect(cfg.NATS, log.Named("nats")); err != nil {
			return err
		}
	}
	defer nc.Close()
	topo, err := queue.Ensure(ctx, nc, qcfg)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	cc := cfg.Coordinator
	cc.DataDir = filepath.Join(cfg.DataDir, "coordinator")
	cc.MaxAttempts = qcfg.MaxDeliver
	// A run is kept as long as its results: without them its report cannot be rebuilt.
	cc.Retention = qcfg.ResultsMaxAge
	hcfg := cfg.History
	if hcfg.Target == "" {
		hcfg.Target = filepath.Join(cfg.DataDir, "history.db")
	}
	hist, err := OpenHistory(ctx, hcfg, log.Named("history"))
	if err != nil {
		return err
	}
	deps := coordinator.Deps{Queue: topo, Runs: topo.Runs(), Bundles: topo, Log: log.Named("coordinator"), Registry: reg}
	var audit *AuditLog
	if hist != nil {
		deps.History, deps.Reuse = hist, hist
		if audit, err = NewAuditLog(hist.Store, log.Named("audit"), reg); err != nil {
			return err
		}
		deps.Audit = audit
		// Closed after the coordinator (deferred first, run last): its last results and
		// finished runs are queued by then.
		defer func() {
			hctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			if err := audit.Close(hctx); err != nil {
				log.Error("writing the last audit records", zap.Error(err))
			}
			if err := hist.Close(hctx); err != nil {
				log.Error("closing the history", zap.Error(err))
			}
		}()
	}
	policy := &ReportPolicy{History: hist, Flaky: cfg.Flaky, Quarantine: cfg.Quarantine}
	policy.wire(&deps)
	c, err := coordinator.New(cc, deps)
	if err != nil {
		return err
	}
	if err := c.Start(ctx); err != nil {
		return err
	}
	limits := httpserve.Config{MaxConns: cfg.MaxConns, MaxConnsPerIP: cfg.MaxConnsPerIP, ErrorLog: zap.NewStdLog(log.Named("http"))}
	api := cfg.API
	api.Ready = func(context.Context) error {
		if !nc.IsConnected() {
			return errors.New("not connected to NATS: " + nc.Status())
		}
		return nil
	}
	api.WriteTimeout = httpserve.Defaults.WriteTimeout
	// One budget of wrong tokens per address, for the API and the viewer's login alike.
	guesses := authlimit.DefaultConfig()
	guesses.TrustedProxies = cfg.TrustedProxies
	if api.Guesses, err = authlimit.New(guesses, nil, reg); err != nil {
		return err
	}
	var servers []*httpserve.Server
	switch cfg.MetricsAddr {
	case "":
		api.Gatherer = reg
		api.MetricsToken = cfg.MetricsToken
	case "off":
	default:
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", httpserve.RequireBearer(cfg.MetricsToken, promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
		ms, err := httpserve.Listen("tcp", cfg.MetricsAddr, mux, httpserve.Config{MaxConns: 64, ErrorLog: limits.ErrorLog})
		if err != nil {
			return refuse("--metrics: %w", err)
		}
		servers = append(servers, ms)
	}
	handler, err := CoordinatorHandler(c, api, cfg.Web, Tenancy{History: hist, Policy: policy}, log)
	if err != nil {
		for _, s := range servers {
			_ = s.HTTP.Close()
		}
		return err
	}
	as, err := httpserve.Listen("tcp", cfg.HTTPAddr, handler, limits)
	if err != nil {
		for _, s := range servers {
			_ = s.HTTP.Close()
		}
		return fmt.Errorf("--http: %w", err)
	}
	servers = append(servers, as)
	errc := make(chan error, len(servers))
	for _, s := range servers {
		go func() { errc <- s.Serve() }()
	}
	log.Info("coordinator serving", zap.String("http", cfg.HTTPAddr), zap.String("metrics", cfg.MetricsAddr), zap.String("nats", strings.TrimSpace(nc.ServerURL())))
	select {
	case err := <-errc:
		if err == nil {
			err = errors.New("an HTTP server stopped")
		}
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: runs resume when a coordinator starts again")
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for _, s := range servers {
		_ = s.HTTP.Shutdown(sctx)
	}
	return c.Close(sctx)
}
