package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/text"
)

func newAuditCommand(e *env) *cobra.Command {
	var (
		r      remoteFlags
		before int64
		limit  = 50
		format = "text"
	)
	cmd := &cobra.Command{
		Use:   "audit [--team T] [--limit N] [--before ID] [--format text|json]",
		Short: "Show a coordinator's audit log: who did what to which run, suite or schedule, and when",
		Long: `Audit prints the coordinator's audit log (GET /v1/audit), newest first: submissions,
cancels, pushes, schedules added and removed, logins, and every refused or denied attempt, each
with its actor, role, team, object and outcome. A member or viewer sees its own team's records;
an admin every team's, or one team's with --team. --before ID pages back from a record.

Exit status: 0 listed, 1 failure, 2 invalid input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			if limit < 1 || limit > 1000 {
				return usageErrorf("--limit must be from 1 to 1000, got %d", limit)
			}
			client, err := r.client(cmd)
			if err != nil {
				return err
			}
			list, err := client.Audit(cmd.Context(), before, limit)
			if err != nil {
				return apiFailure(e, err)
			}
			if format == "json" {
				return writeJSON(e.stdout, list)
			}
			writeAudit(e, list)
			return nil
		},
	}
	r.register(cmd.Flags())
	r.registerTeam(cmd.Flags())
	cmd.Flags().Int64Var(&before, "before", 0, "show records older than this id (the \"next\" a page ends with)")
	cmd.Flags().IntVar(&limit, "limit", limit, "records to show (at most 1000)")
	cmd.Flags().StringVar(&format, "format", format, "output format: text or json")
	return cmd
}

// writeAudit prints a page of the audit log as a table; what a suite or a client named is
// printed on one line with terminal escapes removed.
func writeAudit(e *env, l coordinator.AuditList) {
	if len(l.Records) == 0 {
		fmt.Fprintln(e.stdout, "no audit records")
		return
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tWHEN\tACTOR\tROLE\tTEAM\tACTION\tOBJECT\tOUTCOME\tDETAIL")
	for _, r := range l.Records {
		f := func(s string) string { return text.ClipEscaped(s, 120) }
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.At.UTC().Format(time.RFC3339),
			dash(f(r.Actor)), dash(f(r.Role)), f(r.Team), f(r.Action), f(r.Object), f(r.Outcome), f(r.Detail))
	}
	_ = tw.Flush()
	if l.Next > 0 {
		fmt.Fprintf(e.stdout, "older records: --before %d\n", l.Next)
	}
}
