// Command coordinator runs the skillfleet coordinator: the HTTP API that accepts suites, the
// planner that puts their jobs on JetStream, and the aggregator of results into reports.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/cmdutil"
	"github.com/skillfleet/skillfleet/internal/httpserve"
	"github.com/skillfleet/skillfleet/queue"
)

type options struct {
	httpAddr     string
	embeddedNATS string
	dataDir      string
	token        string
	tokenFile    string
	deadline     time.Duration
	agents       []string
	knownAgents  []string
	maxDeadline  time.Duration
	maxJobsRun   int
	maxJobsToken int
	nats         cmdutil.NATSFlags
	queue        cmdutil.QueueFlags
	logLevel     string

	metricsAddr                  string
	maxConns, maxConnsPerIP      int
	maxStreams, maxStreamsPerTok int
	minUploadRate                int64
	uploadWindow                 time.Duration

	// tokens are resolved from token, tokenFile and $SKILLFLEET_TOKEN before run.
	tokens []coordinator.Token
}

func main() {
	var o options
	os.Exit(cmdutil.Execute(newCommand(&o)))
}

// newCommand is the coordinator's command line, filling o.
func newCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:           "coordinator",
		Short:         "Run the skillfleet coordinator (HTTP API, planner, result aggregator)",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := resolveTokens(cmd, o); err != nil {
				return err
			}
			return run(cmd.Context(), *o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.httpAddr, "http", "127.0.0.1:8080", "address of the HTTP API, /healthz and /readyz (and /metrics, see --metrics)")
	f.StringVar(&o.metricsAddr, "metrics", "", "address of a separate /metrics listener; empty serves /metrics on --http, \"off\" serves none")
	f.IntVar(&o.maxConns, "max-conns", 1024, "connections the API holds at once; over it the oldest that sent no request is closed")
	f.IntVar(&o.maxConnsPerIP, "max-conns-per-ip", 128, "connections one remote address may hold (0: no per-address cap)")
	f.IntVar(&o.maxStreams, "max-streams", coordinator.DefaultMaxStreams, "concurrent event streams (/v1/runs/{id}/events); over it: 429")
	f.IntVar(&o.maxStreamsPerTok, "max-streams-per-token", coordinator.DefaultMaxStreamsPerCaller, "concurrent event streams per token")
	f.Int64Var(&o.minUploadRate, "min-upload-rate", coordinator.DefaultMinUploadRate, "bytes/s an upload must average over --upload-rate-window, else 408 (0: no minimum)")
	f.DurationVar(&o.uploadWindow, "upload-rate-window", coordinator.DefaultUploadRateWindow, "window of --min-upload-rate")
	f.StringVar(&o.embeddedNATS, "embedded-nats", "", "run an embedded nats-server with JetStream on this address (host:port) instead of connecting to --nats")
	f.StringVar(&o.dataDir, "data", "./skillfleet-data", "directory for the embedded server's store and extracted bundles")
	f.StringVar(&o.token, "token", "", "bearer token required on /v1/ (also $SKILLFLEET_TOKEN); without one the API serves loopback callers only")
	f.StringVar(&o.tokenFile, "token-file", "", "file of bearer tokens, one per line: \"NAME TOKEN\" or a bare token; # comments")
	f.DurationVar(&o.deadline, "default-deadline", 6*time.Hour, "deadline of runs that set none")
	f.StringSliceVar(&o.agents, "agent", nil, "default agents for prompt cases (repeatable)")
	f.StringSliceVar(&o.knownAgents, "known-agent", nil, "agents a run may name (repeatable; default: the --agent list; with neither, names are not checked)")
	f.DurationVar(&o.maxDeadline, "max-deadline", 24*time.Hour, "longest deadline a run may ask for")
	f.IntVar(&o.maxJobsRun, "max-jobs-per-run", 100_000, "jobs a suite may expand into (cases × runs × agents); more is refused with 422")
	f.IntVar(&o.maxJobsToken, "max-jobs-per-token", 400_000, "jobs of one token's unfinished runs; a submission beyond it is refused with 422")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	o.nats.Register(f)
	o.queue.Register(f)
	return cmd
}

// resolveTokens fills o.tokens; an empty token is a usage error.
func resolveTokens(cmd *cobra.Command, o *options) error {
	toks, err := apiTokens(o.token, cmd.Flags().Changed("token"), o.tokenFile, "SKILLFLEET_TOKEN")
	o.tokens = toks
	return err
}

func run(ctx context.Context, o options) error {
	log, err := cmdutil.Logger(o.logLevel)
	if err != nil {
		return cmdutil.Usage(err)
	}
	defer func() { _ = log.Sync() }()
	if len(o.tokens) == 0 && !cmdutil.IsLoopback(o.httpAddr) {
		log.Warn("the API listens beyond loopback without a bearer token: it serves only requests for a loopback Host; set --token, --token-file or $SKILLFLEET_TOKEN")
	}
	if len(o.knownAgents) == 0 && len(o.agents) == 0 {
		// Without the fleet's agent names, a run's agent names cannot be checked here; a name
		// no worker serves makes errored jobs, never passes.
		log.Warn("runs may name any agent: set --known-agent (or --agent) to the agents the workers serve, so that a misspelt agent is refused at submission")
	}
	if o.maxConnsPerIP == 0 {
		o.maxConnsPerIP = -1 // httpserve: no per-address cap
	}
	if o.minUploadRate == 0 {
		o.minUploadRate = -1 // coordinator: no minimum
	}
	qcfg, err := o.queue.Config()
	if err != nil {
		return cmdutil.Usage(err)
	}
	// Uploads are spooled under --data, not /tmp: the coordinator's image has no /tmp, and a
	// hardened pod's root file system is read-only.
	qcfg.TempDir = filepath.Join(o.dataDir, "spool")
	if err := os.MkdirAll(qcfg.TempDir, 0o700); err != nil {
		return fmt.Errorf("--data: %w", err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	ncfg, err := o.nats.Config("skillfleet-coordinator")
	if err != nil {
		return err
	}
	var nc *nats.Conn
	if o.embeddedNATS != "" {
		host, port, err := cmdutil.SplitHostPort(o.embeddedNATS)
		if err != nil {
			return cmdutil.Usage(fmt.Errorf("--embedded-nats: %w", err))
		}
		if ncfg.CredsFile != "" || ncfg.NKeyFile != "" || ncfg.User != "" || ncfg.TLSCA != "" || ncfg.TLSCert != "" {
			return cmdutil.Usage(errors.New("--embedded-nats takes a NATS token only (--nats-token-file or $SKILLFLEET_NATS_TOKEN); for other authentication or TLS run a nats-server"))
		}
		// Whoever reaches the queue can publish results, so forge a pass: beyond loopback the
		// embedded server never runs open.
		if ncfg.Token == "" && !cmdutil.IsLoopback(o.embeddedNATS) {
			return cmdutil.Usage(errors.New("--embedded-nats listens beyond loopback: set a NATS token (--nats-token-file or $SKILLFLEET_NATS_TOKEN) that workers must present"))
		}
		srv, err := queue.StartEmbedded(queue.EmbeddedConfig{StoreDir: filepath.Join(o.dataDir, "jetstream"), Host: host, Port: port, Token: ncfg.Token}, log.Named("nats"))
		if err != nil {
			return err
		}
		defer srv.Shutdown()
		log.Info("embedded NATS listening", zap.String("url", srv.ClientURL()))
		if nc, err = srv.Connect(nats.Name("skillfleet-coordinator")); err != nil {
			return err
		}
	} else {
		if nc, err = queue.Connect(ncfg, log.Named("nats")); err != nil {
			return err
		}
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	topo, err := queue.Ensure(ctx, js, qcfg)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	c, err := coordinator.New(coordinator.Config{
		DataDir: filepath.Join(o.dataDir, "coordinator"), DefaultDeadline: o.deadline,
		MaxAttempts: qcfg.MaxDeliver, Agents: o.agents, KnownAgents: o.knownAgents,
		MaxDeadline: o.maxDeadline, MaxJobsPerRun: o.maxJobsRun, MaxJobsPerPrincipal: o.maxJobsToken,
		// A run is kept as long as its results: without them its report cannot be rebuilt.
		Retention: qcfg.ResultsMaxAge,
	}, coordinator.Deps{Topology: topo, Log: log.Named("coordinator"), Registry: reg})
	if err != nil {
		return err
	}
	if err := c.Start(ctx); err != nil {
		return err
	}
	limits := httpserve.Config{MaxConns: o.maxConns, MaxConnsPerIP: o.maxConnsPerIP, ErrorLog: zap.NewStdLog(log.Named("http"))}
	api := coordinator.APIConfig{
		Tokens: o.tokens,
		Ready: func(context.Context) error {
			if !nc.IsConnected() {
				return errors.New("not connected to NATS: " + nc.Status().String())
			}
			return nil
		},
		MaxStreams: o.maxStreams, MaxStreamsPerCaller: o.maxStreamsPerTok,
		MinUploadRate: o.minUploadRate, UploadRateWindow: o.uploadWindow,
		WriteTimeout: httpserve.Defaults.WriteTimeout,
	}
	var servers []*httpserve.Server
	switch o.metricsAddr {
	case "":
		api.Gatherer = reg
	case "off":
	default:
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		ms, err := httpserve.Listen("tcp", o.metricsAddr, mux, httpserve.Config{MaxConns: 64, ErrorLog: limits.ErrorLog})
		if err != nil {
			return cmdutil.Usage(fmt.Errorf("--metrics: %w", err))
		}
		servers = append(servers, ms)
	}
	as, err := httpserve.Listen("tcp", o.httpAddr, c.Handler(api), limits)
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
	log.Info("coordinator serving", zap.String("http", o.httpAddr), zap.String("metrics", o.metricsAddr), zap.String("nats", strings.TrimSpace(nc.ConnectedUrlRedacted())))
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
