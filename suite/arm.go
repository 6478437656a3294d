package suite

import (
	"fmt"
	"slices"
	"strings"

	"github.com/skillfleet/skillfleet/bundle"
	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/skill"
)

// Arm is one configuration of a compared run (DESIGN.md, after the agentskills.io evaluation
// guide): the skill as it is, no skill at all, or the skill's previous version.
type Arm string

// The arms of a run. ArmWithSkill is every job of a run without a baseline.
const (
	ArmWithSkill    Arm = "with_skill"
	ArmWithoutSkill Arm = "without_skill"
	ArmOldSkill     Arm = "old_skill"
	// ArmA2 is the with_skill arm run a second time (an A/A run, --aa): every case runs in
	// it, interleaved, exactly as in with_skill (arm a), so that every difference between
	// the two is chance. It measures a suite's noise floor.
	ArmA2 Arm = "a2"
)

// ParseArm checks a baseline arm's name as a run spec carries it: "" (no baseline),
// without_skill, old_skill, or a2 (an A/A run). with_skill is no baseline: every run has it.
func ParseArm(name string) (Arm, error) {
	switch a := Arm(name); a {
	case "", ArmWithoutSkill, ArmOldSkill, ArmA2:
		return a, nil
	}
	return "", fmt.Errorf("unknown baseline arm %q (want %s, %s or %s)", name, ArmWithoutSkill, ArmOldSkill, ArmA2)
}

// Baseline is the second arm of a run: its prompt cases run again, interleaved with the
// with_skill jobs, without the skill or against its previous version.
type Baseline struct {
	// Arm is ArmWithoutSkill or ArmOldSkill; "" plans no baseline.
	Arm Arm
	// Old is the previous versions' skills (ArmOldSkill): another skills root, resolved. Only
	// their SKILL.md and files are used; their test cases are not (the arms run the current
	// cases).
	Old *skill.Graph
}

// LoadOld discovers and resolves the skills of an old_skill baseline's roots. Their cases are
// not read: the arms run the current cases. A skill that does not parse is not in the graph,
// so its cases get no old_skill jobs (Plan warns).
func LoadOld(roots []string, opts skill.Options) *skill.Graph {
	cat, _ := skill.Discover(roots, opts)
	g, _ := skill.Resolve(cat, opts)
	return g
}

// baselinePath is where the old version of a skill lies in the bundle.
func baselinePath(name string) string { return bundle.BaselineDir + "/" + name }

// oldDirs returns the bundle directories of the old versions of skills and of their
// dependency closures as found in old, each under bundle.BaselineDir, and the old skills so
// bundled (name order). A selected skill old lacks has no old version.
func oldDirs(old *skill.Graph, skills []*skill.Skill) ([]bundle.Dir, []*skill.Skill) {
	if old == nil {
		return nil, nil
	}
	seen := map[string]bool{}
	var dirs []bundle.Dir
	var out []*skill.Skill
	for _, s := range skills {
		for _, dep := range old.Closure(s.Name) {
			if seen[dep.Name] {
				continue
			}
			seen[dep.Name] = true
			d := bundle.Dir{Name: baselinePath(dep.Name), Path: dep.Dir}
			for _, c := range old.Closure(dep.Name) {
				d.Closure = append(d.Closure, baselinePath(c.Name))
			}
			dirs = append(dirs, d)
			out = append(out, dep)
		}
	}
	slices.SortFunc(out, func(a, b *skill.Skill) int { return strings.Compare(a.Name, b.Name) })
	return dirs, out
}

// baselineArms returns the arms a case runs in: with_skill, and the baseline for a prompt case
// (a command case runs the skill's own script, with no agent to withhold a skill from) when
// the baseline has the case's skill. An A/A run's second arm is every case's: a command
// case's noise is a suite's noise too.
func (p *Plan) baselineArms(c *Case) []Arm {
	if p.Baseline == ArmA2 {
		return []Arm{ArmWithSkill, ArmA2}
	}
	if p.Baseline == "" || c.Kind != KindPrompt {
		return []Arm{ArmWithSkill}
	}
	if p.Baseline == ArmOldSkill && !p.hasOld[c.Skill.Name] {
		return []Arm{ArmWithSkill}
	}
	return []Arm{ArmWithSkill, p.Baseline}
}

// missingOld warns, once per skill, of selected cases whose skill the old root lacks: they
// run in the with_skill arm only.
func missingOld(cases []*Case, has map[string]bool) diag.Diagnostics {
	var ds diag.Diagnostics
	warned := map[string]bool{}
	for _, c := range cases {
		if c.Kind != KindPrompt || has[c.Skill.Name] || warned[c.Skill.Name] {
			continue
		}
		warned[c.Skill.Name] = true
		ds = append(ds, diag.Diagnostic{
			Rule: "plan.noOldSkill", Severity: diag.SeverityWarning, File: c.Skill.File, Line: 1,
			Message: fmt.Sprintf("the baseline has no skill %s: its cases get no old_skill jobs", c.Skill.Name),
		})
	}
	return ds
}

// missingDefaultBaseline warns, once per skill, of selected cases whose own format runs a
// baseline arm by default (a `claude plugin eval` case runs without the plugin too) when the
// run plans another arm or none: the arms are the run's, so the case runs in the run's arms
// only, and the warning says how to plan the one its author expected.
func missingDefaultBaseline(cases []*Case, arm Arm) diag.Diagnostics {
	var ds diag.Diagnostics
	warned := map[string]bool{}
	for _, c := range cases {
		if c.DefaultBaseline == "" || c.DefaultBaseline == arm || warned[c.Skill.Name] {
			continue
		}
		warned[c.Skill.Name] = true
		ds = append(ds, diag.Diagnostic{
			Rule: "plan.defaultBaseline", Severity: diag.SeverityWarning, File: c.File, Line: c.Line,
			Message: fmt.Sprintf("case %s/%s runs %s by default in Claude Code, but this run plans no %s arm; pass --baseline %s to compare with and without the skill",
				c.Skill.Name, c.Name, c.DefaultBaseline, c.DefaultBaseline, strings.ReplaceAll(string(c.DefaultBaseline), "_", "-")),
		})
	}
	return ds
}

// JobsOf counts the plan's jobs of one arm.
func (p *Plan) JobsOf(arm Arm) int {
	n := 0
	for _, j := range p.Jobs {
		if j.Arm == arm {
			n++
		}
	}
	return n
}
