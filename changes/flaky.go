package changes

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/skillfleet/skillfleet/comparison"
	"github.com/skillfleet/skillfleet/flaky"
	"github.com/skillfleet/skillfleet/history"
	"github.com/skillfleet/skillfleet/report"
)

// Windows is what the flaky list reads of the history; *history.Store is one.
type Windows interface {
	WindowVerdicts(ctx context.Context, team, suite, lane string, n int, exclude string) ([]history.Cell, error)
}

// FlakyCells lists the cells labelled flaky over the team's suite's last window of finished
// runs in the lane ("" for every lane), with their evidence, in skill, case, agent and model
// order. Cases' confidence is not stored, so a run's outcome here is "every decided epoch
// passed". Team "" is tenant.DefaultTeam.
func FlakyCells(ctx context.Context, s Windows, team, suite, lane string, cfg flaky.Config) ([]report.FlakyCell, error) {
	cells, err := s.WindowVerdicts(ctx, team, suite, lane, flakyWindow(cfg), "")
	if err != nil {
		return nil, err
	}
	var out []report.FlakyCell
	for _, c := range cells {
		if c.Arm != comparison.WithSkill {
			continue
		}
		runs := appendVerdicts(nil, c.Verdicts)
		slices.Reverse(runs)
		a := replay(flaky.History{Cell: flaky.Cell{Suite: suite, Skill: c.Skill, Case: c.Case, Agent: c.Agent, Model: c.Model}, Runs: runs}, cfg)
		if a.Label == flaky.Flaky {
			out = append(out, report.FlakyCell{Skill: c.Skill, Case: c.Case, Agent: c.Agent, Model: c.Model, Evidence: Evidence(a.Evidence)})
		}
	}
	return out, nil
}

// Quarantine applies q to the with_skill cases of rep, a report of suite: a listed cell is
// quarantined whatever its label, a case marked flaky (Annotate) when q quarantines flaky
// cells.
func Quarantine(rep *report.Report, suite string, q flaky.Quarantine) {
	rep.Quarantine(func(c report.Case) string {
		var (
			l     flaky.Label
			model string
		)
		if c.Flaky != nil {
			l, model = flaky.Flaky, c.Flaky.Model
		}
		return q.Decide(flaky.Cell{Suite: suite, Skill: c.Skill, Case: c.Case, Agent: c.Agent, Model: model}, l).Reason
	})
}

// ParseQuarantineFile reads a quarantine list: one cell per line, skill/case or
// skill/case@agent (the first "/" ends the skill, the last "@" starts the agent); blank lines
// and lines starting with # are ignored.
func ParseQuarantineFile(r io.Reader) ([]flaky.Cell, error) {
	var out []flaky.Cell
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		skill, rest, ok := strings.Cut(line, "/")
		if !ok || skill == "" || rest == "" {
			return nil, fmt.Errorf("quarantine file line %d: %q is not skill/case[@agent]", n, line)
		}
		c := flaky.Cell{Skill: skill, Case: rest}
		if i := strings.LastIndexByte(rest, '@'); i >= 0 {
			c.Case, c.Agent = rest[:i], rest[i+1:]
			if c.Case == "" || c.Agent == "" {
				return nil, fmt.Errorf("quarantine file line %d: %q is not skill/case[@agent]", n, line)
			}
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("quarantine file: %w", err)
	}
	return out, nil
}
