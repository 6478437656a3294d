// Command worker runs a skillfleet worker: it pulls jobs from JetStream, runs each in a
// hardened throw-away Docker container, and publishes the results.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/moby/moby/client"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/config"
	sandboxfiles "github.com/skillfleet/skillfleet/deploy/sandbox"
	"github.com/skillfleet/skillfleet/internal/cmdutil"
	"github.com/skillfleet/skillfleet/internal/httpserve"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/sandbox"
	"github.com/skillfleet/skillfleet/worker"
)

type options struct {
	id          string
	slots       int
	metricsAddr string
	cacheDir    string
	sharedDir   string
	// dirsGiven is whether --cache or --gateway-dir was on the command line.
	dirsGiven      bool
	image          string
	runtime        string
	requireRuntime bool
	warmPool       int
	drainGrace     time.Duration
	maxMemory      int64
	maxCPUs        float64
	maxPids        int64
	seccomp        string
	imageMissing   string
	nats           cmdutil.NATSFlags
	models         cmdutil.ModelFlags
	agentsConfig   string
	logLevel       string
}

func main() {
	var o options
	host, _ := os.Hostname()
	cmd := &cobra.Command{
		Use:           "worker",
		Short:         "Run a skillfleet worker: pull jobs, run them in sandboxes, publish results",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.dirsGiven = cmd.Flags().Changed("cache") || cmd.Flags().Changed("gateway-dir")
			return run(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.id, "id", host, "worker id: stable across restarts, so stray containers of a crashed worker are recognised")
	f.IntVar(&o.slots, "slots", 2, "jobs run at once")
	f.StringVar(&o.metricsAddr, "metrics", "127.0.0.1:9090", "address of /metrics and /healthz; empty disables")
	f.StringVar(&o.cacheDir, "cache", filepath.Join(os.TempDir(), "skillfleet-bundles"), "bundle cache; must be a path the Docker engine can bind-mount")
	f.StringVar(&o.sharedDir, "shared-dir", "", "a directory the workers using one Docker engine share (a node path): this worker keeps its bundle cache and gateway sockets in DIR/<id>, locked while it runs, and removes the directories of workers that are gone; replaces --cache and --gateway-dir")
	f.StringVar(&o.image, "image", sandbox.DefaultImage, "sandbox image")
	f.StringVar(&o.imageMissing, "image-missing", "fail", "when the sandbox image is not on the engine: fail, pull (--image from its registry) or build (the embedded Dockerfile; the engine must reach Debian's registry)")
	f.StringVar(&o.runtime, "runtime", "", "container runtime, e.g. runsc (gVisor); empty uses the engine's default")
	f.BoolVar(&o.requireRuntime, "require-runtime", false, "refuse to start when --runtime is not registered with the engine")
	f.IntVar(&o.warmPool, "warm-pool", 2, "started containers kept ready per suite, so jobs skip container creation; 0 disables")
	f.DurationVar(&o.drainGrace, "drain-grace", 5*time.Minute, "how long running jobs may finish after SIGTERM; a second signal stops them at once")
	f.Int64Var(&o.maxMemory, "max-memory", 0, "most memory (bytes) a suite may give a job; 0 keeps the default")
	f.Float64Var(&o.maxCPUs, "max-cpus", 0, "most CPUs a suite may give a job; 0 keeps the default")
	f.Int64Var(&o.maxPids, "max-pids", 0, "most processes a suite may give a job; 0 keeps the default")
	f.StringVar(&o.seccomp, "seccomp-profile", "", "a seccomp profile (JSON file) stricter than the engine's default")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	o.nats.Register(f)
	o.models.Register(f)
	f.StringVar(&o.agentsConfig, "agents-config", "", "skillfleet.yaml with the agents and judge this worker serves (endpoints, key variables, models, prices)")
	os.Exit(cmdutil.Execute(cmd))
}

func run(ctx context.Context, o options) error {
	log, err := cmdutil.Logger(o.logLevel)
	if err != nil {
		return cmdutil.Usage(err)
	}
	defer func() { _ = log.Sync() }()
	if o.id == "" || o.slots < 1 {
		return cmdutil.Usage(errors.New("--id must be set and --slots at least 1"))
	}
	if o.imageMissing != "fail" && o.imageMissing != "pull" && o.imageMissing != "build" {
		return cmdutil.Usage(fmt.Errorf("--image-missing must be fail, pull or build, not %q", o.imageMissing))
	}
	ncfg, err := o.nats.Config("skillfleet-worker-" + o.id)
	if err != nil {
		return err
	}
	var seccomp string
	if o.seccomp != "" {
		b, err := os.ReadFile(o.seccomp)
		if err != nil {
			return cmdutil.Usage(fmt.Errorf("--seccomp-profile: %w", err))
		}
		seccomp = string(b)
	}
	if o.sharedDir != "" {
		if o.dirsGiven {
			return cmdutil.Usage(errors.New("--shared-dir replaces --cache and --gateway-dir: give one or the others"))
		}
		claim, err := worker.ClaimDir(o.sharedDir, o.id, worker.ClaimOptions{}, log.Named("shared-dir"))
		if errors.Is(err, worker.ErrBadID) {
			return cmdutil.Usage(fmt.Errorf("--id with --shared-dir: %w", err))
		}
		if err != nil {
			return err
		}
		// Deferred first, so released last: the gateways' sockets live in the directory.
		defer func() { _ = claim.Release() }()
		o.cacheDir = filepath.Join(claim.Dir, "bundles")
		o.models.GatewayDir = filepath.Join(claim.Dir, "gateways")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var agentsCfg *config.Suite
	if o.agentsConfig != "" {
		cfg, _, diags := config.Load(o.agentsConfig)
		if diags.HasErrors() {
			return cmdutil.Usage(fmt.Errorf("--agents-config: %v", diags))
		}
		agentsCfg = cfg
	}
	models, err := o.models.Build(agentsCfg, reg, log)
	if err != nil {
		return cmdutil.Usage(err)
	}
	// Last out: the gateways of command agents serve jobs until the worker has stopped.
	defer func() { _ = models.Close() }()

	docker, err := sandbox.NewDockerClient(ctx)
	if err != nil {
		return err
	}
	defer docker.Close()
	if err := ensureImage(ctx, docker, o, log); err != nil {
		return err
	}
	maxLimits := sandbox.Limits{MemoryBytes: o.maxMemory, NanoCPUs: int64(o.maxCPUs * 1e9), Pids: o.maxPids}
	runner, err := sandbox.New(sandbox.Config{
		Image: o.image, Runtime: o.runtime, RequireRuntime: o.requireRuntime, WorkerID: o.id,
		Max: maxLimits.WithDefaults(sandbox.DefaultLimits()), WarmPool: o.warmPool, SeccompProfile: seccomp,
	}, docker, log.Named("sandbox"), reg)
	if err != nil {
		return err
	}
	// Start fails closed: a missing image or a required runtime that is absent stops here.
	if err := runner.Start(ctx); err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = runner.Close(cctx)
	}()

	// A worker may start before NATS is reachable: it waits (logging why) rather than exit.
	nc, err := queue.ConnectRetry(ctx, ncfg, queue.RetryConfig{}, log.Named("nats"))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	topo, err := openTopology(ctx, js, log)
	if err != nil {
		return err
	}
	// The coordinator owns the topology; what its consumers enforce is what this worker obeys.
	cc := topo.OnDemand.CachedInfo().Config
	log.Info("bound to the job queue", zap.Duration("ack_wait", cc.AckWait), zap.Int("max_deliver", cc.MaxDeliver))
	results, err := topo.NewResultPublisher(queue.DefaultResultPublisherConfig())
	if err != nil {
		return err
	}
	// The worker waits for its results before Run returns; this only releases the publisher.
	defer func() { _ = results.Close(context.Background()) }()
	w, err := worker.New(worker.Config{
		ID: o.id, Slots: o.slots, MaxAttempts: cc.MaxDeliver, Heartbeat: cc.AckWait / 3,
		DrainGrace: o.drainGrace, CacheDir: o.cacheDir, MaxResultBytes: int(nc.MaxPayload()),
	}, worker.Deps{
		Lanes:    []jetstream.Consumer{topo.OnDemand, topo.Scheduled},
		Results:  results,
		Bundles:  topo,
		Executor: worker.NewSandboxExecutor(runner, log.Named("executor")).WithAgents(models.Agents, models.Judge, models.Votes),
		Log:      log.Named("worker"),
		Registry: reg,
	})
	if err != nil {
		return err
	}
	if o.metricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
			if !nc.IsConnected() {
				http.Error(w, "not connected to NATS", http.StatusServiceUnavailable)
				return
			}
			_, _ = w.Write([]byte("ok\n"))
		})
		// Scrapes only: a small connection cap, so a flood on this port cannot take the
		// worker's descriptors from its sandboxes.
		srv, err := httpserve.Listen("tcp", o.metricsAddr, mux, httpserve.Config{MaxConns: 64, MaxConnsPerIP: 16, ErrorLog: zap.NewStdLog(log.Named("metrics"))})
		if err != nil {
			return cmdutil.Usage(fmt.Errorf("--metrics: %w", err))
		}
		go func() {
			if err := srv.Serve(); err != nil {
				log.Error("metrics server", zap.Error(err))
			}
		}()
		defer srv.HTTP.Close()
	}

	// The first SIGTERM or interrupt drains; a second one stops running jobs at once (they go
	// back to the queue for other workers).
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	runCtx, drain := context.WithCancel(ctx)
	defer drain()
	go func() {
		<-sigs
		log.Info("signal received: draining (send another to stop running jobs now)")
		drain()
		<-sigs
		log.Warn("second signal: stopping running jobs")
		w.Force()
	}()
	return w.Run(runCtx)
}

// openTopology binds to the streams and consumers the coordinator created, waiting for them
// when the worker starts first.
func openTopology(ctx context.Context, js jetstream.JetStream, log *zap.Logger) (*queue.Topology, error) {
	for {
		topo, err := queue.OpenWorker(ctx, js, queue.DefaultConfig())
		if err == nil {
			return topo, nil
		}
		log.Warn("job queue not ready; waiting for the coordinator to create it", zap.Error(err))
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// ensureImage gets the sandbox image as --image-missing says, for engines that start empty (a
// Docker-in-Docker sidecar); "fail" leaves it to the runner, which refuses to start without it.
func ensureImage(ctx context.Context, docker *client.Client, o options, log *zap.Logger) error {
	cfg := sandbox.ImageConfig{Name: o.image, PullTimeout: 10 * time.Minute}
	switch o.imageMissing {
	case "fail":
		return nil
	case "pull":
		cfg.Pull = true
	case "build":
		// Under the cache, not /tmp: the worker's image has no /tmp.
		if err := os.MkdirAll(o.cacheDir, 0o755); err != nil {
			return fmt.Errorf("--cache: %w", err)
		}
		dir, err := os.MkdirTemp(o.cacheDir, ".tmp-sandbox-build-") // the cache removes .tmp- leftovers
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if err := sandboxfiles.WriteTo(dir); err != nil {
			return err
		}
		cfg.DockerfileDir = dir
	}
	return sandbox.EnsureImage(ctx, docker, cfg, log.Named("image"))
}
