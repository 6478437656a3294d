package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/clock"
	"github.com/skillfleet/skillfleet/internal/cmdutil"
	"github.com/skillfleet/skillfleet/suite"
)

// fleetOptions are the flags of skillfleet-bench fleet.
type fleetOptions struct {
	nats        cmdutil.NATSFlags
	workers     int
	slots       int
	idPrefix    string
	jobTime     time.Duration
	outputBytes int
	failRate    float64
	seed        uint64
	metricsAddr string
	cache       string
	drainGrace  time.Duration
	logLevel    string

	submit                     bool
	coordinator                string
	token, tokenFile           string
	coordMetrics               string
	coordMetricsTokenFile      string
	natsMonitor                string
	skills, cases, runs        int
	kind                       string
	name                       string
	deadline, poll, sampleEach time.Duration
	out                        string
}

// defaultMaxJobsPerRun is the coordinator's --max-jobs-per-run default.
const defaultMaxJobsPerRun = 100_000

func newFleetCommand() *cobra.Command {
	var o fleetOptions
	cmd := &cobra.Command{
		Use:   "fleet --nats URL --workers N --slots S [--job-time D] [--output-bytes B] [--fail-rate F] [--submit --coordinator URL --token T ...]",
		Short: "Simulate a fleet of workers against a real coordinator and NATS, and measure a run through it",
		Long: `fleet runs --workers simulated workers of --slots slots in this process against a real NATS
server and the coordinator that created its topology. Each worker is a worker daemon without
Docker or a model: its own NATS connection (log in as the worker user of
deploy/nats/permissions.conf: --nats-user skillfleet-worker --nats-inbox-prefix
_INBOX_skillfleet_worker), the daemon's claims, heartbeats, result publishing with the job's
secret, acks, bundle fetches and cancellations. Only the executor is simulated: a job waits
--job-time, then its command "exits" 0 (1 for a --fail-rate share of jobs, chosen by --seed
and the job's identity) with --output-bytes of stdout, and the job's own assertions decide
its verdict, so a command case expecting exit code 0 passes unless it was made to fail.
--metrics serves the simulator's /metrics (skillfleet_fleetsim_jobs_total,
skillfleet_fleetsim_busy_slots and every worker's series) and /healthz. SIGINT or SIGTERM
drains like the worker daemon (a second signal stops running jobs) and prints a summary.

With --submit it is also the driver of a measurement: it generates --skills × --cases command
cases of --runs epochs (jobs = skills × cases × runs), bundles them as skillfleet submit
does, submits the suite to --coordinator with --token, follows the run to its end and
reports the jobs, the wall time and jobs/s, the coordinator's peak RSS (its /metrics
process_resident_memory_bytes, read every --sample with --coordinator-metrics-token-file),
the NATS server's peak memory (/varz of --nats-monitor), the time from the newest result
stored to the run's end (finished_at against the results stream's last_ts from
--nats-monitor's /jsz, else against the newest result's finished_at), and checks that every
job has exactly one counted result and the report's failures are the simulator's. --out
appends the figures as a Markdown section to BENCHMARKS.md (make bench keeps what follows
its Go benchmarks section, so appended sections stay). The simulated workers then drain
and the command exits: 0 when the checks hold. --workers 0 drives a fleet simulated
elsewhere.

The coordinator refuses a run of more jobs than its --max-jobs-per-run (default 100,000),
and the jobs of one team's unfinished runs beyond --max-jobs-per-team (twice that): for a
bigger run start it with --max-jobs-per-run raised, and mind its --results-max-bytes (4 GiB
by default) and --max-result-bytes-per-team (an eighth of it): each result keeps up to 64 KiB
of --output-bytes, and a million small results take about 1.1 GiB. For a nightly of a
million jobs:
  coordinator --max-jobs-per-run 1000000 --results-max-bytes 8589934592 --max-result-bytes-per-team 4GiB ...`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(); err != nil {
				return err
			}
			log, err := cmdutil.ConsoleLogger(o.logLevel)
			if err != nil {
				return cmdutil.Usage(err)
			}
			defer func() { _ = log.Sync() }()
			// The first signal drains (and stops following the run); a second stops running
			// jobs at once, as the worker daemon does.
			sigs := make(chan os.Signal, 2)
			signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
			defer signal.Stop(sigs)
			ctx, drain := context.WithCancel(cmd.Context())
			defer drain()
			forced := make(chan struct{})
			go func() {
				if _, ok := <-sigs; !ok {
					return
				}
				log.Info("signal received: draining (send another to stop running jobs now)")
				drain()
				if _, ok := <-sigs; ok {
					close(forced)
				}
			}()
			_, err = runFleet(ctx, o, commandLine(cmd), forced, cmd.OutOrStdout(), cmd.ErrOrStderr(), log)
			return err
		},
	}
	f := cmd.Flags()
	o.nats.Register(f)
	f.IntVar(&o.workers, "workers", 4, "simulated workers, each with its own NATS connection; 0 (with --submit) drives a fleet simulated elsewhere")
	f.IntVar(&o.slots, "slots", 16, "jobs each worker runs at once")
	f.StringVar(&o.idPrefix, "id-prefix", "sim-", "worker ids are this prefix and 0, 1, ...")
	f.DurationVar(&o.jobTime, "job-time", 0, "how long each simulated job takes")
	f.IntVar(&o.outputBytes, "output-bytes", 256, "bytes of stdout of each job (a result keeps up to 64 KiB of it)")
	f.Float64Var(&o.failRate, "fail-rate", 0, "share of jobs whose command exits 1, 0 to 1")
	f.Uint64Var(&o.seed, "seed", 1, "seed of which jobs fail")
	f.StringVar(&o.metricsAddr, "metrics", "", "address of the simulator's /metrics and /healthz; empty serves none")
	f.StringVar(&o.cache, "cache", "", "directory of the workers' bundle caches (default: a temporary directory, removed at exit)")
	f.DurationVar(&o.drainGrace, "drain-grace", 30*time.Second, "how long running jobs may finish once stopped")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")

	f.BoolVar(&o.submit, "submit", false, "also submit a generated suite, follow its run and report the measurement")
	f.StringVar(&o.coordinator, "coordinator", "http://127.0.0.1:8080", "the coordinator's URL (--submit)")
	f.StringVar(&o.token, "token", "", "API bearer token (also $SKILLFLEET_TOKEN)")
	f.StringVar(&o.tokenFile, "token-file", "", "file holding the API bearer token")
	f.StringVar(&o.coordMetrics, "coordinator-metrics", "", "the coordinator's /metrics URL (default: --coordinator's /metrics; set it when the coordinator serves them on its own --metrics address)")
	f.StringVar(&o.coordMetricsTokenFile, "coordinator-metrics-token-file", "", "file whose first line is the bearer token of the coordinator's /metrics")
	f.StringVar(&o.natsMonitor, "nats-monitor", "", "the NATS server's monitoring URL (http://HOST:8222): its memory (/varz) and the results stream's last stored time (/jsz) are measured")
	f.IntVar(&o.skills, "skills", 100, "skills of the generated suite")
	f.IntVar(&o.cases, "cases", 20, "cases per skill")
	f.StringVar(&o.kind, "kind", "command", "kind of the generated cases: command (a file per case) or prompt (a skill's cases in one file, for suites beyond a bundle's 20,000 files)")
	f.IntVar(&o.runs, "runs", 10, fmt.Sprintf("epochs (runs:) of each case, 1 to %d", suite.MaxRuns))
	f.StringVar(&o.name, "name", "fleet-simulator", "suite name of the run")
	f.DurationVar(&o.deadline, "deadline", 0, "the run's deadline (0: the coordinator's default)")
	f.DurationVar(&o.poll, "poll", 100*time.Millisecond, "how often the run's status is read")
	f.DurationVar(&o.sampleEach, "sample", time.Second, "how often the coordinator's and the NATS server's memory are read")
	f.StringVar(&o.out, "out", "", "append the measurement as Markdown to this file (BENCHMARKS.md)")
	return cmd
}

// check refuses flags that cannot work; its errors are usage errors.
func (o fleetOptions) check() error {
	var errs []string
	if o.workers < 0 || (o.workers == 0 && !o.submit) {
		errs = append(errs, "--workers must be at least 1 (or 0 with --submit)")
	}
	if o.slots < 1 {
		errs = append(errs, "--slots must be at least 1")
	}
	if o.failRate < 0 || o.failRate > 1 {
		errs = append(errs, fmt.Sprintf("--fail-rate must be between 0 and 1, got %g", o.failRate))
	}
	if o.jobTime < 0 || o.outputBytes < 0 {
		errs = append(errs, "--job-time and --output-bytes cannot be negative")
	}
	if o.submit {
		if o.skills < 1 || o.cases < 1 || o.runs < 1 || o.runs > suite.MaxRuns {
			errs = append(errs, fmt.Sprintf("--skills and --cases must be at least 1, --runs between 1 and %d", suite.MaxRuns))
		}
		if o.kind != "command" && o.kind != "prompt" {
			errs = append(errs, fmt.Sprintf("--kind must be command or prompt, got %q", o.kind))
		}
		if o.poll <= 0 || o.sampleEach <= 0 {
			errs = append(errs, "--poll and --sample must be positive")
		}
	}
	if len(errs) > 0 {
		return cmdutil.Usage(errors.New(strings.Join(errs, "; ")))
	}
	return nil
}

// fleetRun is what one skillfleet-bench fleet did: the simulator (nil with --workers 0) and,
// with --submit, the measurement.
type fleetRun struct {
	sim *simulator
	m   *measurement
}

// runFleet runs the simulator until ctx ends or, with --submit, until the measured run has
// ended and the workers have drained. A close of forced stops running jobs at once.
func runFleet(ctx context.Context, o fleetOptions, cmdline string, forced <-chan struct{}, stdout, stderr io.Writer, log *zap.Logger) (*fleetRun, error) {
	ncfg, err := o.nats.Config("skillfleet-fleetsim")
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "skillfleet-fleetsim-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	cache := o.cache
	if cache == "" {
		cache = work
	}
	fr := &fleetRun{}
	simDone := make(chan error, 1)
	stopSim := func() {}
	if o.workers > 0 {
		fr.sim, err = startSimulator(ctx, simConfig{
			Workers: o.workers, Slots: o.slots, IDPrefix: o.idPrefix, NATS: ncfg, CacheDir: cache, DrainGrace: o.drainGrace,
			MetricsAddr: o.metricsAddr,
			Exec:        simExecConfig{JobTime: o.jobTime, OutputBytes: o.outputBytes, FailRate: o.failRate, Seed: o.seed, Track: o.submit},
		}, clock.Real{}, log)
		if err != nil {
			return nil, err
		}
		var simCtx context.Context
		simCtx, stopSim = context.WithCancel(ctx)
		defer stopSim()
		go func() { simDone <- fr.sim.run(simCtx) }()
		go func() {
			select {
			case <-forced:
				fr.sim.force()
			case <-simCtx.Done():
			}
		}()
		log.Info("simulated workers running", zap.Int("workers", o.workers), zap.Int("slots", o.slots))
	} else {
		simDone <- nil
	}
	if !o.submit {
		err := <-simDone
		fr.sim.writeSummary(stdout)
		return fr, err
	}

	var exec *simExecutor
	if fr.sim != nil {
		exec = fr.sim.exec
	}
	m, derr := o.drive(ctx, work, stderr, exec)
	stopSim()
	serr := <-simDone
	if fr.sim != nil {
		fr.sim.writeSummary(stdout)
	}
	if derr != nil {
		return fr, errors.Join(derr, serr)
	}
	fr.m = m
	m.writeText(stdout)
	if o.out != "" {
		if err := appendFile(o.out, m.markdown(cmdline, o.workers, o.slots)); err != nil {
			return fr, errors.Join(err, serr)
		}
	}
	return fr, errors.Join(m.check(exec), serr)
}

// drive runs the measurement with the flags' settings.
func (o fleetOptions) drive(ctx context.Context, work string, progress io.Writer, exec *simExecutor) (*measurement, error) {
	token, err := cmdutil.Token(o.token, o.tokenFile, "SKILLFLEET_TOKEN")
	if err != nil {
		return nil, cmdutil.Usage(err)
	}
	metricsToken, err := cmdutil.SecretFile("--coordinator-metrics-token-file", o.coordMetricsTokenFile)
	if err != nil {
		return nil, err
	}
	metrics := o.coordMetrics
	if metrics == "" {
		metrics = strings.TrimRight(o.coordinator, "/") + "/metrics"
	}
	cfg := driveConfig{
		Coordinator: o.coordinator, Token: token, MetricsURL: metrics, MetricsToken: metricsToken, NATSMonitor: o.natsMonitor,
		Skills: o.skills, Cases: o.cases, Runs: o.runs, Kind: o.kind, Name: o.name, Deadline: o.deadline,
		Poll: o.poll, Sample: o.sampleEach, Work: work, Progress: progress,
	}
	m, err := drive(ctx, cfg, coordinator.NewClient(o.coordinator, token, nil), exec)
	if err != nil && cfg.jobs() > defaultMaxJobsPerRun {
		var ae *coordinator.APIError
		if errors.As(err, &ae) && ae.Status == 422 {
			err = fmt.Errorf("%w (a run of %d jobs needs a coordinator started with --max-jobs-per-run of at least %d)", err, cfg.jobs(), cfg.jobs())
		}
	}
	return m, err
}

// secretFlag reports whether a flag's value must never appear in a recorded command line.
func secretFlag(name string) bool {
	switch name {
	case "token", "nats-token", "nats-password":
		return true
	}
	return false
}

// commandLine is the command as given, for the record, secrets left out.
func commandLine(cmd *cobra.Command) string {
	parts := []string{cmd.CommandPath()}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		v := " " + f.Value.String()
		switch {
		case secretFlag(f.Name):
			v = " …"
		case f.Value.Type() == "bool" && v == " true":
			v = ""
		}
		parts = append(parts, "--"+f.Name+v)
	})
	return strings.Join(parts, " ")
}
