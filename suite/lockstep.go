package suite

import (
	"cmp"
	"slices"
)

// LockstepSkill is a skill of a plan with a baseline whose comparison can run group-sequentially:
// its compared cases run in lockstep in both arms, and the comparison may stop at a look.
type LockstepSkill struct {
	Skill string
	// Cases counts its compared cases (case × agent), Epochs their max_runs.
	Cases  int
	Epochs int
}

// Lockstep lists, in name order, the skills of a plan with a without_skill or old_skill
// baseline whose compared cases (those in both arms) are all `runs: auto` with one max_runs of
// two or more and none `parallel: false`, and says how many skills are compared in all (the
// comparison's family, for its level). The coordinator runs exactly these skills'
// comparisons group-sequentially; plan --baseline shows them beforehand.
func (p *Plan) Lockstep() (skills []LockstepSkill, compared int) {
	if p.Baseline != ArmWithoutSkill && p.Baseline != ArmOldSkill {
		return nil, 0
	}
	type cellKey struct {
		skill, name, agent string
	}
	type cell struct {
		with, base int  // jobs in each arm
		lockstep   bool // every job's case `runs: auto` and parallel
	}
	cells := map[cellKey]*cell{}
	var order []cellKey
	for _, j := range p.Jobs {
		k := cellKey{j.Case.Skill.Name, j.Case.Name, j.Agent}
		c := cells[k]
		if c == nil {
			c = &cell{lockstep: true}
			cells[k] = c
			order = append(order, k)
		}
		c.lockstep = c.lockstep && j.Case.Sequential && j.Case.Parallel
		switch j.Arm {
		case ArmWithSkill:
			c.with++
		case p.Baseline:
			c.base++
		}
	}
	type skillState struct {
		cases, epochs int
		ok            bool
	}
	bySkill := map[string]*skillState{}
	for _, k := range order {
		c := cells[k]
		if c.with == 0 || c.base == 0 {
			continue // not compared
		}
		s := bySkill[k.skill]
		if s == nil {
			s = &skillState{epochs: c.with, ok: true}
			bySkill[k.skill] = s
		}
		s.cases++
		if !c.lockstep || c.with != s.epochs || c.base != s.epochs {
			s.ok = false
		}
	}
	for name, s := range bySkill {
		if s.ok && s.epochs >= 2 {
			skills = append(skills, LockstepSkill{Skill: name, Cases: s.cases, Epochs: s.epochs})
		}
	}
	slices.SortFunc(skills, func(a, b LockstepSkill) int { return cmp.Compare(a.Skill, b.Skill) })
	return skills, len(bySkill)
}
