package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/fleet/fleettest"
	runreport "github.com/skillfleet/skillfleet/report"
)

// TestSubmitMaxCost: a run whose 21 jobs cost $1 each, capped at $3, stops at its cost cap:
// exit 3 (not 1, which says the suite failed), a report that says it is partial and what it
// spent, its unfinished cases skipped for the cost cap. Without a cap the same suite passes
// (bar its one failing case) and exits 1.
func TestSubmitMaxCost(t *testing.T) {
	r := startRemoteWith(t, &fleettest.Executor{Failing: failingCase, Cost: 1})
	junit := filepath.Join(t.TempDir(), "report.xml")
	code, out, errOut := run("submit", "--coordinator", r.url, "--token", fleetToken, "--follow", "--max-cost", "3", "--junit", junit, examples)
	if code != ExitCostCap {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, ExitCostCap, out, errOut)
	}
	if data, err := os.ReadFile(junit); err != nil || !strings.Contains(string(data), `<property name="partial.max_cost" value="3.00">`) || !strings.Contains(string(data), `name="partial.spent"`) {
		t.Errorf("JUnit (%v) does not say the run is partial:\n%s", err, data)
	}
	if !strings.Contains(out, "PARTIAL: the run stopped at its cost cap, having spent") || !strings.Contains(errOut, "stopped at its cost cap: cost cap: spent $") {
		t.Errorf("text report:\n%s\nstderr:\n%s", out, errOut)
	}
	code, out, errOut = run("submit", "--coordinator", r.url, "--token", fleetToken, "--follow", "--max-cost", "3", "--format", "json", examples)
	rep, err := runreport.FromJSON(strings.NewReader(out))
	if code != ExitCostCap || err != nil {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	if p := rep.Partial; p == nil || p.MaxCost != 3 || p.Spent < 2 || rep.Summary.Skipped == 0 {
		t.Errorf("partial %+v, summary %+v", rep.Partial, rep.Summary)
	}
	for _, c := range rep.Cases {
		if c.Status == runreport.StatusSkipped && !strings.Contains(c.Reason, "cost cap") {
			t.Errorf("%s skipped for %q", c.Case, c.Reason)
		}
	}
	if code, _, errOut := run("submit", "--coordinator", r.url, "--token", fleetToken, "--follow", "--max-cost", "-1", examples); code != ExitUsage || !strings.Contains(errOut, "--max-cost") {
		t.Errorf("--max-cost -1: exit %d, %s", code, errOut)
	}
	if code, out, _ := run("submit", "--coordinator", r.url, "--token", fleetToken, "--follow", examples); code != ExitErrors || strings.Contains(out, "PARTIAL") {
		t.Errorf("without a cap: exit %d\n%s", code, out)
	}
}
