package history

import (
	"context"
	"fmt"
	"time"

	"github.com/skillfleet/skillfleet/internal/tenant"
)

// SkillRun is one run of a suite as one of its skills saw it: the verdicts of the skill's jobs
// (every epoch and agent of its cases, in the with_skill arm) in that run.
type SkillRun struct {
	RunID string
	Lane  string
	// State is the run's state (see Run.State).
	State     string
	CreatedAt time.Time
	// Jobs by counted verdict.
	Passed, Failed, Errored, TimedOut, Skipped int
}

// Decided is how many of the skill's jobs passed or failed: the denominator of its pass rate.
func (r SkillRun) Decided() int { return r.Passed + r.Failed }

// SkillRuns returns the last n runs of the team's suite in the lane ("" for every lane) that
// ran the skill, newest first, with the verdicts of the skill's jobs in each: what a skill's
// page shows over time. Runs still going are included (their State says so) with the results
// written so far. Team "" is tenant.DefaultTeam.
func (s *Store) SkillRuns(ctx context.Context, team, suite, lane, skill string, n int) ([]SkillRun, error) {
	if n <= 0 {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx, s.d.bind(`SELECT ru.run_id, ru.lane, ru.state, ru.created_ms, r.verdict, COUNT(*)
FROM runs ru JOIN results r ON r.run_id = ru.run_id
WHERE ru.run_id IN (
	SELECT x.run_id FROM runs x
	WHERE x.team = $1 AND x.suite = $2 AND ($3 = '' OR x.lane = $4)
		AND EXISTS (SELECT 1 FROM results y WHERE y.run_id = x.run_id AND y.skill = $5)
	ORDER BY x.created_ms DESC, x.run_id DESC LIMIT $6)
	AND r.skill = $7 AND r.arm = 'with_skill'
GROUP BY ru.run_id, ru.lane, ru.state, ru.created_ms, r.verdict
ORDER BY ru.created_ms DESC, ru.run_id DESC`), tenant.Team(team), suite, lane, lane, skill, n, skill)
	if err != nil {
		return nil, fmt.Errorf("history: runs of skill %s in %s: %w", skill, suite, err)
	}
	defer rows.Close()
	var out []SkillRun
	for rows.Next() {
		var (
			r       SkillRun
			created int64
			verdict string
			count   int
		)
		if err := rows.Scan(&r.RunID, &r.Lane, &r.State, &created, &verdict, &count); err != nil {
			return nil, fmt.Errorf("history: runs of skill %s in %s: %w", skill, suite, err)
		}
		if len(out) == 0 || out[len(out)-1].RunID != r.RunID {
			r.CreatedAt = time.UnixMilli(created).UTC()
			out = append(out, r)
		}
		last := &out[len(out)-1]
		switch verdict {
		case "passed":
			last.Passed += count
		case "failed":
			last.Failed += count
		case "errored":
			last.Errored += count
		case "timed_out":
			last.TimedOut += count
		case "skipped":
			last.Skipped += count
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history: runs of skill %s in %s: %w", skill, suite, err)
	}
	return out, nil
}
