package history

import (
	"context"
	"database/sql"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/internal/tenant"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// resultColumns are the results table's columns in the order resultArgs gives them.
var resultColumns = []string{
	"run_id", "job_id", "team", "suite", "lane", "skill", "case_name", "agent", "model", "judge_model", "arm",
	"epoch", "attempt", "verdict", "reason_class", "reason", "prompt_tokens", "completion_tokens", "cost",
	"duration_ms", "case_digest", "finished_ms", "recorded_ms", "cell_key", "cell_digest", "reused_from",
	"agent_version",
}

func resultArgs(r *Result) []any {
	return []any{
		r.RunID, r.JobID, tenant.Team(r.Team), r.Suite, r.Lane, r.Skill, r.Case, r.Agent, r.Model, r.JudgeModel, r.Arm,
		r.Epoch, r.Attempt, r.Verdict, r.ReasonClass, r.Reason, r.PromptTokens, r.CompletionTokens, r.Cost,
		r.DurationMS, r.CaseDigest, r.FinishedAt.UnixMilli(), r.RecordedAt.UnixMilli(), r.CellKey, r.CellDigest, r.ReusedFrom,
		r.AgentVersion,
	}
}

// upsertSet is the SET clause that replaces a stored row's every column but its key.
func upsertSet() string {
	var b strings.Builder
	for i, c := range resultColumns[2:] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s = excluded.%s", c, c)
	}
	return b.String()
}

// rowsPerInsert bounds one INSERT's rows so that its parameters stay under both backends'
// limits (SQLite 32766, PostgreSQL 65535).
const rowsPerInsert = 500

// WriteResults stores results in one transaction, replacing any row with the same run and job:
// a result replayed from JetStream, or a later attempt, overwrites rather than duplicates.
func (s *Store) WriteResults(ctx context.Context, rs []Result) error {
	if len(rs) == 0 {
		return nil
	}
	if s.d.copy {
		return s.copyWrite(ctx, nil, rs)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	defer tx.Rollback()
	if err := s.insertResults(ctx, tx, rs); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	return nil
}

func (s *Store) insertResults(ctx context.Context, tx *sql.Tx, rs []Result) error {
	update := upsertSet()
	rs = lastPerJob(rs)
	for len(rs) > 0 {
		n := min(len(rs), rowsPerInsert)
		var q strings.Builder
		q.WriteString("INSERT INTO results (" + strings.Join(resultColumns, ", ") + ") VALUES ")
		args := make([]any, 0, n*len(resultColumns))
		for i := range rs[:n] {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteByte('(')
			for j := range resultColumns {
				if j > 0 {
					q.WriteString(", ")
				}
				q.WriteString(s.d.ph(len(args) + j + 1))
			}
			q.WriteByte(')')
			args = append(args, resultArgs(&rs[i])...)
		}
		q.WriteString(" ON CONFLICT (run_id, job_id) DO UPDATE SET " + update)
		if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("history: writing %d results: %w", n, err)
		}
		rs = rs[n:]
	}
	return nil
}

// lastPerJob keeps the last row of each (run, job): PostgreSQL refuses an upsert that would
// touch one row twice in a statement.
func lastPerJob(rs []Result) []Result {
	type key struct{ run, job string }
	last := make(map[key]int, len(rs))
	for i := range rs {
		last[key{rs[i].RunID, rs[i].JobID}] = i
	}
	if len(last) == len(rs) {
		return rs
	}
	out := make([]Result, 0, len(last))
	for i := range rs {
		if last[key{rs[i].RunID, rs[i].JobID}] == i {
			out = append(out, rs[i])
		}
	}
	return out
}

const runInsert = `INSERT INTO runs (run_id, team, suite, lane, state, reason, created_ms, finished_ms, total_jobs, done_jobs,
	cases_total, cases_passed, cases_failed, cases_errored, cases_timed_out, cases_skipped, cases_reused)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`

func runArgs(r *Run) []any {
	var finished any
	if !r.FinishedAt.IsZero() {
		finished = r.FinishedAt.UnixMilli()
	}
	return []any{r.ID, tenant.Team(r.Team), r.Suite, r.Lane, r.State, r.Reason, r.CreatedAt.UnixMilli(), finished, r.TotalJobs, r.DoneJobs,
		r.Cases.Total, r.Cases.Passed, r.Cases.Failed, r.Cases.Errored, r.Cases.TimedOut, r.Cases.Skipped, r.Cases.Reused}
}

// execer is a *sql.DB, a *sql.Tx or a pgxExecer.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// writeRun stores a run. A finished run replaces what is stored; an unfinished one is only
// added when missing, so a late or replayed progress row never takes a finished run back.
func (s *Store) writeRun(ctx context.Context, e execer, r *Run) error {
	q := runInsert
	if r.FinishedAt.IsZero() {
		q += " ON CONFLICT (run_id) DO NOTHING"
	} else {
		q += ` ON CONFLICT (run_id) DO UPDATE SET team = excluded.team, suite = excluded.suite, lane = excluded.lane, state = excluded.state,
	reason = excluded.reason, created_ms = excluded.created_ms, finished_ms = excluded.finished_ms,
	total_jobs = excluded.total_jobs, done_jobs = excluded.done_jobs, cases_total = excluded.cases_total,
	cases_passed = excluded.cases_passed, cases_failed = excluded.cases_failed, cases_errored = excluded.cases_errored,
	cases_timed_out = excluded.cases_timed_out, cases_skipped = excluded.cases_skipped,
	cases_reused = excluded.cases_reused`
	}
	if _, err := e.ExecContext(ctx, s.d.bind(q), runArgs(r)...); err != nil {
		return fmt.Errorf("history: writing run %s: %w", r.ID, err)
	}
	return nil
}

// WriteRun stores a run (see writeRun for how a stored run is updated).
func (s *Store) WriteRun(ctx context.Context, r Run) error {
	return s.writeRun(ctx, s.db, &r)
}

// write stores a batch: runs first, so that every result's run has a row, then results.
func (s *Store) write(ctx context.Context, runs []Run, rs []Result) error {
	if s.d.copy {
		return s.copyWrite(ctx, runs, rs)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	defer tx.Rollback()
	for i := range runs {
		if err := s.writeRun(ctx, tx, &runs[i]); err != nil {
			return err
		}
	}
	if err := s.insertResults(ctx, tx, rs); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	return nil
}

// Backfill stores a run and its results from an iterator (the results stream, replayed), in
// batches. It is idempotent: a result already stored is replaced by the same row. An error
// from the iterator stops it after the batches already written.
func (s *Store) Backfill(ctx context.Context, st *pb.RunStatus, results iter.Seq2[*pb.Result, error]) (int, error) {
	run := FromStatus(st)
	if err := s.WriteRun(ctx, run); err != nil {
		return 0, err
	}
	now := time.Now()
	batch := make([]Result, 0, rowsPerInsert)
	// The first result of a job is the one the coordinator counted (later attempts of a
	// redelivered job are duplicates to it), so it is the one kept.
	seen := make(map[string]bool)
	n := 0
	flush := func() error {
		if err := s.WriteResults(ctx, batch); err != nil {
			return err
		}
		n += len(batch)
		batch = batch[:0]
		return nil
	}
	for res, err := range results {
		if err != nil {
			return n, fmt.Errorf("history: backfilling run %s: %w", run.ID, err)
		}
		if res.GetRunId() != run.ID || seen[res.GetJobId()] {
			continue
		}
		seen[res.GetJobId()] = true
		batch = append(batch, FromResult(res, st.GetSpec(), now))
		if len(batch) == cap(batch) {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	return n, flush()
}

// DeleteBefore deletes results that finished before cutoff, then runs created before it
// that have no result left, then the archives (WriteArchive) of runs deleted, then the audit
// entries (AppendAudit) from before cutoff, in batches of at most batch rows so that no
// transaction holds the database for long. It returns how many results and runs it deleted.
func (s *Store) DeleteBefore(ctx context.Context, cutoff time.Time, batch int) (results, runs int, err error) {
	if batch <= 0 {
		batch = 10_000
	}
	c := cutoff.UnixMilli()
	delResults := s.d.bind(`DELETE FROM results WHERE (run_id, job_id) IN
	(SELECT run_id, job_id FROM results WHERE finished_ms < $1 LIMIT $2)`)
	delRuns := s.d.bind(`DELETE FROM runs WHERE run_id IN
	(SELECT run_id FROM runs WHERE created_ms < $1
		AND NOT EXISTS (SELECT 1 FROM results WHERE results.run_id = runs.run_id) LIMIT $2)`)
	// A run's archive goes with its row (archived results are not counted: they are the
	// same results as the rows).
	var archived int
	delArchived := s.d.bind(`DELETE FROM result_archives WHERE (run_id, seq) IN
	(SELECT run_id, seq FROM result_archives WHERE run_id NOT IN (SELECT run_id FROM runs) LIMIT $1)`)
	delArchives := s.d.bind(`DELETE FROM run_archives WHERE run_id IN
	(SELECT run_id FROM run_archives WHERE run_id NOT IN (SELECT run_id FROM runs) LIMIT $1)`)
	var audited int
	delAudit := s.d.bind(`DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE at_ms < $1 LIMIT $2)`)
	for _, step := range []struct {
		q    string
		n    *int
		args []any
	}{{delResults, &results, []any{c, batch}}, {delRuns, &runs, []any{c, batch}}, {delArchived, &archived, []any{batch}},
		{delArchives, &archived, []any{batch}}, {delAudit, &audited, []any{c, batch}}} {
		for {
			res, err := s.db.ExecContext(ctx, step.q, step.args...)
			if err != nil {
				return results, runs, fmt.Errorf("history: retention: %w", err)
			}
			k, err := res.RowsAffected()
			if err != nil {
				return results, runs, fmt.Errorf("history: retention: %w", err)
			}
			*step.n += int(k)
			if k < int64(batch) {
				break
			}
		}
	}
	return results, runs, nil
}
