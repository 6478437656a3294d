package report

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/skillfleet/skillfleet/internal/text"
)

// TextOptions shape the terminal summary.
type TextOptions struct {
	// Color adds ANSI colours; set it only when writing to a terminal.
	Color bool
	// MaxPassedListed lists passed cases one per line when there are at most this many, and
	// otherwise prints only their count. 0 means 30; a negative value never lists them.
	MaxPassedListed int
	// MaxOutputLines caps each output excerpt shown for a case that did not pass. 0 means 20.
	MaxOutputLines int
}

const (
	defaultMaxPassedListed = 30
	defaultMaxOutputLines  = 20
	// maxLineRunes folds very long lines (minified JSON, base64) in excerpts.
	maxLineRunes = 240
	// maxValueRunes caps an expected or actual value on its line.
	maxValueRunes = 200
)

// ANSI SGR sequences, used only with TextOptions.Color.
const (
	sgrReset  = "\x1b[0m"
	sgrBold   = "\x1b[1m"
	sgrDim    = "\x1b[2m"
	sgrRed    = "\x1b[31m"
	sgrGreen  = "\x1b[32m"
	sgrYellow = "\x1b[33m"
	sgrCyan   = "\x1b[36m"
)

// WriteText writes the terminal summary: the cases that did not pass first (failed, then
// errored, timed out, skipped, pending; each with its epoch tally, reason, the assertions
// that did not pass, an output excerpt and the file:line of the case), then the passed cases
// (listed, or counted when there are many), then a final line such as
// `12 cases: 9 passed, 2 failed, 1 errored, 0 timed out, 0 skipped (run r-abc)`.
// Untrusted text is cleaned of escape sequences and control characters first.
func WriteText(w io.Writer, r Report, opts TextOptions) error {
	if opts.MaxPassedListed == 0 {
		opts.MaxPassedListed = defaultMaxPassedListed
	}
	if opts.MaxOutputLines <= 0 {
		opts.MaxOutputLines = defaultMaxOutputLines
	}
	t := textWriter{w: bufio.NewWriter(w), opts: opts}
	if r.Changes != nil {
		t.writeChanges(r.Changes)
	}

	for _, status := range []string{StatusFailed, StatusErrored, StatusTimedOut, StatusSkipped, StatusPending, ""} {
		for _, c := range r.Cases {
			if c.Status == status || (status == "" && !knownStatus(c.Status)) {
				t.problem(c)
			}
		}
	}
	var passed []Case
	for _, c := range r.Cases {
		if c.Status == StatusPassed {
			passed = append(passed, c)
		}
	}
	switch {
	case len(passed) == 0:
	case opts.MaxPassedListed < 0 || len(passed) > opts.MaxPassedListed:
		t.printf("%s\n\n", t.paint(sgrGreen, fmt.Sprintf("%d passed %s (not listed)", len(passed), text.Plural(len(passed), "case", "cases"))))
	default:
		t.printf("%s\n", t.paint(sgrGreen, fmt.Sprintf("passed (%d):", len(passed))))
		for _, c := range passed {
			t.printf("  %s  %s%s  %s%s\n", t.paint(sgrGreen, "PASS"), caseName(c), t.marks(c), t.paint(sgrDim, duration(c.DurationMS)), t.paint(sgrDim, epochsBrief(c)))
			if c.Flaky != nil {
				t.printf("        %s\n", t.paint(sgrDim, "flaky: "+oneLine(c.Flaky.Evidence, 500)))
			}
		}
		t.printf("\n")
	}

	t.reused(r.Cases)

	s, base := summarizeArms(r.Cases)
	pending := ""
	if s.Reused > 0 {
		pending = fmt.Sprintf(", %d reused (not run: unchanged since a passing run)", s.Reused)
	}
	if s.Pending > 0 {
		pending += fmt.Sprintf(", %d pending", s.Pending)
	}
	if s.Quarantined > 0 {
		pending += fmt.Sprintf(", %d quarantined (not in the exit code)", s.Quarantined)
	}
	t.printf("%d %s: %s, %s, %s, %s, %s%s (run %s)\n", s.Total, text.Plural(s.Total, "case", "cases"),
		t.count(s.Passed, "passed", sgrGreen), t.count(s.Failed, "failed", sgrRed),
		t.count(s.Errored, "errored", sgrRed), t.count(s.TimedOut, "timed out", sgrYellow),
		t.count(s.Skipped, "skipped", sgrCyan), pending, oneLine(r.Run, maxValueRunes))
	if base != nil {
		arm := ""
		for i := range r.Cases {
			if a := r.Cases[i].Arm; a != "" && a != ArmWithSkill {
				arm = a // a run has one baseline arm
				break
			}
		}
		t.printf("baseline %s: %d %s: %d passed, %d failed, %d errored, %d timed out, %d skipped (not in the exit code)\n",
			oneLine(arm, maxValueRunes), base.Total, text.Plural(base.Total, "case", "cases"), base.Passed, base.Failed, base.Errored, base.TimedOut, base.Skipped)
	}
	for _, q := range r.Sequential {
		t.printf("comparison of %s stopped at look %d of %d, %d of %d epochs per case and arm: %s (%s)\n",
			oneLine(q.Skill, maxValueRunes), q.StoppedAtLook, len(q.Looks), q.EpochsRun, q.Epochs, q.Reason, q.Spending)
	}
	if u := r.Usage; u != nil {
		cache := ""
		if u.CacheReadTokens > 0 || u.CacheWriteTokens > 0 {
			cache = fmt.Sprintf(" (%d prompt tokens read from the cache, %d written to it)", u.CacheReadTokens, u.CacheWriteTokens)
		}
		t.printf("models: %d prompt + %d completion tokens%s, cost %.4f\n", u.PromptTokens, u.CompletionTokens, cache, u.Cost)
	}
	if p := r.Partial; p != nil {
		t.printf("PARTIAL: the run stopped at its cost cap, having spent %.4f of %.2f; its unfinished cases are skipped (%s)\n",
			p.Spent, p.MaxCost, oneLine(p.Reason, maxValueRunes))
	}
	if t.err != nil {
		return fmt.Errorf("report: writing text: %w", t.err)
	}
	if err := t.w.Flush(); err != nil {
		return fmt.Errorf("report: writing text: %w", err)
	}
	return nil
}

type textWriter struct {
	w    *bufio.Writer
	opts TextOptions
	err  error
}

func (t *textWriter) printf(format string, args ...any) {
	if t.err == nil {
		_, t.err = fmt.Fprintf(t.w, format, args...)
	}
}

func (t *textWriter) paint(sgr, s string) string {
	if !t.opts.Color || s == "" {
		return s
	}
	return sgr + s + sgrReset
}

func (t *textWriter) count(n int, what, sgr string) string {
	s := fmt.Sprintf("%d %s", n, what)
	if n == 0 {
		return s
	}
	return t.paint(sgr, s)
}

// reused lists a changed-only run's reused cases with the run each came from, or counts them
// when they are more than MaxPassedListed.
func (t *textWriter) reused(cases []Case) {
	var reused []Case
	for _, c := range cases {
		if c.Status == StatusReused {
			reused = append(reused, c)
		}
	}
	switch {
	case len(reused) == 0:
	case t.opts.MaxPassedListed < 0 || len(reused) > t.opts.MaxPassedListed:
		t.printf("%s\n\n", t.paint(sgrDim, fmt.Sprintf("%d reused %s (not run, not listed)", len(reused), text.Plural(len(reused), "case", "cases"))))
	default:
		t.printf("%s\n", t.paint(sgrDim, fmt.Sprintf("reused (%d), not run:", len(reused))))
		for _, c := range reused {
			t.printf("  %s  %s%s  %s\n", t.paint(sgrDim, "REUSED"), caseName(c), t.marks(c), t.paint(sgrDim, "from run "+oneLine(c.ReusedFrom, maxValueRunes)))
		}
		t.printf("\n")
	}
}

// problem writes one case that did not pass.
func (t *textWriter) problem(c Case) {
	label, sgr := "PENDING", sgrCyan
	switch c.Status {
	case StatusFailed:
		label, sgr = "FAIL", sgrRed
	case StatusErrored:
		label, sgr = "ERROR", sgrRed
	case StatusTimedOut:
		label, sgr = "TIMEOUT", sgrYellow
	case StatusSkipped:
		label, sgr = "SKIP", sgrCyan
	case StatusPending:
	default:
		label = strings.ToUpper(oneLine(c.Status, 20))
	}
	where := ""
	if c.File != "" {
		where = "  " + t.paint(sgrDim, oneLine(fileLine(c), maxLineRunes))
	}
	t.printf("%s  %s%s%s\n", t.paint(sgrBold+sgr, label), t.paint(sgrBold, caseName(c)), t.marks(c), where)
	if c.Flaky != nil {
		t.printf("    %s\n", t.paint(sgrYellow, "flaky: "+oneLine(c.Flaky.Evidence, 500)))
	}
	if c.Status == StatusSkipped || c.Status == StatusPending {
		if c.Reason != "" {
			t.printf("    %s\n", oneLine(c.Reason, 500))
		}
		t.printf("\n")
		return
	}

	facts := []string{}
	if c.Epochs > 1 {
		facts = append(facts, epochTally(c))
		if c.Curtailed() {
			facts = append(facts, epochsRunText(c))
		}
		if c.Undecided {
			facts = append(facts, undecidedText(c))
		}
		if c.Interval != nil {
			facts = append(facts, fmt.Sprintf("95%% CI %.2f–%.2f", c.Interval[0], c.Interval[1]))
		}
	}
	facts = append(facts, duration(c.DurationMS))
	if len(c.AgentVersions) > 0 {
		facts = append(facts, oneLine(strings.Join(c.AgentVersions, ", "), maxValueRunes))
	}
	if c.Attempts > 1 {
		facts = append(facts, fmt.Sprintf("%d attempts", c.Attempts))
	}
	t.printf("    %s\n", t.paint(sgrDim, strings.Join(facts, " · ")))
	if c.Reason != "" && c.Reason != epochTally(c) {
		t.printf("    reason: %s\n", oneLine(c.Reason, 500))
	}
	for _, a := range c.Assertions {
		if a.Passed {
			continue
		}
		mark, what := t.paint(sgrRed, "✗"), a.Type
		if a.Errored {
			mark, what = t.paint(sgrYellow, "!"), a.Type+" (could not be evaluated)"
		}
		if a.Message != "" {
			what += ": " + a.Message
		}
		t.printf("    %s %s\n", mark, oneLine(what, 500))
		if a.Expected != "" {
			t.printf("        expected: %s\n", quoted(a.Expected))
		}
		if a.Actual != "" {
			t.printf("        actual:   %s\n", quoted(a.Actual))
		}
		if a.Path != "" {
			t.printf("        path:     %s\n", quoted(a.Path))
		}
	}
	t.excerpt("output", c.Output, false)
	t.excerpt("stdout", c.Stdout, true)
	t.excerpt("stderr", c.Stderr, true)
	t.printf("\n")
}

// excerpt writes at most MaxOutputLines lines of out: its head, or for stdout and stderr
// its tail, where a command's error usually is.
func (t *textWriter) excerpt(name, out string, tail bool) {
	out = strings.TrimRight(cleanTerminal(out), "\n")
	if strings.TrimSpace(out) == "" {
		return
	}
	lines := strings.Split(out, "\n")
	more := len(lines) - t.opts.MaxOutputLines
	t.printf("    %s:\n", name)
	if more > 0 && tail {
		t.printf("      %s\n", t.paint(sgrDim, fmt.Sprintf("… %d earlier %s", more, text.Plural(more, "line", "lines"))))
		lines = lines[more:]
	} else if more > 0 {
		lines = lines[:t.opts.MaxOutputLines]
	}
	for _, l := range lines {
		t.printf("      %s %s\n", t.paint(sgrDim, "|"), foldLine(l))
	}
	if more > 0 && !tail {
		t.printf("      %s\n", t.paint(sgrDim, fmt.Sprintf("… %d more %s", more, text.Plural(more, "line", "lines"))))
	}
}

// marks are a case's flaky and quarantine markers after its name.
func (t *textWriter) marks(c Case) string {
	var m string
	if c.Flaky != nil {
		m += " " + t.paint(sgrYellow, "[flaky]")
	}
	if c.Quarantined != "" {
		m += " " + t.paint(sgrYellow, "[quarantined: "+oneLine(c.Quarantined, 20)+"]")
	}
	return m
}

func knownStatus(s string) bool {
	switch s {
	case StatusPassed, StatusFailed, StatusErrored, StatusTimedOut, StatusSkipped, StatusPending, StatusReused:
		return true
	}
	return false
}

func caseName(c Case) string {
	name := oneLine(c.Skill, maxLineRunes) + "/" + oneLine(c.Case, maxLineRunes)
	if c.Arm != "" && c.Arm != ArmWithSkill {
		name += " [" + oneLine(c.Arm, maxValueRunes) + "]"
	}
	return name
}

func epochsBrief(c Case) string {
	if c.Epochs <= 1 {
		return ""
	}
	if c.StoppedAt > 0 {
		return fmt.Sprintf("  (%d/%d epochs; undecided, its skill's comparison stopped at %d)", c.PassedEpochs, c.Epochs, c.StoppedAt)
	}
	if c.Undecided {
		iv := ""
		if c.Interval != nil {
			iv = fmt.Sprintf(", 95%% CI %.2f–%.2f", c.Interval[0], c.Interval[1])
		}
		return fmt.Sprintf("  (%d/%d epochs; undecided at max_runs, passed by the fixed rule%s)", c.PassedEpochs, c.Epochs, iv)
	}
	if c.Curtailed() {
		return fmt.Sprintf("  (%d/%d epochs; %d of %d run, the others could not change the verdict)", c.PassedEpochs, c.Epochs, c.EpochsRun, c.EpochsPlanned)
	}
	return fmt.Sprintf("  (%d/%d epochs)", c.PassedEpochs, c.Epochs)
}

func duration(ms int64) string { return (time.Duration(ms) * time.Millisecond).String() }

// quoted is a value on one line: cleaned, capped, and Go-quoted so what is left of control
// characters and line breaks shows as escapes.
func quoted(s string) string {
	s = cleanTerminal(s)
	if utf8.RuneCountInString(s) > maxValueRunes {
		s = string([]rune(s)[:maxValueRunes-1]) + "…"
	}
	return strconv.Quote(s)
}

// foldLine caps one already cleaned line of an excerpt.
func foldLine(l string) string {
	if utf8.RuneCountInString(l) <= maxLineRunes {
		return l
	}
	return string([]rune(l)[:maxLineRunes-1]) + "…"
}
