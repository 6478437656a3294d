package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/skillfleet/skillfleet/comparison"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

func newCompareCommand(e *env) *cobra.Command {
	var (
		r           remoteFlags
		format      = "text"
		failIfWorse bool
		seed        uint64
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
				results, err := comparedResults(cmd.Context(), client.Results, id)
				if err != nil {
					return apiFailure(e, err)
				}
				sides[i] = comparison.Side{Label: "run " + id, Run: id, Spec: st.GetSpec(), Results: results}
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
	cmd.Flags().StringVar(&format, "format", format, "output format: text, json or junit")
	cmd.Flags().BoolVar(&failIfWorse, "fail-if-worse", false, "exit 1 when B is significantly worse than A on any skill")
	cmd.Flags().Uint64Var(&seed, "seed", 0, "seed of the resampling methods (the same seed gives the same intervals)")
	return cmd
}

// comparedResults reads a run's counted results, keeping only what a comparison reads: a run
// of many cases would otherwise hold every output and trajectory in memory.
func comparedResults(ctx context.Context, src resultSource, id string) ([]*pb.Result, error) {
	var out []*pb.Result
	err := src(ctx, id, func(r *pb.Result) error {
		out = append(out, &pb.Result{
			Skill: r.GetSkill(), CaseName: r.GetCaseName(), Agent: r.GetAgent(), Epoch: r.GetEpoch(), Verdict: r.GetVerdict(),
			Usage: r.GetUsage(), Timings: r.GetTimings(), Model: r.GetModel(), JudgeModel: r.GetJudgeModel(),
			JudgePrompt: r.GetJudgePrompt(), CaseDigest: r.GetCaseDigest(),
		})
		return nil
	})
	return out, err
}
