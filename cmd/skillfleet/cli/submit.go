package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/cmdutil"
	"github.com/skillfleet/skillfleet/internal/text"
	"github.com/skillfleet/skillfleet/suite"
)

// remoteFlags name a coordinator and how to authenticate to it; for the commands that read
// runs (registerOrLocal), the local history to read instead when no coordinator is named.
type remoteFlags struct {
	url, token, tokenFile string
	history               string
	// team is --team, of the commands that take it (registerTeam).
	team string
}

// registerTeam registers --team: the team an admin acts in.
func (r *remoteFlags) registerTeam(fs *pflag.FlagSet) {
	fs.StringVar(&r.team, "team", "", "act in this team (an admin's token only; others act in their own team)")
}

// defaultCoordinator is the coordinator of commands that need one and were not told which.
const defaultCoordinator = "http://127.0.0.1:8080"

func (r *remoteFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&r.url, "coordinator", defaultCoordinator, "coordinator URL (also $SKILLFLEET_COORDINATOR)")
	r.registerToken(fs)
}

func (r *remoteFlags) registerToken(fs *pflag.FlagSet) {
	fs.StringVar(&r.token, "token", "", "bearer token (also $SKILLFLEET_TOKEN)")
	fs.StringVar(&r.tokenFile, "token-file", "", "file holding the bearer token")
}

// registerOrLocal registers the flags of a command that reads runs from a coordinator when
// one is named, else from the local history (reader).
func (r *remoteFlags) registerOrLocal(fs *pflag.FlagSet) {
	fs.StringVar(&r.url, "coordinator", "", "coordinator URL (also $SKILLFLEET_COORDINATOR); without one, runs are read from the local history (--history)")
	r.registerToken(fs)
	fs.StringVar(&r.history, "history", "", "without a coordinator, the history skillfleet test wrote: a SQLite file or a postgres:// URL (password from $SKILLFLEET_HISTORY_PASSWORD) (default: skillfleet/history.db under $XDG_STATE_HOME or ~/.local/state)")
}

func (r *remoteFlags) client(cmd *cobra.Command) (*coordinator.Client, error) {
	token, err := cmdutil.Token(r.token, r.tokenFile, "SKILLFLEET_TOKEN")
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	url := r.url
	if !cmd.Flags().Changed("coordinator") {
		if v := os.Getenv("SKILLFLEET_COORDINATOR"); v != "" {
			url = v
		}
	}
	if url == "" {
		url = defaultCoordinator
	}
	c := coordinator.NewClient(url, token, nil)
	c.Team = r.team
	return c, nil
}

// apiFailure turns a coordinator error into the CLI's: diagnostics printed, exit 2 for a suite
// the coordinator refused, 1 otherwise.
func apiFailure(e *env, err error) error {
	var ae *coordinator.APIError
	if errors.As(err, &ae) {
		for _, d := range ae.Diagnostics {
			fmt.Fprintln(e.stderr, d.String())
		}
		if ae.Status == 422 || ae.Status == 400 {
			return &exitError{code: ExitUsage, err: err}
		}
	}
	if usageLookup(err) {
		return &exitError{code: ExitUsage, err: err}
	}
	return failf("%v", err)
}

func newSubmitCommand(e *env) *cobra.Command {
	var (
		f         suiteFlags
		o         outputFlags
		r         remoteFlags
		followRun bool
		name      string
		scheduled bool
		deadline  time.Duration
		gates     armGates
		// baselineRun is an earlier run whose results are the baseline (--baseline-run).
		baselineRun string
		quarantine  quarantineFlags
	)
	o.format = "text"
	cmd := &cobra.Command{
		Use:   "submit --coordinator URL [--token T] [--follow] [--format text|json] [--junit FILE] ROOT...",
		Short: "Validate a suite locally and run it on a fleet",
		Long: `Submit validates and plans the suite here (errors stop it before anything is uploaded),
uploads it as a bundle to the coordinator and prints the run id. With --follow it shows
progress until the run ends and prints the report.

Exit status without --follow: 0 submitted, 1 failure, 2 invalid input. With --follow:
0 every case passed, 1 a case failed, errored or timed out, 2 invalid input, 3 the run stopped
at its cost cap (--max-cost; the report is partial).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, roots []string) error {
			if err := gates.check(f.baseline != "" || baselineRun != ""); err != nil {
				return err
			}
			if f.aa && baselineRun != "" {
				return usageErrorf("--aa compares the with_skill arm with itself: it takes no --baseline-run")
			}
			if err := f.checkReuse(cmd); err != nil {
				return err
			}
			if baselineRun != "" && !followRun {
				return usageErrorf("--baseline-run needs --follow: the comparison is made when the run ends")
			}
			if err := checkFormat(o.format); err != nil {
				return err
			}
			if o.junit != "" && !followRun {
				return usageErrorf("--junit needs --follow: the report exists only when the run ends")
			}
			client, err := r.client(cmd)
			if err != nil {
				return err
			}
			qp, err := quarantine.policy()
			if err != nil {
				return err
			}
			if (qp.Flaky || len(qp.Cells) > 0) && !followRun {
				return usageErrorf("--quarantine and --quarantine-file need --follow: they decide the exit status of the finished run")
			}
			s, p, cfg, limits, err := f.prepare(e, roots, "submitted")
			defer f.close()
			if err != nil {
				return err
			}
			for _, j := range p.Jobs {
				if c := j.Case; c.OutsideSkill() {
					return usageErrorf("%s:%d: case %s/%s is in its plugin's evals/, outside the skill's directory, and the fleet plans from a bundle of the skills' directories alone: run it with skillfleet test, or move the case into %s",
						c.File, c.Line, c.Skill.Name, c.Name, filepath.Join(c.Skill.Dir, "evals"))
				}
			}
			if len(f.agents) == 0 && cfg != nil {
				// Agent names only: the fleet's workers hold the endpoints and keys.
				for _, a := range cfg.Agents {
					f.agents = append(f.agents, a.Name)
				}
			}
			var bundle bytes.Buffer
			// An old_skill baseline's previous versions travel in the bundle: the coordinator
			// plans the run again from the bundle alone.
			if _, err := suite.WriteBundleWith(&bundle, s.Graph, s.Select(f.options().Filter), f.base.Old); err != nil {
				return failf("bundle: %v", err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if name == "" {
				// As test names its runs' suite: a run without a name would share suite "" in
				// the fleet's history with every other unnamed run, whatever it tested.
				name = defaultSuiteName(roots[0])
			}
			st, err := client.Submit(ctx, &bundle, coordinator.SubmitOptions{
				Name: name, Skills: f.skills, Cases: f.cases, Kinds: f.kinds, Agents: f.agents, Scheduled: scheduled, Deadline: deadline,
				Limits: limits, MaxTokens: f.maxTokens, MaxCost: f.maxCost, Baseline: string(p.Baseline),
				ChangedOnly: f.changedOnly, ReuseWithin: f.reuseWithin,
			})
			if err != nil {
				return apiFailure(e, err)
			}
			if !followRun {
				if o.format == "json" {
					return writeJSON(e.stdout, map[string]any{"run": st.GetId(), "jobs": st.GetTotalJobs(), "state": st.GetState().String()})
				}
				fmt.Fprintln(e.stdout, st.GetId())
				return nil
			}
			fmt.Fprintf(e.stderr, "run %s: %s\n", st.GetId(), text.Count(int(st.GetTotalJobs()), "job", "jobs"))
			o.quarantine = quarantineReport(qp, st.GetSpec().GetName())
			cmp := runComparison{minEffect: f.minEffect}
			switch {
			case baselineRun != "":
				o.compare = cmp.runs(ctx, remoteRuns{client}, baselineRun, remoteRuns{client}, st)
			case p.Baseline != "":
				o.compare = cmp.arms(ctx, remoteRuns{client}.Verdicts, st.GetId(), string(p.Baseline), st.GetSpec())
			}
			return cmp.gate(gates, follow(ctx, e, remoteRuns{client}, st, remotePolicy(), o))
		},
	}
	gates.register(cmd)
	quarantine.register(cmd)
	cmd.Flags().StringVar(&baselineRun, "baseline-run", "", "with --follow: compare this run against an earlier run of the same suite, whose results stand for the baseline arm instead of running it again (refused when anything but the skills' own files differs)")
	f.register(cmd)
	cmd.Flags().StringVar(&f.config, "config", "", "suite configuration (default: skillfleet.yaml in the first ROOT)")
	r.register(cmd.Flags())
	cmd.Flags().BoolVar(&followRun, "follow", false, "wait for the run, showing progress, then print the report")
	cmd.Flags().StringVar(&o.format, "format", o.format, "output format: text or json")
	cmd.Flags().StringVar(&o.junit, "junit", "", "with --follow, also write the report as JUnit XML to this file")
	cmd.Flags().StringVar(&name, "name", "", "a name for the run, the suite its history keeps it under (default: the first ROOT's directory name)")
	cmd.Flags().BoolVar(&scheduled, "scheduled", false, "queue in the scheduled lane (behind on-demand runs), as nightly suites do")
	cmd.Flags().DurationVar(&deadline, "deadline", 0, "cancel the run if it has not finished after this long (default: the coordinator's)")
	return cmd
}
