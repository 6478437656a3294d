package cli

import (
	"bytes"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/text"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
)

func newSuitesCommand(e *env) *cobra.Command {
	var r remoteFlags
	format := "text"
	cmd := &cobra.Command{
		Use:   "suites push|list",
		Short: "Push named suites to a coordinator, for its schedules to run",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_ = cmd.Help()
			return usageErrorf("a subcommand is required")
		},
	}
	r.register(cmd.PersistentFlags())
	r.registerTeam(cmd.PersistentFlags())
	cmd.PersistentFlags().StringVar(&format, "format", format, "output format: text or json")
	push := &cobra.Command{
		Use:   "push NAME ROOT...",
		Short: "Validate a suite here and store it on the coordinator as the latest of NAME",
		Long: `Push validates the suite here (errors stop it before anything is uploaded), uploads it as
a bundle, and the coordinator plans it as it would a submission before keeping it as the
latest bundle of NAME. Schedules naming the suite run the latest bundle pushed.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			client, err := r.client(cmd)
			if err != nil {
				return err
			}
			s := suite.Load(args[1:], skill.Options{})
			if s.Diagnostics.HasErrors() {
				for _, d := range s.Diagnostics {
					fmt.Fprintln(e.stderr, d.String())
				}
				return &exitError{code: ExitUsage, err: fmt.Errorf("the suite has %s; nothing was pushed", text.Count(s.Diagnostics.Errors(), "error", "errors"))}
			}
			var b bytes.Buffer
			if _, err := suite.WriteBundle(&b, s.Graph, s.Catalog.Skills()); err != nil {
				return failf("bundle: %v", err)
			}
			ps, err := client.PushSuite(cmd.Context(), args[0], &b)
			if err != nil {
				return apiFailure(e, err)
			}
			if format == "json" {
				return writeJSON(e.stdout, ps)
			}
			fmt.Fprintf(e.stdout, "suite %s: %s (%s)\n", ps.Name, ps.BundleDigest, text.Count(ps.Jobs, "job", "jobs"))
			return nil
		},
	}
	list := &cobra.Command{Use: "list", Short: "List the pushed suites", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			client, err := r.client(cmd)
			if err != nil {
				return err
			}
			suites, err := client.Suites(cmd.Context())
			if err != nil {
				return apiFailure(e, err)
			}
			if format == "json" {
				return writeJSON(e.stdout, map[string]any{"suites": suites})
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TEAM\tNAME\tBUNDLE\tJOBS\tPUSHED\tBY")
			for _, ps := range suites {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", dash(ps.Team), ps.Name, ps.BundleDigest, ps.Jobs, ps.PushedAt.Format(time.RFC3339), dash(ps.By))
			}
			return tw.Flush()
		},
	}
	cmd.AddCommand(push, list)
	return cmd
}

func newSchedulesCommand(e *env) *cobra.Command {
	var r remoteFlags
	format := "text"
	cmd := &cobra.Command{
		Use:   "schedules add|list|remove",
		Short: "Run pushed suites on a cron schedule on a coordinator",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_ = cmd.Help()
			return usageErrorf("a subcommand is required")
		},
	}
	r.register(cmd.PersistentFlags())
	r.registerTeam(cmd.PersistentFlags())
	cmd.PersistentFlags().StringVar(&format, "format", format, "output format: text or json")
	var req coordinator.ScheduleRequest
	add := &cobra.Command{
		Use:   `add NAME --suite SUITE --cron "0 2 * * *" [--agent A]...`,
		Short: "Add a schedule that runs a pushed suite's latest bundle on the scheduled lane",
		Long: `Add stores a schedule on the coordinator. At each slot of --cron (five fields, or
@daily, @hourly..., in UTC) the coordinator runs the latest bundle pushed under --suite on
the scheduled lane. Slots missed while no coordinator ran fire once, when one is back.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			if req.Suite == "" || req.Cron == "" {
				return usageErrorf("--suite and --cron are required")
			}
			client, err := r.client(cmd)
			if err != nil {
				return err
			}
			s, err := client.AddSchedule(cmd.Context(), args[0], req)
			if err != nil {
				return apiFailure(e, err)
			}
			if format == "json" {
				return writeJSON(e.stdout, s)
			}
			fmt.Fprintf(e.stdout, "schedule %s: suite %s at %q\n", s.Name, s.Suite, s.Cron)
			return nil
		},
	}
	add.Flags().StringVar(&req.Suite, "suite", "", "the pushed suite to run")
	add.Flags().StringVar(&req.Cron, "cron", "", `when to run it: "MIN HOUR DOM MON DOW" or a descriptor such as @daily (UTC)`)
	add.Flags().StringArrayVar(&req.Agents, "agent", nil, "agent to run prompt cases against (repeatable; default: the fleet's)")
	add.Flags().Float64Var(&req.MaxCost, "max-cost", 0, "US dollars each fired run may spend on models (agents and judge, priced); the run stops at the cap with a partial report (see test --max-cost); 0: no cap")
	list := &cobra.Command{Use: "list", Short: "List the schedules and their last fire", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			client, err := r.client(cmd)
			if err != nil {
				return err
			}
			scheds, err := client.Schedules(cmd.Context())
			if err != nil {
				return apiFailure(e, err)
			}
			if format == "json" {
				return writeJSON(e.stdout, map[string]any{"schedules": scheds})
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TEAM\tNAME\tSUITE\tCRON\tAGENTS\tLAST FIRED\tLAST RUN")
			for _, s := range scheds {
				last := dash(s.LastRun)
				if s.LastError != "" {
					last = "error: " + s.LastError
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", dash(s.Team), s.Name, s.Suite, s.Cron, dash(strings.Join(s.Agents, ",")), s.LastFired.Format(time.RFC3339), last)
			}
			return tw.Flush()
		},
	}
	remove := &cobra.Command{Use: "remove NAME", Short: "Remove a schedule", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			client, err := r.client(cmd)
			if err != nil {
				return err
			}
			if err := client.RemoveSchedule(cmd.Context(), args[0]); err != nil {
				return apiFailure(e, err)
			}
			fmt.Fprintf(e.stdout, "schedule %s removed\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(add, list, remove)
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
