package changes

import (
	"context"

	"github.com/skillfleet/skillfleet/comparison"
	"github.com/skillfleet/skillfleet/flaky"
)

// CaseRate is a case's record over its suite's last window of finished runs: the epochs that
// passed of those decided (infrastructure failures left out, as the flaky labels leave them),
// in the with_skill arm, its models' epochs together.
type CaseRate struct {
	Skill, Case, Agent string
	Passed, Decided    int
}

// PassRates reads the team's suite's per-case epoch record over the flaky labels' window of
// finished runs in the lane ("" for every lane): what plan --baseline estimates a comparison's
// noise from before any token is spent. Team "" is tenant.DefaultTeam.
func PassRates(ctx context.Context, s Windows, team, suite, lane string, cfg flaky.Config) ([]CaseRate, error) {
	cells, err := s.WindowVerdicts(ctx, team, suite, lane, flakyWindow(cfg), "")
	if err != nil {
		return nil, err
	}
	type key struct{ skill, name, agent string }
	index := map[key]int{}
	var out []CaseRate
	for _, c := range cells {
		if c.Arm != comparison.WithSkill {
			continue
		}
		runs := appendVerdicts(nil, c.Verdicts)
		a := flaky.Assess(flaky.History{Cell: flaky.Cell{Suite: suite, Skill: c.Skill, Case: c.Case, Agent: c.Agent, Model: c.Model}, Runs: runs}, "", cfg)
		k := key{c.Skill, c.Case, c.Agent}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, CaseRate{Skill: c.Skill, Case: c.Case, Agent: c.Agent})
		}
		out[i].Passed += a.Evidence.EpochsPassed
		out[i].Decided += a.Evidence.EpochsDecided
	}
	return out, nil
}
