package flaky

import (
	"time"

	"github.com/skillfleet/skillfleet/stats"
)

// Verdict is an epoch's job verdict, in the words the history stores (DESIGN.md's).
type Verdict string

// The verdicts an epoch can have. Anything else is treated like Skipped: not an observation.
const (
	Passed   Verdict = "passed"
	Failed   Verdict = "failed"
	Errored  Verdict = "errored"
	TimedOut Verdict = "timed_out"
	Skipped  Verdict = "skipped"
	// Reused is a cell a changed-only run took from an earlier run: counting it again would
	// count one execution twice.
	Reused Verdict = "reused"
)

// The reason classes of an errored (or timed-out) epoch. Passed and failed epochs have none.
const (
	ClassSandbox       = "sandbox"
	ClassModelEndpoint = "model_endpoint"
	ClassRateLimited   = "rate_limited"
	ClassTimeout       = "timeout"
	ClassAssertion     = "assertion"
	ClassOther         = "other"
)

// Epoch is one execution of the case in one run.
type Epoch struct {
	Verdict Verdict
	// Class is the reason class of an errored or timed-out epoch; empty otherwise.
	Class string
}

// Run is one run of the suite, as far as one cell is concerned.
type Run struct {
	ID     string
	Time   time.Time
	Epochs []Epoch
}

// Cell names a case × agent × model of a suite: the unit a label belongs to.
type Cell struct {
	Suite, Skill, Case, Agent, Model string
}

// History is one cell's runs over a window, oldest first.
type History struct {
	Cell Cell
	Runs []Run
	// Confidence is the case's `confidence`: the share of a run's decided epochs that must
	// pass for the run to pass. 0 (unset) or anything outside (0, 1] means 1.
	Confidence float64
}

// Label is what a cell is called.
type Label string

// The labels. The zero Label means "no previous label" when passed as one.
const (
	Flaky        Label = "flaky"
	StablePass   Label = "stable-pass"
	StableFail   Label = "stable-fail"
	Insufficient Label = "insufficient"
)

// Config holds the thresholds of the labelling. A zero field means its default (see
// DefaultConfig and the package documentation for why each is what it is).
type Config struct {
	// MinRuns is the fewest decided runs a cell needs before it gets a label.
	MinRuns int
	// Window is how many of the latest runs are considered; the history may hold more.
	Window int
	// MaxAge, when positive, leaves out runs older than Now − MaxAge; it needs Now. It trims
	// from the front, relying on the history being oldest first.
	MaxAge time.Duration
	// Now is the time MaxAge counts back from; the package has no clock of its own.
	Now time.Time
	// EnterFlipRate is the flip rate at or above which a cell becomes flaky.
	EnterFlipRate float64
	// Band is how far from 0 and from 1 the pass rate's interval must stay for a cell to
	// become flaky.
	Band float64
	// ExitRuns is how many of the latest decided runs decide whether a flaky cell has calmed.
	ExitRuns int
	// ExitFlips is the most changes among the last ExitRuns decided runs of a calm cell. It has
	// no zero-means-default rule: its default is 0.
	ExitFlips int
	// Infra are the reason classes that mark an infrastructure failure, left out of every
	// statistic. Nil means ClassSandbox, ClassModelEndpoint and ClassRateLimited.
	Infra []string
}

// DefaultConfig is the labelling's defaults, spelled out.
func DefaultConfig() Config {
	return Config{
		MinRuns:       5,
		Window:        20,
		EnterFlipRate: 0.3,
		Band:          0.05,
		ExitRuns:      6,
		ExitFlips:     0,
		Infra:         []string{ClassSandbox, ClassModelEndpoint, ClassRateLimited},
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.MinRuns <= 0 {
		c.MinRuns = d.MinRuns
	}
	if c.Window <= 0 {
		c.Window = d.Window
	}
	if c.EnterFlipRate <= 0 {
		c.EnterFlipRate = d.EnterFlipRate
	}
	if c.Band <= 0 {
		c.Band = d.Band
	}
	if c.ExitRuns <= 0 {
		c.ExitRuns = d.ExitRuns
	}
	// Two runs are the fewest that can show a change at all.
	c.ExitRuns = max(c.ExitRuns, 2)
	c.ExitFlips = max(c.ExitFlips, 0)
	// Infra stays nil for the default: isInfra knows it without a slice per call.
	return c
}

// Evidence is what a label rests on, for the report and the CLI to print.
type Evidence struct {
	// Runs is the runs considered: those in the window (and within MaxAge).
	Runs int `json:"runs"`
	// Decided is the runs with at least one passed or failed epoch.
	Decided int `json:"decided"`
	// InfraRuns is the runs left out with nothing decided and at least one infrastructure
	// failure; EmptyRuns the other runs left out (every epoch skipped or reused, or none).
	// InfraEpochs counts the infrastructure failures wherever they occurred, decided runs
	// included.
	InfraRuns   int `json:"infra_runs"`
	EmptyRuns   int `json:"empty_runs"`
	InfraEpochs int `json:"infra_epochs"`
	// NotRunEpochs is the skipped and reused epochs (and any of an unknown verdict).
	NotRunEpochs int `json:"not_run_epochs"`
	// EpochsPassed of EpochsDecided is the epoch-level record, for the reader; the rates are
	// over runs.
	EpochsPassed  int `json:"epochs_passed"`
	EpochsDecided int `json:"epochs_decided"`
	// MixedRuns is the decided runs whose decided epochs disagreed.
	MixedRuns int `json:"mixed_runs"`
	// Passed is the decided runs whose outcome was a pass.
	Passed int `json:"passed"`
	// Flips is how many consecutive decided runs changed outcome; FlipRate is Flips over
	// Decided − 1 (0 with fewer than two decided runs).
	Flips    int     `json:"flips"`
	FlipRate float64 `json:"flip_rate"`
	// PassRate is Passed / Decided, with its 95% Wilson interval ([0, 1] when nothing was
	// decided).
	PassRate float64        `json:"pass_rate"`
	Interval stats.Interval `json:"interval"`
	// RecentRuns and RecentFlips are the last ExitRuns decided runs (fewer if there are not
	// that many) and the changes among them: the exit rule's evidence.
	RecentRuns  int `json:"recent_runs"`
	RecentFlips int `json:"recent_flips"`
	// Outcomes is the decided runs' outcomes, oldest first: P for pass, F for fail.
	Outcomes string `json:"outcomes"`
	// LastFlipRun is the id of the latest run whose outcome differed from the decided run
	// before it, and LastFlipTime its time; empty without a flip.
	LastFlipRun  string    `json:"last_flip_run,omitempty"`
	LastFlipTime time.Time `json:"last_flip_time,omitzero"`
	// From and To are the times of the first and the last run considered.
	From time.Time `json:"from,omitzero"`
	To   time.Time `json:"to,omitzero"`
	// Reason says in words why the cell got its label.
	Reason string `json:"reason"`
}

// Assessment is a cell's label and its evidence.
type Assessment struct {
	Cell     Cell
	Label    Label
	Evidence Evidence
}
