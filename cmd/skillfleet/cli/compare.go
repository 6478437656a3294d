package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/skillfleet/skillfleet/comparison"
	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/cmdutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	runreport "github.com/skillfleet/skillfleet/report"
	"github.com/skillfleet/skillfleet/stats"
	"github.com/skillfleet/skillfleet/suite"
	"github.com/skillfleet/skillfleet/workspace"
)

func newCompareCommand(e *env) *cobra.Command {
	var (
		r           remoteFlags
		format      = "text"
		failIfWorse bool
		seed        uint64
		arm         = "with_skill"
		minEffect   = stats.DefaultMinEffect
	)
	cmd := &cobra.Command{
		Use:   "compare RUN_A RUN_B [--format text|json|junit] [--fail-if-worse]",
		Short: "Compare two runs of a suite (on a coordinator, or in the local history): per skill, is B better or worse than A?",
		Long: `Compare pairs the cases of two runs (the results their reports count) and says, per skill,
both pass rates, the difference (B minus A) with its 95% interval, the p-value after Holm's
adjustment across the skills, and whether the difference is significant; then which cases
newly fail, were fixed, still fail, are new or removed. Errored and timed-out epochs are left
out and counted, never taken as passes.

The runs must differ only in the skills' own files: a different agent, model, judge, case
definition or limits makes the comparison meaningless, and it is refused with the keys that
differ.

The runs are read from the coordinator --coordinator (or $SKILLFLEET_COORDINATOR) names:
a finished run from the records the coordinator stored when it finished (a few bytes a
result), else from its results; without a coordinator, from the local history skillfleet
test keeps (--history).

Exit status: 0 compared, 1 with --fail-if-worse when B is significantly worse than A on a
skill (or the coordinator failed), 2 refused or bad usage.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch format {
			case "text", "json", "junit":
			default:
				return usageErrorf("unknown --format %q (want text, json or junit)", format)
			}
			client, done, err := r.reader(cmd)
			if err != nil {
				return err
			}
			defer done()
			cmdutil.LimitMemoryForComparison()
			var sides [2]comparison.Side
			for i, id := range args {
				side, st, err := runSide(cmd.Context(), client, id, arm)
				if err != nil {
					return apiFailure(e, err)
				}
				sides[i] = side
				if st.GetState() == pb.RunState_RUN_STATE_PENDING || st.GetState() == pb.RunState_RUN_STATE_RUNNING {
					fmt.Fprintf(e.stderr, "skillfleet: run %s is still %s: comparing the results it has so far\n", id, stateName(st.GetState()))
				}
			}
			if minEffect <= 0 || minEffect > 1 {
				return usageErrorf("--min-effect must be a fraction in (0, 1], got %v", minEffect)
			}
			rep, err := comparison.Compare(sides[0], sides[1], comparison.Options{Axis: comparison.AxisSkill, Seed: seed, MinEffect: minEffect})
			var refused *comparison.RefusalError
			if errors.As(err, &refused) {
				return &exitError{code: ExitUsage, err: err}
			}
			if err != nil {
				return failf("%v", err)
			}
			switch format {
			case "json":
				err = rep.WriteJSON(e.stdout)
			case "junit":
				err = rep.WriteJUnit(e.stdout)
			default:
				err = rep.WriteText(e.stdout)
			}
			if err != nil {
				return failf("%v", err)
			}
			if failIfWorse {
				if err := comparison.FailIfWorse(rep); err != nil {
					return failf("%v", err)
				}
			}
			return nil
		},
	}
	r.registerOrLocal(cmd.Flags())
	cmd.Flags().StringVar(&arm, "arm", arm, "the arm of each run to compare: with_skill, without_skill or old_skill")
	cmd.Flags().StringVar(&format, "format", format, "output format: text, json or junit")
	cmd.Flags().BoolVar(&failIfWorse, "fail-if-worse", false, "exit 1 when B is significantly worse than A on any skill")
	cmd.Flags().Float64Var(&minEffect, "min-effect", minEffect, "the difference in pass rate (a fraction) the comparison should be able to detect at 80% power; a skill whose design cannot is marked underpowered")
	cmd.Flags().Uint64Var(&seed, "seed", 0, "seed of the resampling methods (the same seed gives the same intervals)")
	return cmd
}

// comparedResults reads a run's counted results once, keeping of each arm asked for only what
// a comparison reads (comparison.Records): a run of many cases would otherwise hold every
// output and trajectory in memory.
func comparedResults(ctx context.Context, src resultSource, id string, arms ...string) (map[string][]comparison.Record, error) {
	kept := make(map[string]*comparison.Records, len(arms))
	for _, a := range arms {
		kept[a] = &comparison.Records{}
	}
	err := src(ctx, id, func(r *pb.Result) error {
		if rs := kept[workspace.ArmOf(r)]; rs != nil {
			rs.Add(r)
		}
		return nil
	})
	out := make(map[string][]comparison.Record, len(arms))
	for a, rs := range kept {
		out[a] = rs.List()
	}
	return out, err
}

// sideReader is what a comparison reads of a run: a coordinator's (*coordinator.Client), the
// local history's (localRuns) or the in-process coordinator's (inProcessRuns).
type sideReader interface {
	Status(ctx context.Context, id string) (*pb.RunStatus, error)
	// Verdicts calls fn with each result the run's report counts; its documents (trajectory,
	// output files) may be left out, since a comparison reads none of them.
	Verdicts(ctx context.Context, id string, fn func(*pb.Result) error) error
}

// recordsReader serves a finished run's stored records (a coordinator: GET
// /v1/runs/{id}/records).
type recordsReader interface {
	Records(ctx context.Context, id, arm string, lim comparison.ReadLimits) ([]comparison.Record, error)
}

// runSide is one arm of a run, as one side of a comparison, with the run's status: from the
// run's stored records when its reader has them, else from its results.
func runSide(ctx context.Context, src sideReader, id, arm string) (comparison.Side, *pb.RunStatus, error) {
	st, err := src.Status(ctx, id)
	if err != nil {
		return comparison.Side{}, nil, err
	}
	side := comparison.Side{Label: "run " + id, Run: id, Arm: arm, Spec: st.GetSpec()}
	records, stored, err := storedRecords(ctx, src, st, arm)
	if err != nil {
		return comparison.Side{}, nil, err
	}
	if stored {
		side.Results = records
		return side, st, nil
	}
	results, err := comparedResults(ctx, src.Verdicts, id, arm)
	if err != nil {
		return comparison.Side{}, nil, err
	}
	side.Results = results[arm]
	return side, st, nil
}

// storedRecords reads the records of arm that finished run st stored, when src serves them:
// tens of megabytes for a run of a million jobs, where its results are gigabytes. stored is
// false when the comparison must read the run's results instead: the run has none (finished
// before coordinators kept them, or storing failed), or the coordinator says so.
func storedRecords(ctx context.Context, src sideReader, st *pb.RunStatus, arm string) (records []comparison.Record, stored bool, err error) {
	rr, ok := src.(recordsReader)
	if !ok || !st.GetRecordsStored() {
		return nil, false, nil
	}
	// A run has one record per counted result: the status says how many.
	lim := comparison.ReadLimits{MaxRecords: int(st.GetDoneJobs())}
	records, err = rr.Records(ctx, st.GetId(), arm, lim)
	var ae *coordinator.APIError
	if errors.As(err, &ae) && (ae.Status == http.StatusNotFound || ae.Status == http.StatusConflict) {
		// Gone since the status was read (swept, or deleted by hand): the results say why,
		// or answer for them.
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return records, true, nil
}

// inProcessRuns reads the runs of the coordinator in this process (skillfleet test).
type inProcessRuns struct{ c *coordinator.Coordinator }

// Status returns a run's state.
func (r inProcessRuns) Status(ctx context.Context, id string) (*pb.RunStatus, error) {
	return r.c.Status(ctx, id)
}

// Verdicts replays a run's counted results, documents inline.
func (r inProcessRuns) Verdicts(ctx context.Context, id string, fn func(*pb.Result) error) error {
	return localResults(r.c)(ctx, id, fn)
}

// runComparison is the comparison made when a run with a baseline finishes: finishRun puts
// it in the reports, and the gates read it afterwards.
type runComparison struct {
	made *comparison.Report
	// minEffect is --min-effect: below it, a design is underpowered.
	minEffect float64
}

// arms is outputFlags.compare for a run with a baseline arm: the with_skill arm against the
// baseline arm (the skill's effect, with_skill minus the baseline).
func (c *runComparison) arms(ctx context.Context, src resultSource, id, baselineArm string, spec *pb.RunSpec) func(runreport.Report) (*comparison.Report, error) {
	return func(rep runreport.Report) (*comparison.Report, error) {
		// One pass over the run's results for both arms.
		results, err := comparedResults(ctx, src, id, baselineArm, workspace.WithSkill)
		if err != nil {
			return nil, failf("comparison: %v", err)
		}
		side := func(a string) comparison.Side {
			return comparison.Side{Label: a, Run: id, Arm: a, Spec: spec, Results: results[a]}
		}
		a, b := side(baselineArm), side(workspace.WithSkill)
		aa := baselineArm == string(suite.ArmA2)
		if aa {
			// An A/A run: arm a is the with_skill arm, a2 its repeat.
			a, b = b, a
			a.Label = "a"
		}
		// A skill whose comparison stopped early is compared up to the look it stopped at,
		// with the p-value of its looks (the report says which).
		made, err := comparison.Compare(a, b, comparison.Options{Axis: comparison.AxisArm, AA: aa, MinEffect: c.minEffect, Sequential: rep.Sequential})
		if err != nil {
			return nil, failf("comparison: %v", err)
		}
		c.made = made
		return made, nil
	}
}

// runs is outputFlags.compare for --baseline-run: the finished run's with_skill results
// (read from cur) against an earlier run's (read from base), which stand for the baseline
// (axis: the skills' own files). Runs that differ in anything else are refused with the keys
// that differ (exit 2).
func (c *runComparison) runs(ctx context.Context, base sideReader, baseID string, cur sideReader, st *pb.RunStatus) func(runreport.Report) (*comparison.Report, error) {
	return func(runreport.Report) (*comparison.Report, error) {
		var sides [2]comparison.Side
		for i, side := range []struct {
			src sideReader
			id  string
		}{{base, baseID}, {cur, st.GetId()}} {
			side, _, err := runSide(ctx, side.src, side.id, workspace.WithSkill)
			if err != nil {
				return nil, failf("--baseline-run %s: %v", baseID, err)
			}
			sides[i] = side
		}
		rep, err := comparison.Compare(sides[0], sides[1], comparison.Options{Axis: comparison.AxisSkill, MinEffect: c.minEffect})
		var refused *comparison.RefusalError
		if errors.As(err, &refused) {
			return nil, &exitError{code: ExitUsage, err: fmt.Errorf("--baseline-run %s: %w", baseID, err)}
		}
		if err != nil {
			return nil, failf("comparison: %v", err)
		}
		c.made = rep
		return rep, nil
	}
}

// gate applies --fail-if-worse and --fail-unless-better to the comparison made, after the
// run's own outcome: a gate that fails makes the exit status 1 even when every case passed.
func (c *runComparison) gate(g armGates, runErr error) error {
	if c.made == nil {
		return runErr
	}
	if g.failIfWorse {
		if err := comparison.FailIfWorse(c.made); err != nil {
			return failf("%v", err)
		}
	}
	if g.failUnlessBetter {
		if err := comparison.FailUnlessBetter(c.made); err != nil {
			return failf("%v", err)
		}
	}
	return runErr
}

// check refuses the gates without something to compare with.
func (g armGates) check(hasBaseline bool) error {
	if (g.failIfWorse || g.failUnlessBetter) && !hasBaseline {
		return usageErrorf("--fail-if-worse and --fail-unless-better need --baseline or --baseline-run")
	}
	return nil
}

// armGates are test's and submit's --fail-if-worse and --fail-unless-better.
type armGates struct{ failIfWorse, failUnlessBetter bool }

// register adds the gate flags to a command that runs a baseline.
func (g *armGates) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&g.failIfWorse, "fail-if-worse", false, "with --baseline: exit 1 when the skill is significantly worse than its baseline on any skill")
	cmd.Flags().BoolVar(&g.failUnlessBetter, "fail-unless-better", false, "with --baseline: exit 1 unless every skill is significantly better than its baseline")
}
