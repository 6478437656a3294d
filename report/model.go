package report

import (
	"encoding/json"
	"fmt"
	"strings"

	skillfleetv1 "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/stats"
)

// Case statuses as they appear in reports.
const (
	StatusPassed   = "passed"
	StatusFailed   = "failed"
	StatusErrored  = "errored"
	StatusTimedOut = "timed_out"
	StatusSkipped  = "skipped"
	// StatusReused is a changed-only run's case whose every epoch reused a recent passing
	// run's verdict (its digest is unchanged): not run, and never counted as a fresh pass.
	StatusReused = "reused"
	// StatusPending is a case without a final verdict yet; it only appears in a report taken
	// while the run is still going.
	StatusPending = "pending"
)

// Report is the outcome of one run: its cases in skill, then case order.
type Report struct {
	Run string `json:"run"`
	// Summary counts the with_skill cases: the run's outcome and its exit code.
	Summary Summary `json:"summary"`
	// Baseline counts the cases of the baseline arm, when the run has one; a failing baseline
	// is expected and never makes the run fail.
	Baseline *Summary `json:"baseline,omitempty"`
	// Usage is the model tokens and cost the run's counted results spent (agents and judge).
	Usage *Usage `json:"usage,omitempty"`
	// Partial is set on the report of a run its cost cap stopped: its unfinished cases are
	// skipped, so it is not the whole suite's answer.
	Partial *Partial `json:"partial,omitempty"`
	// Changes is what changed since the previous run of the suite and lane, and the flaky
	// cells (see Changes); absent when the report was built without history. It comes first
	// in the text report.
	Changes *Changes `json:"changes,omitempty"`
	Cases   []Case   `json:"cases"`
	// Comparison is, for a run with a baseline, the comparison of its arms as JSON (the
	// comparison package's document); absent otherwise. ComparisonProperties are the same
	// figures as JUnit properties, written on a testsuite of their own named "comparison".
	Comparison json.RawMessage `json:"comparison,omitempty"`
	// Sequential is, for a run with a baseline, each skill whose comparison was
	// group-sequential (its cases `runs: auto`): its looks and where and why it stopped, in
	// skill order; absent otherwise. The comparison reads its epochs up to EpochsRun.
	Sequential           []stats.SequentialResult `json:"sequential,omitempty"`
	ComparisonProperties []Property               `json:"-"`
}

// Partial says why a report is partial and what the run spent.
type Partial struct {
	// Reason is the run's reason for stopping, as its skipped cases give it.
	Reason string `json:"reason"`
	// Spent is what the run's counted results cost (agents and judge); jobs cancelled
	// while running may have spent more, unreported. MaxCost is the cap (--max-cost).
	Spent   float64 `json:"spent"`
	MaxCost float64 `json:"max_cost"`
}

// Property is one JUnit <property>.
type Property struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// Usage counts model tokens and their cost (in the currency of the configured price table).
type Usage struct {
	PromptTokens     int64   `json:"prompt_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	Cost             float64 `json:"cost"`
	// CacheReadTokens and CacheWriteTokens are the part of PromptTokens a provider's prompt
	// cache served or stored.
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
}

func (u *Usage) add(o *skillfleetv1.Usage) {
	u.PromptTokens += o.GetPromptTokens()
	u.CompletionTokens += o.GetCompletionTokens()
	u.Cost += o.GetCost()
	u.CacheReadTokens += o.GetCacheReadTokens()
	u.CacheWriteTokens += o.GetCacheWriteTokens()
}

func (u Usage) zero() bool { return u.PromptTokens == 0 && u.CompletionTokens == 0 && u.Cost == 0 }

// Summary counts the cases (not the jobs) of a report by status.
type Summary struct {
	Total    int `json:"total"`
	Passed   int `json:"passed"`
	Failed   int `json:"failed"`
	Errored  int `json:"errored"`
	TimedOut int `json:"timed_out"`
	Skipped  int `json:"skipped"`
	// Reused counts the cases of a changed-only run that were not run because a recent run
	// passed them with the same digest (see StatusReused); they do not make the run fail.
	Reused int `json:"reused,omitempty"`
	// Pending is only non-zero in a report taken before the run finished.
	Pending int `json:"pending,omitempty"`
	// Quarantined counts the cases that did not pass but are quarantined (they are counted
	// in Failed, Errored, … as well): they do not make the run fail.
	Quarantined int `json:"quarantined,omitempty"`
}

// Case is the verdict on one test case over all its epochs, with the evidence behind it.
type Case struct {
	Skill string `json:"skill"`
	Case  string `json:"case"`
	// Agent is the agent a prompt case ran against, when the run named agents.
	Agent string `json:"agent,omitempty"`
	// AgentVersions are the CLI versions a command agent's epochs ran on, as the CLI named
	// itself to the model gateway ("claude-cli/2.1.240"), sorted, once each, at most four;
	// none for the built-in agent or a CLI that named none.
	AgentVersions []string `json:"agent_versions,omitempty"`
	// Arm is the baseline arm the case ran in ("without_skill", "old_skill"); empty for
	// with_skill, the arm of every case of a run without a baseline.
	Arm string `json:"arm,omitempty"`
	// Usage is what the case's epochs spent on models.
	Usage *Usage `json:"usage,omitempty"`
	// Kind is "prompt" or "command".
	Kind string `json:"kind"`
	// Status is one of the Status* constants.
	Status string `json:"status"`

	Epochs       int `json:"epochs"`
	PassedEpochs int `json:"passed_epochs"`
	// The other epochs by job verdict; epochs that never ran before the run was cancelled or
	// hit its deadline count as skipped.
	FailedEpochs   int `json:"failed_epochs,omitempty"`
	ErroredEpochs  int `json:"errored_epochs,omitempty"`
	TimedOutEpochs int `json:"timed_out_epochs,omitempty"`
	SkippedEpochs  int `json:"skipped_epochs,omitempty"`
	// ReusedEpochs did not run in this run: a changed-only run reused them from ReusedFrom.
	ReusedEpochs int    `json:"reused_epochs,omitempty"`
	ReusedFrom   string `json:"reused_from,omitempty"`
	// EpochsPlanned is the case's `runs` (Epochs, again, under the name that pairs it with
	// EpochsRun), and EpochsRun how many of them ran and reported (reused ones did not run).
	// Once a case's verdict is settled its other epochs are not run: they could not change
	// it (see Decide). Both are 0 in a report written before they were.
	EpochsRun     int `json:"epochs_run"`
	EpochsPlanned int `json:"epochs_planned"`
	// Sequential marks a `runs: auto` case: its epochs ran until a sequential test decided
	// it, EpochsPlanned (its max_runs) at most. Undecided says the test reached max_runs
	// without deciding: the verdict is the fixed rule's over those epochs (RequiredPasses of
	// them), and Interval says how sure it is.
	Sequential bool `json:"sequential,omitempty"`
	Undecided  bool `json:"undecided,omitempty"`
	// StoppedAt, on an Undecided case of a baseline arm, is the epoch its skill's
	// group-sequential comparison stopped its epochs at before its sequential test decided
	// (Report.Sequential): it is then errored, timed_out or skipped, never passed or failed.
	StoppedAt int `json:"stopped_at,omitempty"`
	// RequiredPasses is how many epochs must pass: RequiredPasses(Epochs, Confidence).
	RequiredPasses int     `json:"required_passes"`
	Confidence     float64 `json:"confidence"`
	// Interval is the 95% Wilson score interval of the pass rate over the epochs that passed
	// or failed; present when Epochs > 1 and at least one epoch passed or failed.
	Interval *[2]float64 `json:"interval,omitempty"`

	// Assertions are the assertion results of one epoch: the lowest-numbered epoch whose
	// verdict decided the case (a failing one for failed, an errored or timed-out one for
	// errored/timed_out, a passing one for passed).
	Assertions []Assertion `json:"assertions"`
	// DurationMS is the sum over the case's epochs of the time each job spent on a worker
	// (sandbox start + execution), so queue wait is excluded.
	DurationMS int64 `json:"duration_ms"`
	// Attempts is the most deliveries any of the case's jobs needed (1: no redelivery).
	Attempts int    `json:"attempts,omitempty"`
	Reason   string `json:"reason,omitempty"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`

	// Output excerpts of the evidence epoch; kept for cases that did not pass only.
	Output          string `json:"output,omitempty"`
	Stdout          string `json:"stdout,omitempty"`
	Stderr          string `json:"stderr,omitempty"`
	OutputTruncated bool   `json:"output_truncated,omitempty"`

	// Flaky is set when the case's cell is labelled flaky over the window of runs ending with
	// this one.
	Flaky *CaseFlaky `json:"flaky,omitempty"`
	// Quarantined is "flaky" or "listed" when the run's quarantine policy covers the case: it
	// ran and is reported, but does not make the run fail.
	Quarantined string `json:"quarantined,omitempty"`
}

// Assertion is the outcome of one assertion in one epoch.
type Assertion struct {
	Type     string `json:"type"`
	Passed   bool   `json:"passed"`
	Expected string `json:"expected"`
	Actual   string `json:"actual"`
	Message  string `json:"message"`
	Path     string `json:"path,omitempty"`
	// Errored: the assertion could not be evaluated (a judge that failed).
	Errored bool `json:"errored,omitempty"`
}

// StatusOf names a case verdict; VERDICT_UNSPECIFIED is a case still pending.
func StatusOf(v skillfleetv1.Verdict) string {
	switch v {
	case skillfleetv1.Verdict_VERDICT_PASSED:
		return StatusPassed
	case skillfleetv1.Verdict_VERDICT_FAILED:
		return StatusFailed
	case skillfleetv1.Verdict_VERDICT_ERRORED:
		return StatusErrored
	case skillfleetv1.Verdict_VERDICT_TIMED_OUT:
		return StatusTimedOut
	case skillfleetv1.Verdict_VERDICT_SKIPPED:
		return StatusSkipped
	case skillfleetv1.Verdict_VERDICT_REUSED:
		return StatusReused
	default:
		return StatusPending
	}
}

// KindName names a case kind as reports spell it.
func KindName(k skillfleetv1.CaseKind) string {
	switch k {
	case skillfleetv1.CaseKind_CASE_KIND_PROMPT:
		return "prompt"
	case skillfleetv1.CaseKind_CASE_KIND_COMMAND:
		return "command"
	default:
		return ""
	}
}

// summarizeArms counts the with_skill cases, and the baseline arm's apart (nil when there is
// none). It reads the cases where they are: a report of a million-job run holds 100,000 of
// them, and copying them into one slice per arm was half of what building it allocated.
func summarizeArms(cases []Case) (Summary, *Summary) {
	var with, base Summary
	for i := range cases {
		c := &cases[i]
		if c.Arm == "" || c.Arm == ArmWithSkill {
			with.add(c)
		} else {
			base.add(c)
		}
	}
	if base.Total == 0 {
		return with, nil
	}
	return with, &base
}

// SplitArms splits a run's cases into the with_skill cases and the baseline arm's (a run
// has at most one baseline arm), keeping their order.
func SplitArms(cases []Case) (with, baseline []Case) {
	for _, c := range cases {
		if c.Arm == "" || c.Arm == ArmWithSkill {
			with = append(with, c)
		} else {
			baseline = append(baseline, c)
		}
	}
	return with, baseline
}

// add counts c by its status.
func (s *Summary) add(c *Case) {
	s.Total++
	switch c.Status {
	case StatusPassed:
		s.Passed++
	case StatusFailed:
		s.Failed++
	case StatusErrored:
		s.Errored++
	case StatusTimedOut:
		s.TimedOut++
	case StatusSkipped:
		s.Skipped++
	case StatusReused:
		s.Reused++
	default:
		s.Pending++
	}
	if c.Quarantined != "" && c.Status != StatusPassed && c.Status != StatusReused {
		s.Quarantined++
	}
}

// pendingEpochs is how many epochs have no result in a report taken mid-run.
func (c Case) pendingEpochs() int {
	return c.Epochs - c.PassedEpochs - c.FailedEpochs - c.ErroredEpochs - c.TimedOutEpochs - c.SkippedEpochs - c.ReusedEpochs
}

// Curtailed reports whether some of the case's planned epochs did not run because its
// verdict was settled without them (not because the run ended early: those are skipped).
func (c Case) Curtailed() bool {
	return c.EpochsPlanned > 0 && c.Status != StatusPending && c.pendingEpochs() > 0
}

// NotNeeded is how many of the case's planned epochs did not run because its verdict was
// settled without them: 0 unless Curtailed. Epochs a run's end left unrun are skipped, not
// counted here.
func (c Case) NotNeeded() int {
	if !c.Curtailed() {
		return 0
	}
	return c.pendingEpochs()
}

// undecidedText says why an undecided case has the verdict it has.
func undecidedText(c Case) string {
	if c.StoppedAt > 0 {
		return fmt.Sprintf("undecided: its skill's comparison stopped its epochs at %d of %d, before its sequential test decided; neither passed nor failed", c.StoppedAt, c.EpochsPlanned)
	}
	return fmt.Sprintf("undecided: the sequential test reached max_runs (%d) without deciding; the fixed rule over them (%d needed) gave %s", c.EpochsPlanned, c.RequiredPasses, c.Status)
}

// epochsRunText is e.g. "4 of 5 epochs run (the others could not change the verdict)".
func epochsRunText(c Case) string {
	if c.StoppedAt > 0 {
		return fmt.Sprintf("%d of %d epochs run (its skill's comparison stopped)", c.EpochsRun, c.EpochsPlanned)
	}
	return fmt.Sprintf("%d of %d epochs run (the others could not change the verdict)", c.EpochsRun, c.EpochsPlanned)
}

// epochTally is e.g. "8/10 epochs passed, 1 failed, 1 errored; 9 needed".
func epochTally(c Case) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d epochs passed", c.PassedEpochs, c.Epochs)
	for _, x := range []struct {
		n    int
		what string
	}{{c.FailedEpochs, "failed"}, {c.ErroredEpochs, "errored"}, {c.TimedOutEpochs, "timed out"}, {c.SkippedEpochs, "skipped"}, {c.ReusedEpochs, "reused"}} {
		if x.n > 0 {
			fmt.Fprintf(&b, ", %d %s", x.n, x.what)
		}
	}
	fmt.Fprintf(&b, "; %d needed", c.RequiredPasses)
	return b.String()
}
