package history

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/internal/tenant"
)

const runColumns = `run_id, team, suite, lane, state, reason, created_ms, finished_ms, total_jobs, done_jobs,
	cases_total, cases_passed, cases_failed, cases_errored, cases_timed_out, cases_skipped, cases_reused`

type scanner interface{ Scan(dest ...any) error }

func scanRun(sc scanner) (Run, error) {
	var (
		r        Run
		created  int64
		finished sql.NullInt64
	)
	err := sc.Scan(&r.ID, &r.Team, &r.Suite, &r.Lane, &r.State, &r.Reason, &created, &finished, &r.TotalJobs, &r.DoneJobs,
		&r.Cases.Total, &r.Cases.Passed, &r.Cases.Failed, &r.Cases.Errored, &r.Cases.TimedOut, &r.Cases.Skipped, &r.Cases.Reused)
	if err != nil {
		return Run{}, err
	}
	r.CreatedAt = time.UnixMilli(created).UTC()
	if finished.Valid {
		r.FinishedAt = time.UnixMilli(finished.Int64).UTC()
	}
	return r, nil
}

// Run returns a stored run.
func (s *Store) Run(ctx context.Context, id string) (Run, error) {
	r, err := scanRun(s.db.QueryRowContext(ctx, s.d.bind(`SELECT `+runColumns+` FROM runs WHERE run_id = $1`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return Run{}, fmt.Errorf("history: run %s: %w", id, err)
	}
	return r, nil
}

// PreviousRun returns the last completed run of the same team, suite and lane created before
// the run id (ties on the creation time broken by id); ok is false when there is none. The run
// itself must be stored.
func (s *Store) PreviousRun(ctx context.Context, id string) (prev Run, ok bool, err error) {
	cur, err := s.Run(ctx, id)
	if err != nil {
		return Run{}, false, err
	}
	return s.PreviousRunOf(ctx, cur.Team, cur.Suite, cur.Lane, cur.CreatedAt, cur.ID)
}

// PreviousRunOf is PreviousRun for a run that need not be stored yet (its rows may still be
// queued in a Writer): the last completed run of the team's suite and lane created before
// created (ties broken by id). Team "" is tenant.DefaultTeam.
func (s *Store) PreviousRunOf(ctx context.Context, team, suite, lane string, created time.Time, id string) (prev Run, ok bool, err error) {
	prev, err = scanRun(s.db.QueryRowContext(ctx, s.d.bind(`SELECT `+runColumns+` FROM runs
WHERE team = $1 AND suite = $2 AND lane = $3 AND state = 'completed' AND (created_ms < $4 OR (created_ms = $5 AND run_id < $6))
ORDER BY created_ms DESC, run_id DESC LIMIT 1`), tenant.Team(team), suite, lane, created.UnixMilli(), created.UnixMilli(), id))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, false, nil
	}
	if err != nil {
		return Run{}, false, fmt.Errorf("history: the run before %s: %w", id, err)
	}
	return prev, true, nil
}

const resultSelect = `SELECT run_id, job_id, team, suite, lane, skill, case_name, agent, model, judge_model, arm,
	epoch, attempt, verdict, reason_class, reason, prompt_tokens, completion_tokens, cost,
	duration_ms, case_digest, finished_ms, recorded_ms, cell_key, cell_digest, reused_from, agent_version FROM results`

func scanResult(sc scanner) (Result, error) {
	var (
		r                  Result
		finished, recorded int64
	)
	err := sc.Scan(&r.RunID, &r.JobID, &r.Team, &r.Suite, &r.Lane, &r.Skill, &r.Case, &r.Agent, &r.Model, &r.JudgeModel, &r.Arm,
		&r.Epoch, &r.Attempt, &r.Verdict, &r.ReasonClass, &r.Reason, &r.PromptTokens, &r.CompletionTokens, &r.Cost,
		&r.DurationMS, &r.CaseDigest, &finished, &recorded, &r.CellKey, &r.CellDigest, &r.ReusedFrom, &r.AgentVersion)
	r.FinishedAt, r.RecordedAt = time.UnixMilli(finished).UTC(), time.UnixMilli(recorded).UTC()
	return r, err
}

// RunResults returns a run's results ordered by skill, case, agent, arm, epoch and job id.
func (s *Store) RunResults(ctx context.Context, id string) ([]Result, error) {
	rows, err := s.db.QueryContext(ctx, s.d.bind(resultSelect+` WHERE run_id = $1
ORDER BY skill, case_name, agent, arm, epoch, job_id`), id)
	if err != nil {
		return nil, fmt.Errorf("history: results of %s: %w", id, err)
	}
	defer rows.Close()
	var out []Result
	for rows.Next() {
		r, err := scanResult(rows)
		if err != nil {
			return nil, fmt.Errorf("history: results of %s: %w", id, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history: results of %s: %w", id, err)
	}
	return out, nil
}

// CellKey names a case × agent × model (and arm) of a suite.
type CellKey struct {
	Skill, Case, Agent, Model, Arm string
}

// CellVerdict is one job's verdict in a cell's history.
type CellVerdict struct {
	RunID       string
	RunCreated  time.Time
	Epoch       int
	Verdict     string
	ReasonClass string
}

// Cell is a cell's verdicts over its last runs, newest run first (epochs in order).
type Cell struct {
	CellKey
	Verdicts []CellVerdict
}

// RecentVerdicts returns, for every cell of the team's suite's finished runs in the lane (""
// for every lane), its verdicts in the last n finished runs it appeared in: what flaky
// detection reads. Runs still in progress are left out; the reason classes let infrastructure
// failures be left out too. Team "" is tenant.DefaultTeam.
func (s *Store) RecentVerdicts(ctx context.Context, team, suite, lane string, n int) ([]Cell, error) {
	if n <= 0 {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx, s.d.bind(`SELECT skill, case_name, agent, model, arm, run_id, created_ms, epoch, verdict, reason_class FROM (
	SELECT r.skill, r.case_name, r.agent, r.model, r.arm, r.run_id, ru.created_ms, r.epoch, r.verdict, r.reason_class,
		DENSE_RANK() OVER (PARTITION BY r.skill, r.case_name, r.agent, r.model, r.arm
			ORDER BY ru.created_ms DESC, ru.run_id DESC) AS k
	FROM results r JOIN runs ru ON ru.run_id = r.run_id
	WHERE ru.team = $1 AND ru.suite = $2 AND ($3 = '' OR ru.lane = $4) AND ru.finished_ms IS NOT NULL
) ranked WHERE k <= $5
ORDER BY skill, case_name, agent, model, arm, k, epoch`), tenant.Team(team), suite, lane, lane, n)
	if err != nil {
		return nil, fmt.Errorf("history: recent verdicts of %s: %w", suite, err)
	}
	defer rows.Close()
	var out []Cell
	for rows.Next() {
		var (
			k       CellKey
			v       CellVerdict
			created int64
		)
		if err := rows.Scan(&k.Skill, &k.Case, &k.Agent, &k.Model, &k.Arm, &v.RunID, &created, &v.Epoch, &v.Verdict, &v.ReasonClass); err != nil {
			return nil, fmt.Errorf("history: recent verdicts of %s: %w", suite, err)
		}
		v.RunCreated = time.UnixMilli(created).UTC()
		if len(out) == 0 || out[len(out)-1].CellKey != k {
			out = append(out, Cell{CellKey: k})
		}
		out[len(out)-1].Verdicts = append(out[len(out)-1].Verdicts, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history: recent verdicts of %s: %w", suite, err)
	}
	return out, nil
}

// WindowVerdicts returns, for every cell of the team's suite's last n finished runs in the lane
// ("" for every lane), leaving out the run exclude (the run being reported, which the caller
// adds itself), its verdicts in those runs, newest run first. Unlike RecentVerdicts the window
// is the suite's runs, not each cell's: a case added last week has fewer runs in it. That
// makes it an index lookup of n runs rather than a ranking of every stored result, which is
// what lets a report built at the end of each run read it. Team "" is tenant.DefaultTeam.
func (s *Store) WindowVerdicts(ctx context.Context, team, suite, lane string, n int, exclude string) ([]Cell, error) {
	if n <= 0 {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx, s.d.bind(`SELECT run_id, created_ms FROM runs
WHERE team = $1 AND suite = $2 AND ($3 = '' OR lane = $4) AND finished_ms IS NOT NULL AND run_id <> $5
ORDER BY created_ms DESC, run_id DESC LIMIT $6`), tenant.Team(team), suite, lane, lane, exclude, n)
	if err != nil {
		return nil, fmt.Errorf("history: the last runs of %s: %w", suite, err)
	}
	type runAt struct {
		id      string
		created time.Time
	}
	var runs []runAt
	for rows.Next() {
		var (
			r  runAt
			ms int64
		)
		if err := rows.Scan(&r.id, &ms); err != nil {
			rows.Close()
			return nil, fmt.Errorf("history: the last runs of %s: %w", suite, err)
		}
		r.created = time.UnixMilli(ms).UTC()
		runs = append(runs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history: the last runs of %s: %w", suite, err)
	}
	byKey := map[CellKey]int{}
	var out []Cell
	// Run by run, newest first: each is a primary-key range of the results table.
	for _, r := range runs {
		rs, err := s.db.QueryContext(ctx, s.d.bind(`SELECT skill, case_name, agent, model, arm, epoch, verdict, reason_class
FROM results WHERE run_id = $1 ORDER BY skill, case_name, agent, model, arm, epoch`), r.id)
		if err != nil {
			return nil, fmt.Errorf("history: verdicts of %s: %w", r.id, err)
		}
		for rs.Next() {
			var (
				k CellKey
				v = CellVerdict{RunID: r.id, RunCreated: r.created}
			)
			if err := rs.Scan(&k.Skill, &k.Case, &k.Agent, &k.Model, &k.Arm, &v.Epoch, &v.Verdict, &v.ReasonClass); err != nil {
				rs.Close()
				return nil, fmt.Errorf("history: verdicts of %s: %w", r.id, err)
			}
			i, ok := byKey[k]
			if !ok {
				i = len(out)
				byKey[k] = i
				out = append(out, Cell{CellKey: k})
			}
			out[i].Verdicts = append(out[i].Verdicts, v)
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return nil, fmt.Errorf("history: verdicts of %s: %w", r.id, err)
		}
	}
	slices.SortFunc(out, func(a, b Cell) int {
		return cmp.Or(strings.Compare(a.Skill, b.Skill), strings.Compare(a.Case, b.Case), strings.Compare(a.Agent, b.Agent),
			strings.Compare(a.Model, b.Model), strings.Compare(a.Arm, b.Arm))
	})
	return out, nil
}
