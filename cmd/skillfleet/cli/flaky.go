package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/skillfleet/skillfleet/changes"
	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/flaky"
	"github.com/skillfleet/skillfleet/fleet"
	"github.com/skillfleet/skillfleet/history"
	"github.com/skillfleet/skillfleet/internal/tenant"
	"github.com/skillfleet/skillfleet/internal/text"
	runreport "github.com/skillfleet/skillfleet/report"
)

func newFlakyCommand(e *env) *cobra.Command {
	var (
		r             remoteFlags
		suiteName     string
		lane          string
		historyTarget string
		format        = "text"
	)
	cmd := &cobra.Command{
		Use:   "flaky [--suite S] [--lane ondemand|scheduled] [--history PATH|URL | --coordinator URL] [--format text|json]",
		Short: "List a suite's flaky cases, with the evidence, from the results history",
		Long: `Flaky lists the cells (case × agent × model) of a suite that the history labels flaky
over its last 20 finished runs, each with the evidence: the decided runs' outcomes, the flips,
the pass rate with its 95% interval, the infrastructure failures left out.

Without --coordinator (or $SKILLFLEET_COORDINATOR) it reads the local history, the one
` + "`skillfleet test`" + ` keeps (--history, default skillfleet/history.db under $XDG_STATE_HOME or
~/.local/state); with it, the coordinator's (GET /v1/flaky).

Exit status: 0 listed (flaky cells or none), 1 failure, 2 invalid input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			switch lane {
			case "", "ondemand", "scheduled":
			case "on-demand":
				lane = "ondemand"
			default:
				return usageErrorf("--lane must be ondemand or scheduled, got %q", lane)
			}
			if suiteName == "" {
				suiteName = defaultSuiteName(".")
			}
			var (
				list coordinator.FlakyList
				err  error
			)
			if cmd.Flags().Changed("coordinator") || os.Getenv("SKILLFLEET_COORDINATOR") != "" {
				client, cerr := r.client(cmd)
				if cerr != nil {
					return cerr
				}
				if list, err = client.Flaky(cmd.Context(), suiteName, lane); err != nil {
					return apiFailure(e, err)
				}
			} else if list, err = localFlaky(cmd.Context(), e, historyTarget, suiteName, lane); err != nil {
				return err
			}
			if format == "json" {
				return writeJSON(e.stdout, list)
			}
			writeFlaky(e, list)
			return nil
		},
	}
	r.register(cmd.Flags())
	r.registerTeam(cmd.Flags())
	cmd.Flags().StringVar(&suiteName, "suite", "", "the suite (default: the current directory's name, as `skillfleet test .` names it)")
	cmd.Flags().StringVar(&lane, "lane", "", "ondemand or scheduled (default: both)")
	cmd.Flags().StringVar(&historyTarget, "history", "", "the local history: a SQLite file or a postgres:// URL (password from $SKILLFLEET_HISTORY_PASSWORD)")
	cmd.Flags().StringVar(&format, "format", format, "text or json")
	return cmd
}

// localFlaky lists flaky cells from a local history.
func localFlaky(ctx context.Context, e *env, target, suiteName, lane string) (coordinator.FlakyList, error) {
	hc, err := localHistory(target, e)
	if err != nil {
		return coordinator.FlakyList{}, err
	}
	if hc.Target == fleet.HistoryOff {
		return coordinator.FlakyList{}, usageErrorf("no history to read (--history off)")
	}
	if !history.IsPostgres(hc.Target) {
		if _, err := os.Stat(hc.Target); err != nil {
			// Opening would create an empty database: say there is none instead.
			return coordinator.FlakyList{}, failf("no history at %s (run skillfleet test first, or name one with --history)", hc.Target)
		}
	}
	s, err := history.Open(ctx, history.Options{Target: hc.Target, Password: hc.Password})
	if err != nil {
		return coordinator.FlakyList{}, failf("%v", err)
	}
	defer s.Close()
	// A local history's runs are `skillfleet test`'s, which name no team.
	cells, err := changes.FlakyCells(ctx, s, tenant.DefaultTeam, suiteName, lane, flaky.Config{})
	if err != nil {
		return coordinator.FlakyList{}, failf("%v", err)
	}
	if cells == nil {
		cells = []runreport.FlakyCell{}
	}
	return coordinator.FlakyList{Team: tenant.DefaultTeam, Suite: suiteName, Lane: lane, Cells: cells}, nil
}

func writeFlaky(e *env, l coordinator.FlakyList) {
	where := "suite " + l.Suite
	if l.Lane != "" {
		where += " (lane " + l.Lane + ")"
	}
	if len(l.Cells) == 0 {
		fmt.Fprintf(e.stdout, "no flaky cases in %s over its last %d finished runs\n", where, flaky.DefaultConfig().Window)
		return
	}
	fmt.Fprintf(e.stdout, "%s flaky in %s:\n", text.Count(len(l.Cells), "case", "cases"), where)
	for _, c := range l.Cells {
		name := c.Skill + "/" + c.Case
		if c.Agent != "" || c.Model != "" {
			name += " (" + c.Agent
			if c.Model != "" {
				name += ", " + c.Model
			}
			name += ")"
		}
		fmt.Fprintf(e.stdout, "  %s\n    %s\n", runreport.CleanLine(name), runreport.CleanLine(c.Evidence))
	}
}
