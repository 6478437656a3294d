package stats

import "time"

// Verdict is the outcome of one epoch, as the report counts it.
type Verdict uint8

// The verdicts of an epoch. Only Passed and Failed decide a pass rate.
const (
	Passed Verdict = iota + 1
	Failed
	Errored
	TimedOut
	Skipped
)

// Epoch is one execution of a case in one arm.
type Epoch struct {
	Verdict Verdict
	Tokens  int64
	// Cost is in whatever unit the run reports (the same in both arms).
	Cost     float64
	Duration time.Duration
}

// Case is the epochs of one case in one arm. Skill and Case together are the identity the two
// arms are paired on; a caller comparing agents leaves the agent out of Case, a caller comparing
// anything else puts it in.
type Case struct {
	Skill  string
	Case   string
	Epochs []Epoch
}

// Options tunes the resampling methods. The zero value is usable.
type Options struct {
	// Seed makes the bootstrap and the Monte Carlo sign flips reproducible.
	Seed uint64
	// Resamples is the number of bootstrap resamples of a group; 0 means DefaultResamples. A
	// group of more than 100,000 cases gets fewer (at least 200), to bound the work; the
	// number used is in SkillComparison.Resamples.
	Resamples int
	// Draws is the number of Monte Carlo sign-flip draws of a group; 0 means DefaultDraws. A
	// group of more than 5,000 differing cases gets fewer (at least 1,000), to bound the work;
	// the number used is in SkillComparison.Draws.
	Draws int
	// MinEffect is the difference in pass rate a design must be able to detect not to be
	// underpowered; 0 means DefaultMinEffect.
	MinEffect float64
	// Sequential holds, by skill, the skills whose comparison was group-sequential and where it
	// stopped: such a skill's P is its sequential p-value (SequentialResult.P) and its Test
	// TestGroupSequential. The caller gives its cases' epochs up to EpochsRun only.
	Sequential map[string]SequentialResult
}

// The defaults of Options, and the work budgets that bound a comparison of a huge run.
const (
	DefaultResamples = 1000
	DefaultDraws     = 10000
	// ExactSignFlipMax is the largest number of differing cases whose 2^n sign patterns are
	// enumerated outright.
	ExactSignFlipMax = 20
	// Alpha is the significance level, after Holm's adjustment; intervals are 1-Alpha = 95%.
	Alpha = 0.05
)

// Interval is a two-sided 95% confidence interval.
type Interval struct {
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// Contains reports whether x lies in the closed interval.
func (iv Interval) Contains(x float64) bool { return iv.Lo <= x && x <= iv.Hi }

// The tests a comparison may use, named in SkillComparison.Test.
const (
	TestNone               = "none" // no paired case: nothing to test
	TestMcNemarExact       = "mcnemar-exact"
	TestSignFlipExact      = "sign-flip-exact"
	TestSignFlipMonteCarlo = "sign-flip-monte-carlo"
)

// The intervals a comparison may use, named in SkillComparison.IntervalMethod.
const (
	IntervalNone      = "none"
	IntervalNewcombe  = "newcombe-paired-10"
	IntervalBootstrap = "bootstrap-percentile"
)

// CaseArm is what one arm did with one case.
type CaseArm struct {
	// Present is false when the arm has no such case.
	Present bool `json:"present"`
	Passed  int  `json:"passed"`
	// Decided counts the passed and failed epochs, the only ones a pass rate is made of.
	Decided int `json:"decided"`
	// LeftOut counts the errored and timed-out epochs.
	LeftOut int `json:"left_out"`
	Skipped int `json:"skipped"`
	// Tokens, Cost and Seconds are means over the decided epochs.
	Tokens  float64 `json:"tokens"`
	Cost    float64 `json:"cost"`
	Seconds float64 `json:"seconds"`
}

// Rate is the pass rate over the decided epochs; 0 when none was decided.
func (c CaseArm) Rate() float64 {
	if c.Decided == 0 {
		return 0
	}
	return float64(c.Passed) / float64(c.Decided)
}

// CaseDiff is one case in both arms.
type CaseDiff struct {
	Skill string  `json:"skill"`
	Case  string  `json:"case"`
	A     CaseArm `json:"a"`
	B     CaseArm `json:"b"`
	// Paired is true when both arms decided at least one epoch of the case; only paired cases
	// enter a comparison.
	Paired bool `json:"paired"`
	// Delta is B's pass rate minus A's, when Paired.
	Delta float64 `json:"delta"`
}

// ArmSummary is one arm over the paired cases of a group, and what it left out.
type ArmSummary struct {
	// PassRate is the mean of the paired cases' pass rates, each case weighing the same.
	PassRate float64 `json:"pass_rate"`
	// Epochs counts the decided epochs of the paired cases.
	Epochs int `json:"epochs"`
	// LeftOut counts the errored and timed-out epochs of every case of the group in this arm,
	// paired or not; Skipped the skipped ones.
	LeftOut int `json:"left_out"`
	Skipped int `json:"skipped"`
}

// Delta is a paired mean difference (B minus A) of a per-case measure, with the two means.
type Delta struct {
	A        float64  `json:"a"`
	B        float64  `json:"b"`
	Mean     float64  `json:"mean"`
	Interval Interval `json:"interval"`
}

// SkillComparison is the comparison of one skill's cases, or of all cases of the run.
type SkillComparison struct {
	// Skill is empty in Comparison.Overall.
	Skill string `json:"skill"`
	// Cases counts the paired cases; Unpaired the cases both arms have but one of them decided
	// no epoch of; OnlyA and OnlyB the cases one arm does not have.
	Cases    int `json:"cases"`
	Unpaired int `json:"unpaired"`
	OnlyA    int `json:"only_a"`
	OnlyB    int `json:"only_b"`

	A ArmSummary `json:"a"`
	B ArmSummary `json:"b"`
	// Delta is B.PassRate minus A.PassRate: the mean paired difference in pass rate.
	Delta          float64  `json:"delta"`
	Interval       Interval `json:"interval"`
	IntervalMethod string   `json:"interval_method"`
	// Resamples is the number of bootstrap resamples behind the intervals that use them.
	Resamples int `json:"resamples"`

	// Tested is false when there was no paired case; P is then 1.
	Tested bool   `json:"tested"`
	Test   string `json:"test"`
	// Draws is the number of Monte Carlo draws behind P, when Test is the Monte Carlo one.
	Draws int     `json:"draws,omitempty"`
	P     float64 `json:"p"`
	// PAdjusted is P after Holm's adjustment across the skills of the comparison (Overall: P).
	PAdjusted   float64 `json:"p_adjusted"`
	Significant bool    `json:"significant"`

	Tokens  Delta `json:"tokens"`
	Cost    Delta `json:"cost"`
	Seconds Delta `json:"seconds"`

	// MinDetectable is the smallest difference in pass rate this group's design (its paired
	// cases, its epochs, the variance of its per-case differences) detects at Alpha with
	// probability Power, as MinDetectable estimates it; nil when none of at most 1 is
	// (fewer than MinDifferingCases paired cases, or too much noise). It is computed at
	// Alpha, not at the stricter level Holm's adjustment asks of a skill among several, so a
	// skill it calls underpowered is so at least.
	MinDetectable *float64 `json:"min_detectable"`
	// MinEffect is the difference the comparison was asked to be able to see (--min-effect);
	// Underpowered is true when MinDetectable is larger (or nil): "not significant" then
	// says little, since the design could not have seen MinEffect.
	MinEffect    float64 `json:"min_effect"`
	Underpowered bool    `json:"underpowered"`
	PowerMethod  string  `json:"power_method"`

	// Sequential is where the skill's group-sequential comparison stopped and why; nil for a
	// comparison of every epoch.
	Sequential *SequentialResult `json:"sequential,omitempty"`
}

// Comparison is two arms compared, per skill and over the whole run.
type Comparison struct {
	// PerSkill is sorted by skill name.
	PerSkill []SkillComparison `json:"per_skill"`
	Overall  SkillComparison   `json:"overall"`
	// Cases is every case of either arm, sorted by skill and case.
	Cases []CaseDiff `json:"cases"`
	Seed  uint64     `json:"seed"`
}
