// Package comparison compares two sets of results (two runs of a suite, or two arms of one
// run: with and without a skill, a new and an old version) paired on case identity. It turns
// the results a report counts into package stats' cases, calls stats.Compare, lists what
// changed case by case, refuses sets whose configurations differ outside the compared axis,
// and renders the comparison as text, JSON and JUnit properties. It also holds the gates of
// `test` and `submit` (FailIfWorse, FailUnlessBetter).
//
// It is pure: no I/O bar the writers it is given.
//
// A case is identified by skill, case name and agent: the same case run against two agents is
// two cases. Only decided epochs (passed, failed) make a pass rate; errored and timed-out ones
// are left out and counted, never turned into a pass or a fail.
package comparison

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/stats"
)

// Side is one of the two sets compared.
type Side struct {
	// Label names the side for a reader: "run r1", "without_skill".
	Label string
	// Run is the id of the run the results come from.
	Run string
	// Arm is the configuration the results ran in ("with_skill", "without_skill",
	// "old_skill"); empty means "with_skill", what every result is until runs have arms.
	Arm string
	// Spec is the run's spec (its limits), when known; nil skips the limits check.
	Spec *pb.RunSpec
	// Results are the results the run's report counts (coordinator.AcceptedResults), of
	// this arm only, as RecordsOf (or Records) keeps them.
	Results []Record
}

// Axis is what a comparison is allowed to find different between its two sides.
type Axis int

const (
	// AxisSkill compares two runs of the same suite in the same arm: the skill's own files may
	// differ (that is what is compared), nothing else may.
	AxisSkill Axis = iota
	// AxisArm compares two arms of one run (or of two runs): the arm differs, and only it.
	AxisArm
)

// WithSkill is the arm every result has until runs have arms.
const WithSkill = "with_skill"

// Options tunes a comparison; the zero value compares two runs with seed 0.
type Options struct {
	Axis Axis
	// Seed makes the resampling methods reproducible (see stats.Options).
	Seed uint64
	// MinEffect is the difference in pass rate the comparison should be able to detect
	// (--min-effect); a group whose design cannot is marked underpowered. 0 means
	// stats.DefaultMinEffect.
	MinEffect float64
	// AA says the two sides are the same arm run twice (an A/A run, --aa): the report then
	// carries the suite's noise floor (Report.Noise).
	AA bool
	// Sequential are the group-sequential comparisons of the run's skills (its report's
	// Sequential): such a skill is compared over its epochs up to the look it stopped at,
	// with its sequential p-value (see stats.Options.Sequential).
	Sequential []stats.SequentialResult
}

// Report is a comparison of side B against side A (B minus A), with what changed.
type Report struct {
	A, B       Side
	Axis       Axis
	Comparison stats.Comparison
	Changes    Changes
	// Noise is the noise floor of an A/A comparison (Options.AA); nil otherwise.
	Noise *Noise
}

// caseKey identifies a case across the two sides.
type caseKey struct{ skill, name, agent string }

// caseName is the name a case has in package stats: its name, with the agent when there is one.
func (k caseKey) caseName() string {
	if k.agent == "" {
		return k.name
	}
	return k.name + " [" + k.agent + "]"
}

// group is one case's results in one side, sorted by epoch.
type group struct {
	key caseKey
	// name is key.caseName(), made once: sorting and pairing compare it often.
	name   string
	epochs []*Record
}

// compareGroups orders groups by skill, then case name.
func compareGroups(x, y *group) int {
	return cmp.Or(cmp.Compare(x.key.skill, y.key.skill), cmp.Compare(x.name, y.name))
}

// groupResults gathers a side's results by case, sorted by case then epoch. The epochs of all
// groups share one backing array: a run of 100,000 cases is not 100,000 small allocations.
func groupResults(results []Record) []group {
	index := make(map[caseKey]int32, len(results)/2)
	of := make([]int32, len(results))
	var counts []int32
	for i := range results {
		r := &results[i]
		k := caseKey{r.Skill, r.Case, r.Agent}
		g, ok := index[k]
		if !ok {
			g = int32(len(counts))
			index[k] = g
			counts = append(counts, 0)
		}
		counts[g]++
		of[i] = g
	}
	out := make([]group, len(counts))
	for k, g := range index {
		out[g].key, out[g].name = k, k.caseName()
	}
	slab := make([]*Record, len(results))
	start := 0
	for g, n := range counts {
		out[g].epochs = slab[start : start : start+int(n)]
		start += int(n)
	}
	for i := range results {
		out[of[i]].epochs = append(out[of[i]].epochs, &results[i])
	}
	slices.SortFunc(out, func(x, y group) int { return compareGroups(&x, &y) })
	for _, g := range out {
		slices.SortFunc(g.epochs, func(x, y *Record) int { return cmp.Compare(x.Epoch, y.Epoch) })
	}
	return out
}

// StatsVerdict maps a result's verdict to the stats package's; an unknown verdict is errored, so
// it is left out, never a pass.
func StatsVerdict(v pb.Verdict) stats.Verdict {
	switch v {
	case pb.Verdict_VERDICT_PASSED:
		return stats.Passed
	case pb.Verdict_VERDICT_FAILED:
		return stats.Failed
	case pb.Verdict_VERDICT_TIMED_OUT:
		return stats.TimedOut
	case pb.Verdict_VERDICT_SKIPPED, pb.Verdict_VERDICT_REUSED:
		// A reused epoch did not run in its side: no observation, like a skipped one.
		return stats.Skipped
	}
	return stats.Errored
}

// casesOf makes the stats cases of grouped results.
func casesOf(groups []group) []stats.Case {
	out := make([]stats.Case, len(groups))
	epochs := make([]stats.Epoch, 0, countEpochs(groups))
	for i, g := range groups {
		start := len(epochs)
		for _, r := range g.epochs {
			epochs = append(epochs, stats.Epoch{
				Verdict:  StatsVerdict(r.Verdict),
				Tokens:   r.Tokens,
				Cost:     r.Cost,
				Duration: time.Duration(r.DurationMS) * time.Millisecond,
			})
		}
		out[i] = stats.Case{Skill: g.key.skill, Case: g.name, Epochs: epochs[start:len(epochs):len(epochs)]}
	}
	return out
}

func countEpochs(groups []group) int {
	n := 0
	for _, g := range groups {
		n += len(g.epochs)
	}
	return n
}

// Compare compares side b against side a. It refuses (a *RefusalError) when their
// configurations differ outside opt.Axis, and fails when the sides are not two distinct sets.
func Compare(a, b Side, opt Options) (*Report, error) {
	if a.Arm == "" {
		a.Arm = WithSkill
	}
	if b.Arm == "" {
		b.Arm = WithSkill
	}
	var seq map[string]stats.SequentialResult
	if len(opt.Sequential) > 0 {
		seq = make(map[string]stats.SequentialResult, len(opt.Sequential))
		for _, s := range opt.Sequential {
			seq[s.Skill] = s
		}
		a.Results, b.Results = upToLook(a.Results, seq), upToLook(b.Results, seq)
	}
	ga, gb := groupResults(a.Results), groupResults(b.Results)
	if err := check(a, b, ga, gb, opt.Axis); err != nil {
		return nil, err
	}
	c, err := stats.Compare(casesOf(ga), casesOf(gb), stats.Options{Seed: opt.Seed, MinEffect: opt.MinEffect, Sequential: seq})
	if err != nil {
		return nil, fmt.Errorf("comparison: %w", err)
	}
	r := &Report{A: a, B: b, Axis: opt.Axis, Comparison: c, Changes: diff(ga, gb)}
	if opt.AA {
		r.Noise = noiseOf(c.Cases)
	}
	return r, nil
}

// upToLook leaves out the records of a group-sequentially compared skill after the epochs of
// the look it stopped at: the with_skill arm's epochs that ran on for their own verdicts, and
// any withdrawn job that ran all the same, are not part of the comparison the stop decided.
func upToLook(records []Record, seq map[string]stats.SequentialResult) []Record {
	var out []Record
	for i, r := range records {
		s, ok := seq[r.Skill]
		if !ok || int(r.Epoch) <= s.EpochsRun {
			if out != nil {
				out = append(out, r)
			}
			continue
		}
		if out == nil {
			out = append(make([]Record, 0, len(records)), records[:i]...)
		}
	}
	if out == nil {
		return records
	}
	return out
}
