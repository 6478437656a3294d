package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/fleet"
	"github.com/skillfleet/skillfleet/history"
	"github.com/skillfleet/skillfleet/internal/tenant"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	runreport "github.com/skillfleet/skillfleet/report"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
)

// reusePlan is what `plan --changed-only` shows: the plan expanded for the agents a local run
// would use (--agent, else the --config file's), and for each of its jobs the run a
// changed-only run would offer it the reuse of ("" for a job that would run). The offer is
// taken when the run runs only if the cell digest with the workers' agent configuration and
// sandbox image is the one that run recorded; plan cannot see those, so it shows offers.
func reusePlan(ctx context.Context, e *env, roots []string, f *suiteFlags, s *suite.Suite, p *suite.Plan, target, suiteName string) (*suite.Plan, []string, error) {
	cfg, limits, err := f.suiteConfig(e, roots)
	if err != nil {
		return nil, nil, err
	}
	agents := f.agents
	if len(agents) == 0 && cfg != nil {
		for _, a := range cfg.Agents {
			agents = append(agents, a.Name)
		}
	}
	if len(agents) > 0 {
		if p, err = p.Expand(agents, 0); err != nil {
			return nil, nil, failf("plan: %v", err)
		}
	}
	// The skills of the bundle the run would upload: a prompt job's key covers their SKILL.md.
	skills := make([]*skill.Skill, 0, len(p.Skills))
	for _, sd := range p.Skills {
		if sk := s.Catalog.Lookup(sd.Name); sk != nil {
			skills = append(skills, sk)
		}
	}
	keys, err := coordinator.CellKeys(&pb.RunSpec{Agents: agents, Limits: limits, Baseline: string(p.Baseline)}, p, skills)
	if err != nil {
		return nil, nil, failf("plan: %v", err)
	}
	hc, err := localHistory(target, e)
	if err != nil {
		return nil, nil, err
	}
	if hc.Target == fleet.HistoryOff {
		return nil, nil, usageErrorf("--changed-only reads the history of earlier runs: --history off has none")
	}
	store, err := history.Open(ctx, history.Options{Target: hc.Target, Password: hc.Password})
	if err != nil {
		return nil, nil, failf("%v", err)
	}
	defer store.Close()
	epochs := map[string]int{}
	for i, j := range p.Jobs {
		epochs[keys[i]] = runreport.NormalizeEpochs(j.Case.Runs)
	}
	// A local history's runs are `skillfleet test`'s, which name no team.
	found, err := store.Reusable(ctx, tenant.DefaultTeam, suiteName, time.Now().Add(-f.reuseWithin), "", epochs)
	if err != nil {
		return nil, nil, failf("%v", err)
	}
	from := make([]string, len(p.Jobs))
	for i := range p.Jobs {
		from[i] = found[keys[i]].Run
	}
	return p, from, nil
}

// reuseSummary is plan's last line for --changed-only: how many jobs would run.
func reuseSummary(from []string) string {
	reused := 0
	for _, r := range from {
		if r != "" {
			reused++
		}
	}
	return fmt.Sprintf("changed-only: %d of %d jobs would run, %d would be offered the reuse of a passing run (taken if the workers' agents and sandbox image are unchanged)", len(from)-reused, len(from), reused)
}
