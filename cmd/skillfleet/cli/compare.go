package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/skillfleet/skillfleet/comparison"
	"github.com/skillfleet/skillfleet/coordinator"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

func newCompareCommand(e *env) *cobra.Command {
	var (
		r           remoteFlags
		format      = "text"
		failIfWorse bool
		seed        uint64
		arm         = "with_skill"
	)
	cmd := &cobra.Command{
		Use:   "compare RUN_A RUN_B [--format text|json|junit] [--fail-if-worse]",
		Short: "Compare two runs of a suite on a coordinator: per skill, is B better or worse than A?",
		Long: `Compare pairs the cases of two runs (the results their reports count) and says, per skill,
both pass rates, the difference (B minus A) with its 95% interval, the p-value after Holm's
adjustment across the skills, and whether the difference is significant; then which cases
newly fail, were fixed, still fail, are new or removed. Errored and timed-out epochs are left
out and counted, never taken as passes.

The runs must differ only in the skills' own files: a different agent, model, judge, case
definition or limits makes the comparison meaningless, and it is refused with the keys that
differ.

Exit status: 0 compared, 1 with --fail-if-worse when B is significantly worse than A on a
skill (or the coordinator failed), 2 refused or bad usage.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch format {
			case "text", "json", "junit":
			default:
				return usageErrorf("unknown --format %q (want text, json or junit)", format)
			}
			client, err := r.client(cmd)
			if err != nil {
				return err
			}
			var sides [2]comparison.Side
			for i, id := range args {
				st, err := client.Status(cmd.Context(), id)
				if err != nil {
					return apiFailure(e, err)
				}
				results, err := comparedResults(cmd.Context(), client.Results, id, arm)
				if err != nil {
					return apiFailure(e, err)
				}
				sides[i] = comparison.Side{Label: "run " + id, Run: id, Arm: arm, Spec: st.GetSpec(), Results: results}
				if st.GetState() == pb.RunState_RUN_STATE_PENDING || st.GetState() == pb.RunState_RUN_STATE_RUNNING {
					fmt.Fprintf(e.stderr, "skillfleet: run %s is still %s: comparing the results it has so far\n", id, stateName(st.GetState()))
				}
			}
			rep, err := comparison.Compare(sides[0], sides[1], comparison.Options{Axis: comparison.AxisSkill, Seed: seed})
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
	r.register(cmd.Flags())
	cmd.Flags().StringVar(&arm, "arm", arm, "the arm of each run to compare: with_skill, without_skill or old_skill")
	cmd.Flags().StringVar(&format, "format", format, "output format: text, json or junit")
	cmd.Flags().BoolVar(&failIfWorse, "fail-if-worse", false, "exit 1 when B is significantly worse than A on any skill")
	cmd.Flags().Uint64Var(&seed, "seed", 0, "seed of the resampling methods (the same seed gives the same intervals)")
	return cmd
}

// comparedResults reads a run's counted results of one arm, keeping only what a comparison
// reads: a run of many cases would otherwise hold every output and trajectory in memory.
func comparedResults(ctx context.Context, src resultSource, id, arm string) ([]*pb.Result, error) {
	var out []*pb.Result
	err := src(ctx, id, func(r *pb.Result) error {
		if armOf(r) != arm {
			return nil
		}
		out = append(out, &pb.Result{Arm: r.GetArm(),
			Skill: r.GetSkill(), CaseName: r.GetCaseName(), Agent: r.GetAgent(), Epoch: r.GetEpoch(), Verdict: r.GetVerdict(),
			Usage: r.GetUsage(), Timings: r.GetTimings(), Model: r.GetModel(), JudgeModel: r.GetJudgeModel(),
			JudgePrompt: r.GetJudgePrompt(), CaseDigest: r.GetCaseDigest(),
		})
		return nil
	})
	return out, err
}

// armOf is a result's arm, with_skill when it has none.
func armOf(r *pb.Result) string {
	if r.GetArm() == "" {
		return "with_skill"
	}
	return r.GetArm()
}

// compareArms compares a finished baseline run's with_skill arm against its baseline arm
// (the skill's effect: with_skill minus the baseline), writes the comparison to w, and applies
// the gates the user asked for.
func compareArms(ctx context.Context, src resultSource, id, baselineArm string, spec *pb.RunSpec, w io.Writer, g armGates) error {
	var sides [2]comparison.Side
	for i, a := range []string{baselineArm, "with_skill"} {
		results, err := comparedResults(ctx, src, id, a)
		if err != nil {
			return failf("comparison: %v", err)
		}
		sides[i] = comparison.Side{Label: a, Run: id, Arm: a, Spec: spec, Results: results}
	}
	rep, err := comparison.Compare(sides[0], sides[1], comparison.Options{Axis: comparison.AxisArm})
	if err != nil {
		return failf("comparison: %v", err)
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	if err := rep.WriteText(w); err != nil {
		return err
	}
	if g.failIfWorse {
		if err := comparison.FailIfWorse(rep); err != nil {
			return failf("%v", err)
		}
	}
	if g.failUnlessBetter {
		if err := comparison.FailUnlessBetter(rep); err != nil {
			return failf("%v", err)
		}
	}
	return nil
}

// afterBaseline runs compareArms for a run with a baseline and merges its outcome with the
// run's: a gate that fails makes the exit status 1 even when every case passed.
func afterBaseline(ctx context.Context, e *env, src resultSource, id, baselineArm string, spec *pb.RunSpec, format string, g armGates, runErr error) error {
	if baselineArm == "" || ctx.Err() != nil {
		if g.failIfWorse || g.failUnlessBetter {
			if baselineArm == "" {
				return usageErrorf("--fail-if-worse and --fail-unless-better need --baseline")
			}
		}
		return runErr
	}
	w := e.stdout
	if format != "text" {
		w = e.stderr // the report on stdout is one JSON document
	}
	if err := compareArms(ctx, src, id, baselineArm, spec, w, g); err != nil {
		return err
	}
	return runErr
}

// armGates are test's and submit's --fail-if-worse and --fail-unless-better.
type armGates struct{ failIfWorse, failUnlessBetter bool }

// register adds the gate flags to a command that runs a baseline.
func (g *armGates) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&g.failIfWorse, "fail-if-worse", false, "with --baseline: exit 1 when the skill is significantly worse than its baseline on any skill")
	cmd.Flags().BoolVar(&g.failUnlessBetter, "fail-unless-better", false, "with --baseline: exit 1 unless every skill is significantly better than its baseline")
}

// afterBaselineRun compares a finished run's with_skill arm against an earlier run's
// (--baseline-run): the earlier results stand for the baseline, so nothing is run twice. The
// comparison refuses, listing the keys, when the runs differ in anything but the skills' own
// files (agent, model, judge, case definitions, limits).
func afterBaselineRun(ctx context.Context, e *env, client *coordinator.Client, baseID string, st *pb.RunStatus, format string, g armGates, runErr error) error {
	if ctx.Err() != nil {
		return runErr
	}
	base, err := client.Status(ctx, baseID)
	if err != nil {
		return apiFailure(e, err)
	}
	var sides [2]comparison.Side
	for i, s := range []*pb.RunStatus{base, st} {
		results, err := comparedResults(ctx, client.Results, s.GetId(), "with_skill")
		if err != nil {
			return apiFailure(e, err)
		}
		sides[i] = comparison.Side{Label: "run " + s.GetId(), Run: s.GetId(), Arm: "with_skill", Spec: s.GetSpec(), Results: results}
	}
	rep, err := comparison.Compare(sides[0], sides[1], comparison.Options{Axis: comparison.AxisSkill})
	var refused *comparison.RefusalError
	if errors.As(err, &refused) {
		return &exitError{code: ExitUsage, err: fmt.Errorf("--baseline-run %s: %w", baseID, err)}
	}
	if err != nil {
		return failf("comparison: %v", err)
	}
	w := e.stdout
	if format != "text" {
		w = e.stderr
	}
	fmt.Fprintln(w)
	if err := rep.WriteText(w); err != nil {
		return err
	}
	if g.failIfWorse {
		if err := comparison.FailIfWorse(rep); err != nil {
			return failf("%v", err)
		}
	}
	if g.failUnlessBetter {
		if err := comparison.FailUnlessBetter(rep); err != nil {
			return failf("%v", err)
		}
	}
	return runErr
}
