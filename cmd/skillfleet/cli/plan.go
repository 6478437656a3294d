package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/skillfleet/skillfleet/config"
	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/internal/text"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/stats"
	"github.com/skillfleet/skillfleet/suite"
)

// planDoc is `plan --format json`. The command writes its jobs as it makes them (planJobs)
// rather than holding them here: a plan of 100,000 jobs would hold tens of megabytes of them.
type planDoc struct {
	SuiteDigest string           `json:"suite_digest"`
	Jobs        []planJob        `json:"jobs"`
	Diagnostics diag.Diagnostics `json:"diagnostics"`
	// Power is, with --baseline, the estimate of the comparison's design (see planPower).
	Power *planPower `json:"power,omitempty"`
}

type planJob struct {
	ID        string `json:"id"`
	Skill     string `json:"skill"`
	Case      string `json:"case"`
	Kind      string `json:"kind"`
	Epoch     int    `json:"epoch"`
	TimeoutMS int64  `json:"timeout_ms"`
	Parallel  bool   `json:"parallel"`
	Agent     string `json:"agent,omitempty"`
	// Arm is set on a baseline job only: with_skill jobs render as they did before arms.
	Arm string `json:"arm,omitempty"`
	// ReuseFrom (plan --changed-only) is the run whose pass a changed-only run would offer the
	// job; "" for a job that would run.
	ReuseFrom string `json:"reuse_from,omitempty"`
}

// planJobs makes the plan's jobs as the command prints them, one at a time.
type planJobs struct {
	jobs []suite.Job
	// reuseFrom (plan --changed-only) is, per job, the run a changed-only run would offer it.
	reuseFrom []string
}

func (js planJobs) len() int { return len(js.jobs) }

func (js planJobs) at(i int) planJob {
	j := js.jobs[i]
	pj := planJob{
		ID: j.ID, Skill: j.Case.Skill.Name, Case: j.Case.Name, Kind: string(j.Case.Kind),
		Epoch: j.Epoch, TimeoutMS: j.Case.Timeout.Milliseconds(), Parallel: j.Case.Parallel, Agent: j.Agent,
	}
	if j.Arm != suite.ArmWithSkill {
		pj.Arm = string(j.Arm)
	}
	if js.reuseFrom != nil {
		pj.ReuseFrom = js.reuseFrom[i]
	}
	return pj
}

// suiteFlags are the selection flags plan, test and submit share.
type suiteFlags struct {
	skills, cases, agents []string
	kinds                 []string
	force                 bool
	config                string
	maxTokens             int64
	// baseline is the --baseline value; base what it resolved to, tmp the directory an old
	// root at a git revision was written to.
	baseline string
	base     suite.Baseline
	tmp      string
	// changedOnly reuses the passing verdicts of cells unchanged within reuseWithin.
	changedOnly bool
	reuseWithin time.Duration
	// aa runs the with_skill arm twice (arms a and a2), to measure the suite's noise floor.
	aa bool
	// maxCost is the run's cost cap in US dollars (--max-cost); 0 none.
	maxCost float64
	// minEffect is the difference a baseline comparison should be able to detect; a design
	// that cannot is reported underpowered.
	minEffect float64
}

func (f *suiteFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.skills, "skill", nil, "only skills whose name matches this glob (repeatable)")
	cmd.Flags().StringArrayVar(&f.cases, "case", nil, "only cases whose name matches this glob (repeatable)")
	cmd.Flags().BoolVar(&f.force, "force", false, "report missing dependencies as warnings")
	cmd.Flags().Int64Var(&f.maxTokens, "max-tokens", 0, "model tokens the whole run may spend (test, submit), both arms of a run with --baseline; 0: no budget")
	cmd.Flags().StringVar(&f.baseline, "baseline", "", baselineHelp)
	cmd.Flags().Float64Var(&f.maxCost, "max-cost", 0, "US dollars the whole run may spend on models (agents and judge, priced; test, submit): once its spend plus what its jobs in flight are expected to spend reaches it, nothing more is dispatched, running jobs are cancelled, unfinished cases are skipped and the run exits 3 with a partial report; 0: no cap")
	cmd.Flags().BoolVar(&f.aa, "aa", false, "an A/A run: run every case twice, interleaved, in two identical arms (a, the with_skill arm, and a2), and report per case whether they agree, the suite's flip rate and the smallest difference a --baseline comparison of its size could detect")
	cmd.Flags().Float64Var(&f.minEffect, "min-effect", stats.DefaultMinEffect, "with --baseline: the difference in pass rate (a fraction) the comparison should be able to detect at 80% power; a design that cannot is reported underpowered")
	cmd.Flags().StringArrayVar(&f.agents, "agent", nil, "run prompt cases against this agent (repeatable; a report row per agent)")
	cmd.Flags().StringArrayVar(&f.kinds, "kind", nil, "only cases of this kind: prompt or command (repeatable)")
	cmd.Flags().BoolVar(&f.changedOnly, "changed-only", false, "run only the cells whose digest (the case, its skill's files and its requires closure, the agent's configuration, the judge, the limits) changed since a passing run of this suite within --reuse-within; the others are reported reused, with the run they came from, and never counted as fresh passes (plan: show what would run)")
	cmd.Flags().DurationVar(&f.reuseWithin, "reuse-within", coordinator.DefaultReuseWithin, "with --changed-only: how old a passing run may be to be reused")
}

// checkReuse refuses a reuse window that is not positive or comes without --changed-only.
func (f *suiteFlags) checkReuse(cmd *cobra.Command) error {
	if cmd.Flags().Changed("reuse-within") && (!f.changedOnly || f.reuseWithin <= 0) {
		return usageErrorf("--reuse-within must be a positive duration and needs --changed-only")
	}
	return nil
}

// prepare loads, validates and plans the suite and reads its configuration, for test and
// submit: a suite with errors, no matching case or a bad configuration is a usage error, and
// nothing is run (or submitted, as what says).
func (f *suiteFlags) prepare(e *env, roots []string, what string) (*suite.Suite, *suite.Plan, *config.Settings, *pb.Limits, error) {
	s, p, err := loadAndPlan(roots, f)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if s.Diagnostics.HasErrors() {
		for _, d := range s.Diagnostics {
			fmt.Fprintln(e.stderr, d.String())
		}
		return nil, nil, nil, nil, &exitError{code: ExitUsage, err: fmt.Errorf("the suite has %s; nothing was %s", text.Count(s.Diagnostics.Errors(), "error", "errors"), what)}
	}
	if len(p.Jobs) == 0 {
		return nil, nil, nil, nil, usageErrorf("no test cases matched")
	}
	cfg, limits, err := f.suiteConfig(e, roots)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return s, p, cfg, limits, nil
}

// suiteConfig reads skillfleet.yaml: the --config file, else the first root's. It returns the
// file (nil when there is none) and the sandbox limits it asks for; its errors are usage
// errors. Agent endpoints are accepted only from --config: a file found inside a suite came
// with the suite, which is untrusted, and could send a key to any host.
func (f *suiteFlags) suiteConfig(e *env, roots []string) (*config.Settings, *pb.Limits, error) {
	path := f.config
	if path == "" {
		path = config.Find(roots)
	}
	if path == "" {
		return nil, nil, nil
	}
	cfg, limits, diags := config.Load(path)
	if diags.HasErrors() {
		for _, d := range diags {
			fmt.Fprintln(e.stderr, d.String())
		}
		return nil, nil, &exitError{code: ExitUsage, err: fmt.Errorf("%s has errors; nothing was run", path)}
	}
	if f.config == "" && cfg.HasEndpoints() {
		return nil, nil, usageErrorf("%s configures agent endpoints, which are taken only from a file you pass with --config: a suite's own file could send your API key anywhere", path)
	}
	return cfg, limits, nil
}

func (f *suiteFlags) options() suite.PlanOptions {
	return suite.PlanOptions{Filter: suite.Filter{Skills: f.skills, Cases: f.cases, Kinds: suite.Kinds(f.kinds)}, Agents: f.agents, Baseline: f.base}
}

// loadAndPlan loads a suite and plans it; a bad glob is a usage error.
func loadAndPlan(roots []string, f *suiteFlags) (*suite.Suite, *suite.Plan, error) {
	if err := f.options().Filter.Validate(); err != nil {
		return nil, nil, usageErrorf("%v", err)
	}
	if err := f.resolveBaseline(roots); err != nil {
		return nil, nil, err
	}
	s := suite.Load(roots, skill.Options{Force: f.force})
	if s.Diagnostics.HasErrors() {
		return s, nil, nil
	}
	p, err := s.Plan(f.options())
	if err != nil {
		return s, nil, failf("plan: %v", err)
	}
	// The plan's warnings (a skill the baseline lacks) are the suite's to show.
	s.Diagnostics = append(s.Diagnostics, p.Diagnostics...)
	s.Diagnostics.Sort()
	return s, p, nil
}

func newPlanCommand(e *env) *cobra.Command {
	var (
		f                        suiteFlags
		historyTarget, suiteName string
	)
	format := "text"
	cmd := &cobra.Command{
		Use:   "plan [--format text|json] [--skill GLOB] [--case GLOB] [--kind prompt|command] ROOT...",
		Short: "Expand a suite's test cases into the jobs a run would execute",
		Long: `Plan loads every skill under the roots, validates the skills, their requires and
their test-case files (RFC prompt cases, evals/evals.json evals as prompt cases named
eval-<id>, and tests/cases/*.yaml command cases), and lists the jobs: one per case and epoch
(runs), with a stable id, the timeout and the parallel flag.

Exit status: 0 no errors, 1 errors found, 2 usage error.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, roots []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			if err := f.checkReuse(cmd); err != nil {
				return err
			}
			s, p, err := loadAndPlan(roots, &f)
			defer f.close()
			if err != nil {
				return err
			}
			var reuseFrom []string
			if f.changedOnly && p != nil && !s.Diagnostics.HasErrors() {
				if suiteName == "" {
					suiteName = defaultSuiteName(roots[0])
				}
				if p, reuseFrom, err = reusePlan(cmd.Context(), e, roots, &f, s, p, historyTarget, suiteName); err != nil {
					return err
				}
			}
			doc := planDoc{Diagnostics: s.Diagnostics}
			if doc.Diagnostics == nil {
				doc.Diagnostics = diag.Diagnostics{}
			}
			jobs := planJobs{reuseFrom: reuseFrom}
			if p != nil {
				doc.SuiteDigest = p.SuiteDigest
				jobs.jobs = p.Jobs
			}
			if suiteName == "" {
				suiteName = defaultSuiteName(roots[0])
			}
			if p != nil && p.Baseline != "" && p.Baseline != suite.ArmA2 {
				// Before any token is spent: could this comparison see --min-effect at all?
				rates, err := historyRates(cmd.Context(), e, historyTarget, suiteName)
				if err != nil {
					return err
				}
				pp := estimatePower(p, rates, f.minEffect)
				doc.Power = &pp
			}
			if format == "json" {
				if err := writePlanJSON(e.stdout, doc, jobs); err != nil {
					return err
				}
			} else {
				for _, d := range s.Diagnostics {
					fmt.Fprintln(e.stdout, d.String())
				}
				for i := range jobs.len() {
					j := jobs.at(i)
					par := ""
					if !j.Parallel {
						par = "  serial"
					}
					arm := ""
					if j.Arm != "" {
						arm = " [" + j.Arm + "]"
					}
					if j.Agent != "" {
						arm += " (" + j.Agent + ")"
					}
					if j.ReuseFrom != "" {
						par += "  reuse " + j.ReuseFrom
					}
					fmt.Fprintf(e.stdout, "%s  %-8s %s/%s%s #%d  %ds%s\n", j.ID, j.Kind, j.Skill, j.Case, arm, j.Epoch, j.TimeoutMS/1000, par)
				}
				count := text.Count(jobs.len(), "job", "jobs")
				if p != nil && p.Baseline != "" {
					count += fmt.Sprintf(" (%d %s, %d %s)", p.JobsOf(suite.ArmWithSkill), suite.ArmWithSkill, p.JobsOf(p.Baseline), p.Baseline)
				}
				line := fmt.Sprintf("%s, %s, %s", count,
					text.Count(s.Diagnostics.Errors(), "error", "errors"), text.Count(s.Diagnostics.Warnings(), "warning", "warnings"))
				if doc.SuiteDigest != "" {
					line += "; suite " + doc.SuiteDigest
				}
				fmt.Fprintln(e.stdout, line)
				if reuseFrom != nil {
					fmt.Fprintln(e.stdout, reuseSummary(reuseFrom))
				}
				if doc.Power != nil {
					doc.Power.write(e.stdout, suiteName)
				}
			}
			if s.Diagnostics.HasErrors() {
				return errorsFound()
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&format, "format", format, "output format: text or json")
	cmd.Flags().StringVar(&f.config, "config", "", "with --changed-only: the suite configuration whose agents and limits a run would use (default: skillfleet.yaml in the first ROOT)")
	cmd.Flags().StringVar(&historyTarget, "history", "", "with --changed-only or --baseline: the history to look in (as for test; --baseline estimates the comparison's noise from it)")
	cmd.Flags().StringVar(&suiteName, "suite", "", "with --changed-only or --baseline: the suite name (default: the first ROOT's directory name)")
	return cmd
}
