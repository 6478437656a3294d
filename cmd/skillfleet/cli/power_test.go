package cli

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/changes"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
)

// powerPlan is a plan of a without_skill baseline: per skill, that many cases of runs epochs,
// each in both arms.
func powerPlan(runs int, skills map[string]int) *suite.Plan {
	p := &suite.Plan{Baseline: suite.ArmWithoutSkill}
	for _, name := range slices.Sorted(maps.Keys(skills)) {
		sk := &skill.Skill{Name: name}
		for i := range skills[name] {
			c := &suite.Case{Skill: sk, Name: fmt.Sprintf("c%03d", i), Runs: runs}
			for e := 1; e <= runs; e++ {
				p.Jobs = append(p.Jobs, suite.Job{Case: c, Epoch: e, Arm: suite.ArmWithSkill}, suite.Job{Case: c, Epoch: e, Arm: suite.ArmWithoutSkill})
			}
		}
	}
	return p
}

// TestEstimatePower: the plan's estimate against values computed by stats/testdata/power.py's
// mde(cases, variance), which solves δ·√cases = 1.95996·√(v + δ) + 0.84162·√(v + δ − δ²) for
// the mean variance v, at least 6/cases.
func TestEstimatePower(t *testing.T) {
	// Every case passed 9 of its last 10 epochs: 2·0.9·0.1·10/9 = 0.2 of epoch pairs disagree.
	ninety := func(p *suite.Plan) []changes.CaseRate {
		var out []changes.CaseRate
		for _, j := range p.Jobs {
			if j.Epoch == 1 && j.Arm == suite.ArmWithSkill {
				out = append(out, changes.CaseRate{Skill: j.Case.Skill.Name, Case: j.Case.Name, Passed: 9, Decided: 10})
			}
		}
		return out
	}
	tests := []struct {
		name        string
		plan        *suite.Plan
		history     bool
		mde         float64 // 0: none detectable
		under       bool
		underSkills []string
		fromHistory int
	}{
		// No history, 40 one-epoch cases: variance 0.3 (the assumption), mde(40, 0.3) = 0.345506.
		{name: "assumed", plan: powerPlan(1, map[string]int{"a": 40}), mde: 0.345506, under: true, underSkills: []string{"a"}},
		// History, 405 cases of 3 epochs: variance 0.2/3; overall mde(405, 0.2/3) = 0.046746;
		// a's 300 cases detect 10 points (0.056556), b's 100 do not (0.119442), and c's 5
		// cannot reach p ≤ 0.05 at all.
		{name: "history", plan: powerPlan(3, map[string]int{"a": 300, "b": 100, "c": 5}), history: true, mde: 0.046746, underSkills: []string{"b", "c"}, fromHistory: 405},
		// Five cases: nothing is detectable, however quiet.
		{name: "too few", plan: powerPlan(1, map[string]int{"a": 5}), history: true, under: true, underSkills: []string{"a"}, fromHistory: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rates []changes.CaseRate
			if tt.history {
				rates = ninety(tt.plan)
			}
			got := estimatePower(tt.plan, rates, 0.1)
			switch {
			case tt.mde == 0 && got.MinDetectable != nil:
				t.Errorf("min detectable %v, want none", *got.MinDetectable)
			case tt.mde != 0 && (got.MinDetectable == nil || math.Abs(*got.MinDetectable-tt.mde) > 1e-6):
				t.Errorf("min detectable %v, want %v", got.MinDetectable, tt.mde)
			}
			if got.Underpowered != tt.under || !slices.Equal(got.UnderpoweredSkills, tt.underSkills) || got.FromHistory != tt.fromHistory {
				t.Errorf("underpowered %v %v from history %d; want %v %v %d", got.Underpowered, got.UnderpoweredSkills, got.FromHistory, tt.under, tt.underSkills, tt.fromHistory)
			}
			var b strings.Builder
			got.write(&b, "nightly")
			if !strings.Contains(b.String(), "80% power") || tt.history != !strings.Contains(b.String(), "assumed") {
				t.Errorf("estimate in words:\n%s", b.String())
			}
		})
	}
}

// TestPlanPrintsPower: plan --baseline says, before any token is spent, whether the
// comparison could detect --min-effect, and what it assumed without a history; plan without a
// baseline says nothing of power.
func TestPlanPrintsPower(t *testing.T) {
	code, out, errOut := run("plan", "--baseline", "without-skill", "--history", "off", examples)
	if code != ExitOK || !strings.Contains(out, "power: the comparison of 6 cases") || !strings.Contains(out, "underpowered") || !strings.Contains(out, "assumed that two epochs of a case disagree 30%") {
		t.Errorf("plan --baseline: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = run("plan", "--baseline", "without-skill", "--history", "off", "--format", "json", examples)
	var doc struct{ Power *planPower }
	if err := json.Unmarshal([]byte(out), &doc); code != ExitOK || err != nil || doc.Power == nil || doc.Power.Cases != 6 || !doc.Power.Underpowered {
		t.Errorf("plan --baseline --format json: exit %d, %v, power %+v", code, err, doc.Power)
	}
	if code, out, _ := run("plan", "--history", "off", examples); code != ExitOK || strings.Contains(out, "power:") {
		t.Errorf("plan without a baseline: exit %d\n%s", code, out)
	}
	if code, _, errOut := run("plan", "--baseline", "without-skill", "--min-effect", "2", examples); code != ExitUsage || !strings.Contains(errOut, "--min-effect") {
		t.Errorf("--min-effect 2: exit %d, %s", code, errOut)
	}
}

// TestPlanShowsSequentialDesign: plan --baseline names the skills whose comparison may stop
// early, with the looks the coordinator will take, and says why a skill with a `runs: auto`
// case does not qualify.
func TestPlanShowsSequentialDesign(t *testing.T) {
	autoPlan := func(runs map[string][]int) *suite.Plan {
		p := &suite.Plan{Baseline: suite.ArmWithoutSkill}
		for _, name := range slices.Sorted(maps.Keys(runs)) {
			sk := &skill.Skill{Name: name}
			for i, n := range runs[name] {
				c := &suite.Case{Skill: sk, Name: fmt.Sprintf("c%03d", i), Runs: n, Sequential: true, Parallel: true}
				for e := 1; e <= n; e++ {
					p.Jobs = append(p.Jobs, suite.Job{Case: c, Epoch: e, Arm: suite.ArmWithSkill}, suite.Job{Case: c, Epoch: e, Arm: suite.ArmWithoutSkill})
				}
			}
		}
		return p
	}
	tests := []struct {
		name       string
		plan       *suite.Plan
		skills     string // "skill:looks" of the designs
		compared   int    // skills compared: each design's level is alpha over them
		candidates int
		words      string
	}{
		{
			// max_runs 20: looks at ⌈20j/4⌉; 12 cases: max_runs 10 gives ⌈10j/4⌉ = 3, 5, 8, 10.
			name:   "two skills",
			plan:   autoPlan(map[string][]int{"a": {20, 20, 20, 20, 20, 20, 20, 20, 20, 20}, "b": {10, 10}}),
			skills: "a:[5 10 15 20] b:[3 5 8 10] ", compared: 2, candidates: 2,
			words: "sequential: a: 10 cases × 20 epochs, looks at epochs 5, 10, 15, 20",
		},
		{
			name:   "two max_runs in one skill",
			plan:   autoPlan(map[string][]int{"a": {20, 10}}),
			skills: "", candidates: 1,
			words: "no comparison can stop early: 1 skill has a `runs: auto` case",
		},
		{name: "fixed runs", plan: powerPlan(3, map[string]int{"a": 10}), skills: "", candidates: 0, words: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := estimatePower(tt.plan, nil, 0.1)
			s := ""
			for _, d := range got.Sequential {
				sum := 0.0
				for _, l := range d.Levels {
					sum += l
				}
				if math.Abs(sum-0.05) > 1e-9 || d.Skills != tt.compared {
					t.Errorf("%s: levels %v sum to %v over %d skills; want 0.05", d.Skill, d.Levels, sum, d.Skills)
				}
				s += fmt.Sprintf("%s:%v ", d.Skill, d.Looks)
			}
			if s != tt.skills || got.SequentialCandidates != tt.candidates {
				t.Errorf("designs %q, %d candidates; want %q, %d", s, got.SequentialCandidates, tt.skills, tt.candidates)
			}
			var b strings.Builder
			got.write(&b, "nightly")
			if tt.words == "" && strings.Contains(b.String(), "sequential:") || !strings.Contains(b.String(), tt.words) {
				t.Errorf("in words:\n%s\nwant %q", b.String(), tt.words)
			}
		})
	}
}
