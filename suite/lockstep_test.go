package suite

import (
	"fmt"
	"testing"

	"github.com/skillfleet/skillfleet/skill"
)

// TestLockstep: which skills of a plan with a baseline compare group-sequentially, and how
// many are compared in all.
func TestLockstep(t *testing.T) {
	type c struct {
		skill, name string
		auto        bool // runs: auto
		serial      bool // parallel: false
		runs        int
		command     bool // runs in the with_skill arm only
	}
	auto := func(skill, name string, runs int) c { return c{skill: skill, name: name, auto: true, runs: runs} }
	tests := []struct {
		name     string
		baseline Arm
		agents   []string
		cases    []c
		want     string // "skill:cases×epochs ..."
		compared int
	}{
		{name: "no baseline", cases: []c{auto("a", "x", 20)}, want: "", compared: 0},
		{name: "an A/A run has none", baseline: ArmA2, cases: []c{auto("a", "x", 20)}, want: "", compared: 0},
		{
			name: "auto cases of one max_runs", baseline: ArmWithoutSkill,
			cases: []c{auto("a", "x", 20), auto("a", "y", 20), auto("b", "z", 8)},
			want:  "a:2×20 b:1×8 ", compared: 2,
		},
		{
			name: "agents multiply the cases", baseline: ArmOldSkill, agents: []string{"m1", "m2"},
			cases: []c{auto("a", "x", 20)},
			want:  "a:2×20 ", compared: 1,
		},
		{
			// A command case runs once, in no comparison: it neither counts nor disqualifies.
			name: "command cases are not compared", baseline: ArmWithoutSkill,
			cases: []c{auto("a", "x", 10), {skill: "a", name: "cmd", runs: 3, command: true}},
			want:  "a:1×10 ", compared: 1,
		},
		{
			name: "a fixed runs disqualifies its skill, which is still compared", baseline: ArmWithoutSkill,
			cases: []c{auto("a", "x", 10), {skill: "a", name: "y", runs: 10}, auto("b", "z", 10)},
			want:  "b:1×10 ", compared: 2,
		},
		{
			name: "two max_runs disqualify", baseline: ArmWithoutSkill,
			cases: []c{auto("a", "x", 10), auto("a", "y", 20)},
			want:  "", compared: 1,
		},
		{
			name: "a serial case disqualifies", baseline: ArmWithoutSkill,
			cases: []c{auto("a", "x", 10), {skill: "a", name: "y", auto: true, serial: true, runs: 10}},
			want:  "", compared: 1,
		},
		{name: "one epoch has no look to stop at", baseline: ArmWithoutSkill, cases: []c{auto("a", "x", 1)}, want: "", compared: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Plan{Baseline: tt.baseline}
			skills := map[string]*skill.Skill{}
			agents := tt.agents
			if agents == nil {
				agents = []string{"m"}
			}
			for _, cs := range tt.cases {
				if skills[cs.skill] == nil {
					skills[cs.skill] = &skill.Skill{Name: cs.skill}
				}
				kase := &Case{Skill: skills[cs.skill], Name: cs.name, Runs: cs.runs, Sequential: cs.auto, Parallel: !cs.serial}
				arms := []Arm{ArmWithSkill}
				if tt.baseline != "" && !cs.command {
					arms = append(arms, tt.baseline)
				}
				for _, agent := range agents {
					for e := 1; e <= cs.runs; e++ {
						for _, arm := range arms {
							p.Jobs = append(p.Jobs, Job{Case: kase, Epoch: e, Agent: agent, Arm: arm})
						}
					}
				}
			}
			got, compared := p.Lockstep()
			s := ""
			for _, ls := range got {
				s += fmt.Sprintf("%s:%d×%d ", ls.Skill, ls.Cases, ls.Epochs)
			}
			if s != tt.want || compared != tt.compared {
				t.Errorf("Lockstep = %q, %d compared; want %q, %d", s, compared, tt.want, tt.compared)
			}
		})
	}
}
