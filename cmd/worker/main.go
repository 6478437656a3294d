// Command worker runs a skillfleet worker: it pulls jobs from JetStream, runs each in a
// hardened throw-away Docker container, and publishes the results. It turns flags into a
// fleet.WorkerConfig; package fleet wires and runs the daemon.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/skillfleet/skillfleet/config"
	"github.com/skillfleet/skillfleet/fleet"
	"github.com/skillfleet/skillfleet/internal/cmdutil"
	"github.com/skillfleet/skillfleet/sandbox"
)

type options struct {
	id          string
	slots       int
	metricsAddr string
	// metricsTokenFile is --metrics-token-file.
	metricsTokenFile string
	cacheDir         string
	sharedDir        string
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
	os.Exit(cmdutil.Execute(newCommand(&o)))
}

// newCommand is the worker's command line, filling o.
func newCommand(o *options) *cobra.Command {
	host, _ := os.Hostname()
	cmd := &cobra.Command{
		Use:           "worker",
		Short:         "Run a skillfleet worker: pull jobs, run them in sandboxes, publish results",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.dirsGiven = cmd.Flags().Changed("cache") || cmd.Flags().Changed("gateway-dir")
			return run(cmd.Context(), *o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.id, "id", host, "worker id: stable across restarts, so stray containers of a crashed worker are recognised")
	f.IntVar(&o.slots, "slots", 2, "jobs run at once")
	f.StringVar(&o.metricsAddr, "metrics", "127.0.0.1:9090", "address of /metrics and /healthz; empty disables")
	f.StringVar(&o.metricsTokenFile, "metrics-token-file", "", "file whose first line is the bearer token /metrics asks of scrapers (at least 16 bytes); without it /metrics is open (/healthz stays open)")
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
	return cmd
}

func run(ctx context.Context, o options) error {
	log, err := cmdutil.Logger(o.logLevel)
	if err != nil {
		return cmdutil.Usage(err)
	}
	defer func() { _ = log.Sync() }()
	cfg, err := o.config()
	if err != nil {
		return err
	}
	d, err := fleet.NewWorkerDaemon(cfg, log)
	if err != nil {
		return err
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
		d.Force()
	}()
	return d.Run(runCtx)
}

// config turns the flags into the daemon's configuration; its errors are usage errors.
func (o options) config() (fleet.WorkerConfig, error) {
	if o.sharedDir != "" && o.dirsGiven {
		return fleet.WorkerConfig{}, cmdutil.Usage(errors.New("--shared-dir replaces --cache and --gateway-dir: give one or the others"))
	}
	ncfg, err := o.nats.Config("skillfleet-worker-" + o.id)
	if err != nil {
		return fleet.WorkerConfig{}, err
	}
	metricsToken, err := cmdutil.SecretFile("--metrics-token-file", o.metricsTokenFile)
	if err != nil {
		return fleet.WorkerConfig{}, err
	}
	var seccomp string
	if o.seccomp != "" {
		b, err := os.ReadFile(o.seccomp)
		if err != nil {
			return fleet.WorkerConfig{}, cmdutil.Usage(fmt.Errorf("--seccomp-profile: %w", err))
		}
		seccomp = string(b)
	}
	var agents *config.Settings
	if o.agentsConfig != "" {
		cfg, _, diags := config.Load(o.agentsConfig)
		if diags.HasErrors() {
			return fleet.WorkerConfig{}, cmdutil.Usage(fmt.Errorf("--agents-config: %v", diags))
		}
		agents = cfg
	}
	maxLimits := sandbox.Limits{MemoryBytes: o.maxMemory, NanoCPUs: int64(o.maxCPUs * 1e9), Pids: o.maxPids}
	return fleet.WorkerConfig{
		ID: o.id, Slots: o.slots, MetricsAddr: o.metricsAddr, MetricsToken: metricsToken, CacheDir: o.cacheDir, SharedDir: o.sharedDir,
		DrainGrace: o.drainGrace,
		Sandbox: fleet.SandboxConfig{
			Runner: sandbox.Config{
				Image: o.image, Runtime: o.runtime, RequireRuntime: o.requireRuntime,
				Max: maxLimits.WithDefaults(sandbox.DefaultLimits()), WarmPool: o.warmPool, SeccompProfile: seccomp,
			},
			ImageMissing: o.imageMissing,
		},
		NATS: ncfg, Models: o.models.ModelsConfig, Agents: agents,
	}, nil
}
