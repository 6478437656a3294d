package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/skillfleet/skillfleet/comparison"
	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/text"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

func newRunsCommand(e *env) *cobra.Command {
	var r remoteFlags
	format := "text"
	cmd := &cobra.Command{
		Use:   "runs list|show|report|trajectory|export|cancel",
		Short: "List, inspect, fetch reports of and cancel runs on a coordinator, or of the local history",
		Long: `Runs reads the runs of the coordinator --coordinator (or $SKILLFLEET_COORDINATOR) names; without
one, list, show, report, trajectory and export read the runs skillfleet test kept in the local
history (--history, the same default file test writes): their status, report and results as
they were when each run ended. Cancel needs a coordinator (by default http://127.0.0.1:8080).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_ = cmd.Help()
			return usageErrorf("a subcommand is required")
		},
	}
	r.registerOrLocal(cmd.PersistentFlags())
	cmd.PersistentFlags().StringVar(&format, "format", format, "output format: text or json (report: text, json, junit or html)")

	printStatus := func(st *pb.RunStatus) error {
		if format == "json" {
			b, err := protojson.MarshalOptions{UseProtoNames: true, Multiline: true}.Marshal(st)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(e.stdout, string(b))
			return err
		}
		c := st.GetCases()
		jobs := fmt.Sprintf("%d/%d", st.GetDoneJobs(), st.GetTotalJobs())
		if n := st.GetWithdrawnJobs(); n > 0 {
			jobs += fmt.Sprintf(" (%s not run: their cases' verdicts were settled without them)", text.Count(int(n), "epoch", "epochs"))
		}
		fmt.Fprintf(e.stdout, "run      %s\nstate    %s\njobs     %s\ncases    %d: %d passed, %d failed, %d errored, %d timed out, %d skipped\n",
			strings.TrimSpace(st.GetId()+" "+st.GetSpec().GetName()), strings.TrimSpace(stateName(st.GetState())+" "+st.GetReason()), jobs,
			c.GetTotal(), c.GetPassed(), c.GetFailed(), c.GetErrored(), c.GetTimedOut(), c.GetSkipped())
		return nil
	}
	list := &cobra.Command{Use: "list", Short: "List runs, newest first", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			client, done, err := r.reader(cmd)
			if err != nil {
				return err
			}
			defer done()
			runs, err := client.List(cmd.Context())
			if err != nil {
				return apiFailure(e, err)
			}
			if format == "json" {
				var docs []string
				for _, st := range runs {
					b, _ := protojson.MarshalOptions{UseProtoNames: true}.Marshal(st)
					docs = append(docs, string(b))
				}
				_, err := fmt.Fprintf(e.stdout, "{\"runs\": [%s]}\n", strings.Join(docs, ",\n"))
				return err
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tSTATE\tJOBS\tPASSED\tFAILED\tERRORED\tCREATED")
			for _, st := range runs {
				c := st.GetCases()
				fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%d\t%d\t%d\t%s\n", st.GetId(), stateName(st.GetState()), st.GetDoneJobs(), st.GetTotalJobs(),
					c.GetPassed(), c.GetFailed(), c.GetErrored()+c.GetTimedOut(), st.GetSpec().GetCreatedAt().AsTime().Format("2006-01-02 15:04:05"))
			}
			return tw.Flush()
		}}
	show := &cobra.Command{Use: "show RUN", Short: "Show a run's state", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			client, done, err := r.reader(cmd)
			if err != nil {
				return err
			}
			defer done()
			st, err := client.Status(cmd.Context(), args[0])
			if err != nil {
				return apiFailure(e, err)
			}
			return printStatus(st)
		}}
	rep := &cobra.Command{Use: "report RUN", Short: "Print a run's report (text, json, junit, or html: one self-contained file)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch format {
			case "text", "json", "junit", "html":
			default:
				return usageErrorf("unknown --format %q (want text, json, junit or html)", format)
			}
			client, done, err := r.reader(cmd)
			if err != nil {
				return err
			}
			defer done()
			if format == "html" {
				return htmlReport(cmd.Context(), e, client, args[0])
			}
			if err := client.WriteReport(cmd.Context(), args[0], format, e.stdout); err != nil {
				return apiFailure(e, err)
			}
			return nil
		}}
	cancel := &cobra.Command{Use: "cancel RUN", Short: "Cancel a run on a coordinator: queued jobs are removed, unfinished cases skipped", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			client, err := r.client(cmd)
			if err != nil {
				return err
			}
			st, err := client.Cancel(cmd.Context(), args[0])
			if err != nil {
				return apiFailure(e, err)
			}
			return printStatus(st)
		}}
	var tq coordinator.TrajectoryQuery
	traj := &cobra.Command{Use: "trajectory RUN SKILL/CASE [--agent A] [--epoch N]",
		Short: "Print one job's trajectory: what its agent did, as an ATIF document (JSON)",
		Long: `Trajectory prints the trajectory of one prompt job of a run: the system prompt, the
input, every model turn with its tool calls, what each call returned as the model saw it, and
the tokens of each turn, as an ATIF-v1.7 document (Harbor's Agent Trajectory Interchange
Format). Without --epoch, the first epoch with a result; --agent is needed when the case ran
against several agents.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			skillName, caseName, ok := strings.Cut(args[1], "/")
			if !ok || skillName == "" || caseName == "" {
				return usageErrorf("want SKILL/CASE, got %q", args[1])
			}
			if tq.Epoch < 0 {
				return usageErrorf("--epoch must be positive")
			}
			q := tq
			q.Skill, q.Case = skillName, caseName
			client, done, err := r.reader(cmd)
			if err != nil {
				return err
			}
			defer done()
			if err := client.Trajectory(cmd.Context(), args[0], q, e.stdout); err != nil {
				return apiFailure(e, err)
			}
			return nil
		}}
	traj.Flags().StringVar(&tq.Agent, "agent", "", "the agent, when the case ran against several")
	traj.Flags().IntVar(&tq.Epoch, "epoch", 0, "the epoch (default: the first with a result)")
	var exportDir string
	export := &cobra.Command{Use: "export RUN --workspace DIR",
		Short: "Write a run into a workspace in the agentskills.io evaluation guide's layout",
		Long: `Export writes each job of a run below DIR/<skill>/iteration-<N>/eval-<case>/with_skill/:
the files its agent left (outputs/), timing.json, grading.json and its trajectory, as the
agentskills.io guide to evaluating skills and skill-creator's schemas lay them out. A case of
several epochs gets one run-<epoch> directory per epoch; a new export takes the next iteration.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if exportDir == "" {
				return usageErrorf("--workspace DIR is required")
			}
			client, done, err := r.reader(cmd)
			if err != nil {
				return err
			}
			defer done()
			n, err := exportWorkspace(cmd.Context(), client.Results, args[0], exportDir)
			if err != nil {
				return apiFailure(e, err)
			}
			fmt.Fprintf(e.stderr, "workspace: %d jobs written to %s\n", n, exportDir)
			return nil
		}}
	export.Flags().StringVar(&exportDir, "workspace", "", "the workspace directory")
	cmd.AddCommand(list, show, rep, cancel, traj, export)
	return cmd
}

func stateName(s pb.RunState) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "RUN_STATE_"))
}

// htmlReport writes a run's self-contained HTML report: its report, every case's results
// with their documents, and, for a run with a baseline, the comparison of its arms.
func htmlReport(ctx context.Context, e *env, client runReader, id string) error {
	st, err := client.Status(ctx, id)
	if err != nil {
		return apiFailure(e, err)
	}
	rep, err := client.Report(ctx, id)
	if err != nil {
		return apiFailure(e, err)
	}
	var cmp *comparison.Report
	if base := st.GetSpec().GetBaseline(); base != "" {
		var rc runComparison
		if cmp, err = rc.arms(ctx, client.Results, id, base, st.GetSpec())(rep); err != nil {
			return err
		}
	}
	results := func(fn func(*pb.Result) error) error { return client.Results(ctx, id, fn) }
	if err := writeHTML(e.stdout, st, rep, cmp, results); err != nil {
		return apiFailure(e, err)
	}
	return nil
}
