package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/flaky"
	"github.com/skillfleet/skillfleet/fleet"
	"github.com/skillfleet/skillfleet/history"
	"github.com/skillfleet/skillfleet/internal/cmdutil"
	"github.com/skillfleet/skillfleet/internal/text"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/sandbox"
	"github.com/skillfleet/skillfleet/suite"
	"github.com/skillfleet/skillfleet/worker"
)

func newTestCommand(e *env) *cobra.Command {
	var (
		f        suiteFlags
		o        outputFlags
		workers  int
		image    string
		warm     int
		logLevel string
		models   cmdutil.ModelFlags
		// workspaceDir, when set, receives the run in the evaluation guide's layout.
		workspaceDir string
		gates        armGates
		// historyTarget is --history: a SQLite file, a postgres:// URL, "off", or "" for the
		// default file under the user's state directory.
		historyTarget string
		suiteName     string
		quarantine    quarantineFlags
		// baselineRun is an earlier run in the history whose results are the baseline.
		baselineRun string
	)
	o.format = "text"
	cmd := &cobra.Command{
		Use:   "test [--workers N] [--format text|json] [--junit FILE] [--html FILE] [--workspace DIR] [--skill GLOB] [--case GLOB] [--kind prompt|command] ROOT...",
		Short: "Run a suite's test cases locally: embedded NATS, a coordinator and N workers in one process",
		Long: `Test validates and plans the suite under the roots, then runs every job in a hardened,
throw-away Docker container through the same coordinator and workers a fleet uses, all in
this process. Progress goes to stderr; the report goes to stdout (and JUnit XML to --junit).

The report starts with what changed since the previous completed run of the same suite
(--suite) in the history, and marks the cases the history labels flaky. With --quarantine
flaky those cases, and with --quarantine-file the cases listed, still run and are reported,
but do not set the exit status.

When the run ends, the history also keeps its report and results (each result up to 1 MiB
compressed with its trajectory, the run up to 256 MiB): skillfleet runs and compare read them
without a coordinator, and --baseline-run RUN compares this run with one of them.

Exit status: 0 every case passed (or is quarantined), 1 a case failed, errored or timed out,
2 invalid input, 3 the run stopped at its cost cap (--max-cost; the report is partial).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, roots []string) error {
			if err := checkFormat(o.format); err != nil {
				return err
			}
			if workers < 1 {
				return usageErrorf("--workers must be at least 1")
			}
			if err := gates.check(f.baseline != "" || baselineRun != ""); err != nil {
				return err
			}
			if f.aa && baselineRun != "" {
				return usageErrorf("--aa compares the with_skill arm with itself: it takes no --baseline-run")
			}
			if err := f.checkReuse(cmd); err != nil {
				return err
			}
			s, p, cfg, limits, err := f.prepare(e, roots, "run")
			defer f.close()
			if err != nil {
				return err
			}
			log, err := cmdutil.ConsoleLogger(logLevel)
			if err != nil {
				return usageErrorf("%v", err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			// The in-process fleet binds the models' rate store to its NATS when it starts.
			rates := &fleet.LateRates{}
			mc := models.ModelsConfig
			mc.RateStore = rates
			ms, err := fleet.BuildModels(mc, cfg, nil, log)
			if err != nil {
				return usageErrorf("%v", err)
			}
			defer func() { _ = ms.Close() }()
			if len(f.agents) == 0 {
				f.agents = ms.Names
			}
			if suiteName == "" {
				suiteName = defaultSuiteName(roots[0])
			}
			hist, err := localHistory(historyTarget, e)
			if err != nil {
				return err
			}
			if f.changedOnly && hist.Target == fleet.HistoryOff {
				return usageErrorf("--changed-only reuses passing runs from the history: --history off has none")
			}
			if baselineRun != "" && hist.Target == fleet.HistoryOff {
				return usageErrorf("--baseline-run reads the earlier run from the history: --history off has none")
			}
			qp, err := quarantine.policy()
			if err != nil {
				return err
			}
			return runLocal(ctx, e, s, p, localOptions{workers: workers, image: image, warm: warm, flags: f, out: o, log: log, limits: limits, models: ms, rates: rates, workspace: workspaceDir, gates: gates,
				suite: suiteName, history: hist, quarantine: qp, baselineRun: baselineRun})
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&f.config, "config", "", "suite configuration (default: skillfleet.yaml in the first ROOT)")
	cmd.Flags().IntVar(&workers, "workers", min(4, 2*runtime.NumCPU()), "workers (jobs run at once)")
	cmd.Flags().StringVar(&o.format, "format", o.format, "report format on stdout: text or json")
	cmd.Flags().StringVar(&o.junit, "junit", "", "also write the report as JUnit XML to this file")
	cmd.Flags().StringVar(&o.html, "html", "", "also write the report as one self-contained HTML file (cases, evidence, transcripts, comparison; no network needed to view it)")
	cmd.Flags().StringVar(&workspaceDir, "workspace", "", "also write each case's outputs, timing.json, grading.json and trajectory to this workspace directory, in the agentskills.io evaluation guide's layout")
	cmd.Flags().StringVar(&image, "image", sandbox.DefaultImage, "sandbox image")
	cmd.Flags().IntVar(&warm, "warm-pool", 2, "containers kept started ahead of jobs; 0 disables")
	cmd.Flags().StringVar(&logLevel, "log-level", "warn", "log level of the embedded fleet (logs go to stderr)")
	cmd.Flags().StringVar(&historyTarget, "history", "", "keep every result in this history: a SQLite file, a postgres:// URL (password from $SKILLFLEET_HISTORY_PASSWORD), or off (default: skillfleet/history.db under $XDG_STATE_HOME or ~/.local/state)")
	cmd.Flags().StringVar(&suiteName, "suite", "", "the suite name runs of this suite share in the history (default: the first ROOT's directory name)")
	models.Register(cmd.Flags())
	gates.register(cmd)
	quarantine.register(cmd)
	cmd.Flags().StringVar(&baselineRun, "baseline-run", "", "compare this run against an earlier run of the same suite in the history (--history), whose results stand for the baseline arm instead of running it again (refused when anything but the skills' own files differs)")
	return cmd
}

// defaultSuiteName is the name of the root's directory, resolved so that "." names it too.
func defaultSuiteName(root string) string {
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	return filepath.Base(filepath.Clean(root))
}

// localHistory resolves --history for a local run. The default file is a convenience: when
// its directory cannot be made (a read-only home) the run goes on without history, said on
// stderr; a history asked for by name must open.
func localHistory(target string, e *env) (fleet.HistoryConfig, error) {
	if err := fleet.RefuseHistoryPassword(target, "$SKILLFLEET_HISTORY_PASSWORD"); err != nil {
		return fleet.HistoryConfig{}, usageErrorf("%v", err)
	}
	if target != "" {
		pw := ""
		if history.IsPostgres(target) {
			pw = os.Getenv("SKILLFLEET_HISTORY_PASSWORD")
		}
		return fleet.HistoryConfig{Target: target, Password: pw}, nil
	}
	path, err := fleet.DefaultLocalHistory()
	if err == nil {
		err = os.MkdirAll(filepath.Dir(path), 0o700)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "history off: %v (set --history PATH, or --history off)\n", err)
		return fleet.HistoryConfig{Target: fleet.HistoryOff}, nil
	}
	return fleet.HistoryConfig{Target: path}, nil
}

type localOptions struct {
	workers int
	image   string
	warm    int
	flags   suiteFlags
	out     outputFlags
	log     *zap.Logger
	limits  *pb.Limits
	// models run prompt cases; none: they are errored ("no agent configured").
	models fleet.Models
	// rates is the models' rate store, bound to the in-process fleet's NATS.
	rates *fleet.LateRates
	// workspace, when set, receives the run in the evaluation guide's layout.
	workspace string
	// gates are --fail-if-worse and --fail-unless-better (with --baseline).
	gates armGates
	// suite is the run's suite name (RunSpec.name); history keeps the run under it.
	suite   string
	history fleet.HistoryConfig
	// quarantine is applied by the in-process coordinator to the run's report.
	quarantine flaky.Policy
	// baselineRun, when set, is the run of the history the finished run is compared with.
	baselineRun string
}

func runLocal(ctx context.Context, e *env, s *suite.Suite, p *suite.Plan, o localOptions) error {
	// A unique id per process: the reaper removes a previous incarnation's containers by id,
	// and two local runs on one machine must not reap each other.
	host, _ := os.Hostname()
	sandboxes, err := fleet.StartSandboxes(ctx, fleet.SandboxConfig{
		Runner: sandbox.Config{Image: o.image, WorkerID: fmt.Sprintf("local-%s-%d", host, os.Getpid()), WarmPool: o.warm},
	}, o.log, nil)
	if err != nil {
		var missing *sandbox.ImageMissingError
		if errors.As(err, &missing) {
			return failf("%v", missing)
		}
		return failf("%v", err)
	}
	defer func() { _ = sandboxes.Close(context.WithoutCancel(ctx)) }()
	// The agents the workers were configured with are the names a run may ask for: a
	// misspelt --agent is refused before anything runs.
	known := slices.Sorted(maps.Keys(o.models.Agents))
	f, err := fleet.StartInProcess(ctx, fleet.InProcessConfig{
		Workers: o.workers, Slots: 1, Log: o.log, Coordinator: coordinator.Config{KnownAgents: known}, History: o.history,
		Quarantine: o.quarantine, Executor: sandboxes.Executor(o.models, o.log), Rates: o.rates,
		Worker: worker.Config{AgentDigests: o.models.AgentDigests(o.image, sandboxes.Runner.ImageID())},
	})
	if err != nil {
		return failf("%v", err)
	}
	defer f.Close(context.WithoutCancel(ctx))
	if o.baselineRun != "" {
		// Checked before anything runs: a run the history does not keep cannot be compared with.
		if _, err := f.History.Store.ArchivedRun(ctx, o.baselineRun); err != nil {
			return failf("--baseline-run %s: %v", o.baselineRun, err)
		}
	}

	bundle, err := os.CreateTemp("", "skillfleet-bundle-*.tar")
	if err != nil {
		return failf("%v", err)
	}
	defer os.Remove(bundle.Name())
	defer bundle.Close()
	if _, err := suite.WriteBundleWith(bundle, s.Graph, s.Select(o.flags.options().Filter), o.flags.base.Old); err != nil {
		return failf("bundle: %v", err)
	}
	if err := bundle.Close(); err != nil {
		return failf("bundle: %v", err)
	}
	// Planned once, here: the in-process coordinator takes the plan and its bundle as they are.
	spec := &pb.RunSpec{
		Name: o.suite, SkillGlobs: o.flags.skills, CaseGlobs: o.flags.cases, CaseKinds: o.flags.kinds, Agents: o.flags.agents, Limits: o.limits,
		MaxTokens: o.flags.maxTokens, MaxCost: o.flags.maxCost, Baseline: string(p.Baseline),
	}
	if o.flags.changedOnly {
		spec.ChangedOnly, spec.ReuseWithinMs = true, o.flags.reuseWithin.Milliseconds()
	}
	st, err := f.Coordinator.SubmitPlanned(ctx, coordinator.Planned{Suite: s, Plan: p, Bundle: bundle.Name()}, spec)
	if err != nil {
		return failf("%v", err)
	}
	fmt.Fprintf(e.stderr, "run %s: %s over %s\n", st.GetId(), text.Count(int(st.GetTotalJobs()), "job", "jobs"), text.Count(o.workers, "worker", "workers"))
	cmp := runComparison{minEffect: o.flags.minEffect}
	switch {
	case o.baselineRun != "":
		o.out.compare = cmp.runs(ctx, localRuns{f.History.Store}, o.baselineRun, inProcessRuns{f.Coordinator}, st)
	case p.Baseline != "":
		o.out.compare = cmp.arms(ctx, localResults(f.Coordinator), st.GetId(), string(p.Baseline), st.GetSpec())
	}
	if o.out.html != "" {
		o.out.results = func(fn func(*pb.Result) error) error { return localResults(f.Coordinator)(ctx, st.GetId(), fn) }
	}
	err = cmp.gate(o.gates, follow(ctx, e, f.Coordinator, st, inProcessPolicy(), o.out))
	archiveRun(ctx, e, f, st.GetId())
	if o.workspace != "" && ctx.Err() == nil {
		n, werr := exportWorkspace(ctx, localResults(f.Coordinator), st.GetId(), o.workspace)
		if werr != nil {
			return failf("%v", werr)
		}
		fmt.Fprintf(e.stderr, "workspace: %s written to %s\n", text.Count(n, "job", "jobs"), o.workspace)
	}
	return err
}

// archiveRun keeps the finished run's status, report and results in the history, so that
// runs, compare and --baseline-run read it later without a coordinator. A history that cannot
// keep it is said on stderr; the run's outcome stands.
func archiveRun(ctx context.Context, e *env, f *fleet.InProcess, id string) {
	if f.History == nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	if st, err := f.Coordinator.Status(ctx, id); err != nil || st.GetState() == pb.RunState_RUN_STATE_PENDING || st.GetState() == pb.RunState_RUN_STATE_RUNNING {
		return
	}
	stats, err := f.ArchiveRun(ctx, id, history.ArchiveLimits{})
	if err != nil {
		fmt.Fprintf(e.stderr, "history: run %s: its report and results were not kept: %v\n", id, err)
		return
	}
	fmt.Fprintf(e.stderr, "history: run %s kept (%s, %s compressed)", id, text.Count(stats.Results, "result", "results"), byteSize(stats.Bytes))
	if stats.Trimmed > 0 {
		fmt.Fprintf(e.stderr, "; %d kept without their trajectory (over %s each)", stats.Trimmed, byteSize(history.DefaultMaxArchivedResult))
	}
	if stats.Omitted > 0 {
		fmt.Fprintf(e.stderr, "; %d not kept (over %s in all)", stats.Omitted, byteSize(history.DefaultMaxArchivedRun))
	}
	fmt.Fprintln(e.stderr)
}

// byteSize is n in KiB or MiB, for a line on stderr.
func byteSize(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
