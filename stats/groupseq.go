package stats

import (
	"fmt"
	"math"
)

// A group-sequential comparison of one skill's arms: the epochs of its cases run in lockstep
// in both arms and the paired test of Compare is taken at a few looks fixed by the plan; the
// comparison stops at the first look where it is significant or can no longer become so.
//
// The error rate is kept by alpha spending (Lan & DeMets 1983) with the O'Brien–Fleming-type
// spending function α(t) = 2 − 2Φ(z_{1−α/2}/√t), t the fraction of the planned epochs run:
// look j may spend α(t_j) − α(t_{j−1}). The per-look test is an exact permutation test, not a
// z statistic whose correlation across looks is known, so the spent alpha is not turned into
// Lan–DeMets' correlated boundaries: look j tests at its increment Δα_j alone (a Bonferroni
// split of α across the looks). The chance of any rejection under H0 is then at most ΣΔα_j = α
// whatever the correlation, which is conservative: correlated looks would allow more. The
// same split makes the skill's sequential p-value min_j p_j·α/Δα_j (a weighted Bonferroni
// combination over the looks taken) a valid p-value at every level, so Holm's adjustment
// across skills applies to it as to any other.

// The looks and spending of a group-sequential comparison.
const (
	// DefaultLooks is how many looks a comparison of MaxEpochs epochs plans (fewer when it
	// has fewer epochs): four equally spaced looks, the usual choice, keep most of the power of
	// a fixed design (the Bonferroni split leaves the last look 0.026 of α = 0.05) while a
	// large effect stops at half the epochs. Every look more takes from the last one's level.
	DefaultLooks = 4
	// Spending names the rule in reports.
	Spending = "obrien-fleming (lan-demets), bonferroni across looks"
)

// The reasons a group-sequential comparison stopped.
const (
	// StopSignificant: the sequential p-value reached α/Skills, so the skill is significant
	// after Holm's adjustment whatever the other skills show.
	StopSignificant = "significant"
	// StopFutile: no outcome of the epochs left could make it significant at any later look.
	StopFutile = "futile"
	// StopMax: it ran every planned epoch.
	StopMax = "max"
	// StopRunEnded: the run ended (cancelled, out of time or budget) before it stopped; it
	// is read over the looks it took.
	StopRunEnded = "run_ended"
)

// TestGroupSequential names the test of a group-sequentially compared skill in
// SkillComparison.Test: its P is the sequential p-value over the looks taken.
const TestGroupSequential = "group-sequential sign-flip"

// OBrienFlemingSpent is the alpha an O'Brien–Fleming-type spending function (Lan & DeMets
// 1983) has spent at information fraction t: 2 − 2Φ(z_{1−α/2}/√t), 0 at t ≤ 0 and α at t ≥ 1.
// It spends almost nothing early (9e-5 of 0.05 at t = 1/4), so early looks stop only on
// overwhelming evidence and the last keeps most of α.
func OBrienFlemingSpent(alpha, t float64) float64 {
	switch {
	case t <= 0:
		return 0
	case t >= 1:
		return alpha
	}
	// 2 − 2Φ(x) = erfc(x/√2).
	return math.Erfc(zQuantile(1-alpha/2) / math.Sqrt(t) / math.Sqrt2)
}

// GroupSequential is the plan of one skill's group-sequential comparison. It depends on the
// plan alone (epochs, cases, skills), never on results.
type GroupSequential struct {
	// Alpha is the level of the whole comparison (the family's, before Holm).
	Alpha float64 `json:"alpha"`
	// Skills is the number of skills compared in the run: a look stops for significance at
	// Alpha/Skills, the level Holm's adjustment asks of the most significant skill, so a skill
	// stopped as significant is significant in the run's comparison.
	Skills int `json:"skills"`
	// Epochs is the epochs planned per case and arm (max_runs).
	Epochs int `json:"epochs_planned"`
	// Looks are the epoch counts at which the comparison is looked at, increasing, the last
	// being Epochs.
	Looks []int `json:"looks"`
	// Levels are the alpha each look may spend (Δα_j), summing to Alpha. A look whose increment
	// no exact test of the skill's cases could reach (below 2^(1−cases)) spends nothing and
	// passes its increment to the next look: it can still stop for futility.
	Levels   []float64 `json:"levels"`
	Spending string    `json:"spending"`
}

// NewGroupSequential plans the comparison of a skill of cases paired cases (cases × agents)
// over epochs epochs per case and arm, among skills compared skills, at level alpha, with
// looks equally spaced looks (at most one per epoch; at epoch ⌈j·epochs/looks⌉). It refuses a
// plan with fewer than two looks: there would be nothing to stop early.
func NewGroupSequential(alpha float64, epochs, looks, cases, skills int) (GroupSequential, error) {
	switch {
	case !(alpha > 0 && alpha < 1):
		return GroupSequential{}, fmt.Errorf("alpha must lie in (0, 1), not %g", alpha)
	case epochs < 2 || looks < 2:
		return GroupSequential{}, fmt.Errorf("a group-sequential comparison needs two looks or more, not %d looks over %d epochs", looks, epochs)
	case cases < 1 || skills < 1:
		return GroupSequential{}, fmt.Errorf("a group-sequential comparison needs cases and skills, not %d and %d", cases, skills)
	}
	g := GroupSequential{Alpha: alpha, Skills: skills, Epochs: epochs, Spending: Spending}
	looks = min(looks, epochs)
	for j := 1; j <= looks; j++ {
		e := (j*epochs + looks - 1) / looks
		if len(g.Looks) == 0 || e > g.Looks[len(g.Looks)-1] {
			g.Looks = append(g.Looks, e)
		}
	}
	// The smallest p-value the paired test of the skill's cases can give: 2·2^-n for n
	// differing cases (McNemar's and the sign-flip test alike), and 1/(1+draws) when the
	// sign-flip test is Monte Carlo.
	floor := math.Exp2(1 - float64(cases))
	if cases > ExactSignFlipMax {
		floor = min(floor, 1/float64(1+DefaultDraws))
	}
	spent, carried := 0.0, 0.0
	for j, e := range g.Looks {
		at := OBrienFlemingSpent(alpha, float64(e)/float64(epochs))
		level := at - spent + carried
		spent = at
		carried = 0
		if level < floor && j < len(g.Looks)-1 {
			carried, level = level, 0
		}
		g.Levels = append(g.Levels, level)
	}
	return g, nil
}

// P is the sequential p-value after the looks whose p-values are ps (ps[j] at look j+1):
// min_j ps[j]·Alpha/Levels[j], at most 1. Under H0 it is at most u with probability at most u
// (a union bound over the looks), whichever looks were taken and however the stop was decided.
func (g GroupSequential) P(ps []float64) float64 {
	p := 1.0
	for j, pj := range ps {
		if j < len(g.Levels) && g.Levels[j] > 0 {
			p = min(p, pj*g.Alpha/g.Levels[j])
		}
	}
	return p
}

// Decide is the decision after look len(ps) (ps as in P), whose cases in arms a and b are
// their epochs up to that look: StopSignificant, StopFutile, StopMax at the last look, or ""
// to go on to the next look.
//
// Futility is decided by a sound bound rather than exactly: at a later look k, with r more
// epochs per case and arm, a case's difference can end anywhere between its B arm failing
// and its A arm passing every one of them, and the other way round. When at most n cases can
// end with a positive difference and at most n with a negative one, no outcome gives a
// p-value below 2^(1−n): the sign patterns that flip only cases of the sign opposite to the
// sum's (and their mirror images) are always as extreme as the observed one, and McNemar's
// exact p is bounded the same way. The comparison is futile when its sequential p-value is
// above Alpha and, at every later look, that bound is above the look's level. It is exact in
// one direction only: a skill it calls futile can no longer become significant, but one it
// lets go on may prove unable to.
func (g GroupSequential) Decide(ps []float64, a, b []Case, opt Options) (string, error) {
	j := len(ps) - 1
	if j < 0 || j >= len(g.Looks) {
		return "", fmt.Errorf("look %d of a comparison planned with %d", j+1, len(g.Looks))
	}
	if g.Levels[j] > 0 && ps[j] <= g.Levels[j]/float64(g.Skills) {
		return StopSignificant, nil
	}
	if j == len(g.Looks)-1 {
		return StopMax, nil
	}
	if g.P(ps) <= g.Alpha {
		return "", nil
	}
	diffs, err := pairCases(a, b)
	if err != nil {
		return "", err
	}
	draws := opt.Draws
	if draws <= 0 {
		draws = DefaultDraws
	}
	for k := j + 1; k < len(g.Looks); k++ {
		if g.Levels[k] <= 0 {
			continue
		}
		if lowestP(diffs, g.Looks[k]-g.Looks[j], draws) <= g.Levels[k] {
			return "", nil
		}
	}
	return StopFutile, nil
}

// lowestP is a lower bound on the p-value of the paired test of cases after r more epochs of
// each case in each arm, whatever their outcomes (see Decide).
func lowestP(cases []CaseDiff, r, draws int) float64 {
	pos, neg := 0, 0
	for _, c := range cases {
		loA, hiA, okA := rateRange(c.A, r)
		loB, hiB, okB := rateRange(c.B, r)
		if !okA || !okB {
			continue // never paired
		}
		if hiB-loA > 0 {
			pos++
		}
		if loB-hiA < 0 {
			neg++
		}
	}
	p := math.Exp2(1 - float64(max(pos, neg)))
	if pos+neg > ExactSignFlipMax {
		// A Monte Carlo p-value can be as low as 1/(1+draws) whatever the cases.
		p = min(p, 1/float64(1+draws))
	}
	return p
}

// rateRange is the range of pass rates an arm's case can end with after r more epochs: all
// failing at the low end, all passing at the high end (an epoch left out, errored, moves the
// rate less than a failure or a pass would). ok is false when it can have no decided epoch.
func rateRange(c CaseArm, r int) (lo, hi float64, ok bool) {
	n := c.Decided + r
	if n == 0 {
		return 0, 0, false
	}
	return float64(c.Passed) / float64(n), float64(c.Passed+r) / float64(n), true
}

// LookP is the p-value of the paired test Compare makes of one skill's cases, a and b being
// its cases in each arm (their epochs up to the look): the same test, without the intervals.
func LookP(a, b []Case, opt Options) (p float64, test string, err error) {
	if opt.Draws <= 0 {
		opt.Draws = DefaultDraws
	}
	diffs, err := pairCases(a, b)
	if err != nil {
		return 0, "", err
	}
	var d []float64
	single := true
	onlyA, onlyB := 0, 0
	skill := ""
	for _, c := range diffs {
		if !c.Paired {
			continue
		}
		skill = c.Skill
		d = append(d, c.Delta)
		if c.A.Decided != 1 || c.B.Decided != 1 {
			single = false
			continue
		}
		switch pa, pb := c.A.Passed == 1, c.B.Passed == 1; {
		case pa && !pb:
			onlyA++
		case pb && !pa:
			onlyB++
		}
	}
	if len(d) == 0 {
		return 1, TestNone, nil
	}
	test, p, _ = pairedTest(diffs, d, single, onlyA, onlyB, opt, newStream(opt.Seed, skill))
	return p, test, nil
}

// SequentialResult is where a skill's group-sequential comparison stopped, and why.
type SequentialResult struct {
	// Skill is the skill compared, where a list of results names it.
	Skill string `json:"skill,omitempty"`
	GroupSequential
	// PLooks are the p-values of the looks taken, in order.
	PLooks []float64 `json:"p_looks"`
	// StoppedAtLook is the look it stopped at (1-based), EpochsRun its epoch count.
	StoppedAtLook int `json:"stopped_at_look"`
	EpochsRun     int `json:"epochs_run"`
	// Reason is StopSignificant, StopFutile or StopMax.
	Reason string `json:"reason"`
	// P is the sequential p-value (GroupSequential.P over PLooks), before Holm's adjustment.
	P float64 `json:"p_sequential"`
}

// Result is the comparison stopped after the looks whose p-values are ps, for reason.
func (g GroupSequential) Result(ps []float64, reason string) SequentialResult {
	r := SequentialResult{GroupSequential: g, PLooks: append([]float64(nil), ps...), StoppedAtLook: len(ps), Reason: reason, P: g.P(ps)}
	if len(ps) > 0 && len(ps) <= len(g.Looks) {
		r.EpochsRun = g.Looks[len(ps)-1]
	}
	return r
}
