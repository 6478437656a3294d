package cli

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/text"
)

func newUsageCommand(e *env) *cobra.Command {
	var (
		r      remoteFlags
		format = "text"
	)
	cmd := &cobra.Command{
		Use:   "usage [--team T] [--format text|json]",
		Short: "Show each team's share of a fleet: jobs, running jobs and stored bytes against its bounds",
		Long: `Usage prints what a team holds of the fleet (GET /v1/usage) against its bounds: the jobs of
its unfinished runs, the jobs it has queued or running in each lane (its fair share, by its
weight), and the bytes its runs hold of the results and artifacts streams — live for unfinished
runs, kept for finished ones (given back when the streams need room) — and of the bundle store.
A team over a bound is named with the bound and its usage: its runs wait and its new runs are
refused until it is under again. A member or viewer sees its own team; an admin every team, or
one with --team.

Exit status: 0 listed, 1 failure, 2 invalid input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			client, err := r.client(cmd)
			if err != nil {
				return err
			}
			list, err := client.Usage(cmd.Context())
			if err != nil {
				return apiFailure(e, err)
			}
			if format == "json" {
				return writeJSON(e.stdout, list)
			}
			writeUsage(e, list)
			return nil
		},
	}
	r.register(cmd.Flags())
	r.registerTeam(cmd.Flags())
	cmd.Flags().StringVar(&format, "format", format, "output format: text or json")
	return cmd
}

// writeUsage prints each team's usage against its bounds, and the bound a team is over.
func writeUsage(e *env, l coordinator.UsageList) {
	if len(l.Teams) == 0 {
		fmt.Fprintln(e.stdout, "no team holds anything")
		return
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "TEAM\tWEIGHT\tJOBS\tRUNNING\tRESULTS (LIVE/KEPT)\tARTIFACTS (LIVE/KEPT)\tBUNDLES")
	for _, u := range l.Teams {
		p := u.Policy
		running := 0
		lanes := make([]string, 0, len(u.Running))
		for lane, n := range u.Running {
			running += n
			lanes = append(lanes, fmt.Sprintf("%s %d", lane, n))
		}
		sort.Strings(lanes)
		runningCap := "-"
		if p.MaxRunning > 0 {
			runningCap = fmt.Sprint(p.MaxRunning)
		}
		run := fmt.Sprintf("%d/%s", running, runningCap)
		if len(lanes) > 0 {
			run += " (" + strings.Join(lanes, ", ") + ")"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d/%d\t%s\t%s/%s of %s\t%s/%s of %s\t%s of %s\n", text.ClipEscaped(u.Team, 64), p.Weight, u.Jobs, p.MaxJobs, run,
			coordinator.FormatSize(u.Results.Live), coordinator.FormatSize(u.Results.Kept), coordinator.FormatSize(p.MaxResultBytes),
			coordinator.FormatSize(u.Artifacts.Live), coordinator.FormatSize(u.Artifacts.Kept), coordinator.FormatSize(p.MaxArtifactBytes),
			coordinator.FormatSize(u.Bundles), coordinator.FormatSize(p.MaxBundleBytes))
	}
	_ = tw.Flush()
	for _, u := range l.Teams {
		if u.Over != "" {
			fmt.Fprintf(e.stdout, "over a bound: %s\n", text.ClipEscaped(u.Over, 300))
		}
	}
}
