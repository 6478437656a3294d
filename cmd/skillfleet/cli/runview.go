package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/skillfleet/skillfleet/comparison"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	runreport "github.com/skillfleet/skillfleet/report"
	"github.com/skillfleet/skillfleet/web"
)

// progress shows a run as it goes: a bar on a terminal, one line per finished job otherwise
// (CI logs), written to w (stderr, so stdout stays the report).
type progress struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func newProgress(w io.Writer, totalJobs int) *progress {
	p := &progress{w: w}
	if isTerminal(w) {
		p.bar = progressbar.NewOptions(totalJobs,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription("jobs"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionClearOnFinish(),
		)
	}
	return p
}

func (p *progress) event(ev *pb.Event) {
	if st := ev.GetStatus(); st != nil && p.bar != nil && st.GetTotalJobs() > 0 {
		// A curtailed run's total goes down as its cases settle: the epochs withdrawn are
		// not run, so the bar ends full when the run does.
		p.bar.ChangeMax(int(st.GetTotalJobs()))
	}
	r := ev.GetResult()
	if r == nil {
		return
	}
	if p.bar != nil {
		_ = p.bar.Add(1)
		return
	}
	status := strings.ToUpper(runreport.StatusOf(r.GetVerdict()))
	line := fmt.Sprintf("%-9s %s/%s", status, r.GetSkill(), r.GetCaseName())
	if r.GetEpoch() > 1 {
		line += fmt.Sprintf(" #%d", r.GetEpoch())
	}
	line += fmt.Sprintf(" (%dms)", r.GetTimings().GetTotalMs())
	if r.GetReason() != "" && r.GetVerdict() != pb.Verdict_VERDICT_PASSED {
		line += ": " + firstLine(r.GetReason())
	}
	fmt.Fprintln(p.w, line)
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// outputFlags are how test and submit write a finished run.
type outputFlags struct {
	format string
	junit  string
	// compare, when set (a run with a baseline), compares the finished run's arms; its
	// comparison goes into the JSON and JUnit reports and after the text one.
	compare func(runreport.Report) (*comparison.Report, error)
	// quarantine, when set, marks the quarantined cases before the report is written.
	quarantine func(*runreport.Report)
	// html, when set, also receives the report as one self-contained HTML file, with each
	// case's epochs read from results (nil: the report's evidence only).
	html    string
	results func(fn func(*pb.Result) error) error
}

// finishRun writes the report (text or JSON on stdout, JUnit to a file) and maps the run to
// the exit code: 0 when every case passed or is quarantined, 1 otherwise.
func finishRun(e *env, st *pb.RunStatus, rep runreport.Report, o outputFlags) error {
	if o.quarantine != nil {
		o.quarantine(&rep)
	}
	var cmp *comparison.Report
	var cmpErr error // a comparison refused: the report is still written, then the refusal
	if o.compare != nil {
		var err error
		if cmp, cmpErr = o.compare(rep); cmpErr != nil {
			cmp = nil
		} else if rep.Comparison, err = json.Marshal(cmp.JSON()); err != nil {
			return failf("comparison: %v", err)
		}
		if cmp != nil {
			for _, p := range cmp.Properties() {
				rep.ComparisonProperties = append(rep.ComparisonProperties, runreport.Property{Name: p.Name, Value: p.Value})
			}
		}
	}
	var err error
	switch o.format {
	case "json":
		err = runreport.WriteJSON(e.stdout, rep)
	default:
		err = runreport.WriteText(e.stdout, rep, runreport.TextOptions{Color: isTerminal(e.stdout)})
		if err == nil && cmp != nil {
			fmt.Fprintln(e.stdout)
			err = cmp.WriteText(e.stdout)
		}
	}
	if err != nil {
		return err
	}
	if o.junit != "" {
		f, err := os.Create(o.junit)
		if err != nil {
			return failf("junit: %v", err)
		}
		werr := runreport.WriteJUnit(f, rep)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return failf("junit: %v", werr)
		}
	}
	if o.html != "" {
		if err := writeHTMLFile(o.html, st, rep, cmp, o.results); err != nil {
			return failf("html: %v", err)
		}
	}
	if cmpErr != nil {
		return cmpErr
	}
	if st.GetCostCapped() {
		return &exitError{code: ExitCostCap, err: fmt.Errorf("run %s stopped at its cost cap: %s", st.GetId(), st.GetReason())}
	}
	if st.GetState() != pb.RunState_RUN_STATE_COMPLETED {
		return failf("run %s ended %s: %s", st.GetId(), strings.ToLower(strings.TrimPrefix(st.GetState().String(), "RUN_STATE_")), st.GetReason())
	}
	// Quarantined cases ran and are reported, but do not fail the run.
	if rep.Summary.Failing() {
		return errorsFound()
	}
	return nil
}

// writeHTMLFile writes a run's self-contained HTML report (web.WriteReport) to path.
func writeHTMLFile(path string, st *pb.RunStatus, rep runreport.Report, cmp *comparison.Report, results func(func(*pb.Result) error) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	werr := writeHTML(f, st, rep, cmp, results)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// writeHTML writes a run's self-contained HTML report.
func writeHTML(w io.Writer, st *pb.RunStatus, rep runreport.Report, cmp *comparison.Report, results func(func(*pb.Result) error) error) error {
	bw := bufio.NewWriter(w)
	if err := web.WriteReport(bw, web.ReportInput{Status: st, Report: rep, Results: results, Comparison: cmp, Generated: time.Now()}); err != nil {
		return err
	}
	return bw.Flush()
}
