package cli

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/skillfleet/skillfleet/changes"
	"github.com/skillfleet/skillfleet/flaky"
	runreport "github.com/skillfleet/skillfleet/report"
)

// quarantineFlags are --quarantine and --quarantine-file: which cases still run and are
// reported but do not set the exit code.
type quarantineFlags struct {
	mode, file string
}

func (q *quarantineFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&q.mode, "quarantine", "", "quarantine policy: flaky (cases the history labels flaky do not set the exit code), or empty for none")
	cmd.Flags().StringVar(&q.file, "quarantine-file", "", "file listing quarantined cases, one skill/case or skill/case@agent per line (# comments)")
}

// policy reads the flags; the zero policy quarantines nothing.
func (q *quarantineFlags) policy() (flaky.Policy, error) {
	var p flaky.Policy
	switch q.mode {
	case "", "off":
	case "flaky":
		p.Flaky = true
	default:
		return p, usageErrorf("--quarantine must be flaky (or empty), got %q", q.mode)
	}
	if q.file != "" {
		f, err := os.Open(q.file)
		if err != nil {
			return p, usageErrorf("--quarantine-file: %v", err)
		}
		defer f.Close()
		if p.Cells, err = changes.ParseQuarantineFile(f); err != nil {
			return p, usageErrorf("--quarantine-file %s: %v", q.file, err)
		}
	}
	return p, nil
}

// quarantineReport returns the function finishRun applies to a report, nil when the policy is empty (the
// coordinator's own marks then stand).
func quarantineReport(p flaky.Policy, suite string) func(*runreport.Report) {
	if !p.Flaky && len(p.Cells) == 0 {
		return nil
	}
	q := flaky.NewQuarantine(p)
	return func(r *runreport.Report) { changes.Quarantine(r, suite, q) }
}
