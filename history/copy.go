package history

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/skillfleet/skillfleet/internal/tenant"
)

// PostgreSQL's bulk path: a batch of results is streamed with COPY (binary format, encoded
// here as COPY reads it, without pgx's per-value reflection) straight into results when none
// of its rows is stored yet, the usual case; a batch holding a stored row (a result replayed
// after a coordinator restart) goes into a temporary staging table instead, then into results
// by one INSERT … SELECT … ON CONFLICT, which keeps the rule of every other write: a (run, job)
// already stored is replaced by the row written last.

// pgType is how a results column is sent in COPY's binary format.
type pgType byte

const (
	pgText pgType = iota
	pgInt4
	pgInt8
	pgFloat8
)

func (t pgType) sql() string {
	return [...]string{pgText: "TEXT", pgInt4: "INTEGER", pgInt8: "BIGINT", pgFloat8: "DOUBLE PRECISION"}[t]
}

// copyColumnTypes are resultColumns' types, in their order (migrations/postgres).
var copyColumnTypes = [...]pgType{
	pgText, pgText, pgText, pgText, pgText, pgText, pgText, pgText, pgText, pgText, pgText, // run_id … arm
	pgInt4, pgInt4, // epoch, attempt
	pgText, pgText, pgText, // verdict, reason_class, reason
	pgInt8, pgInt8, pgFloat8, pgInt8, // prompt_tokens, completion_tokens, cost, duration_ms
	pgText,         // case_digest
	pgInt8, pgInt8, // finished_ms, recorded_ms
	pgText, pgText, pgText, // cell_key, cell_digest, reused_from
	pgText, // agent_version
}

// The staging table lives as long as its session and is emptied by every commit; a rolled
// back transaction takes it away, and the next batch creates it again.
var (
	copyStagingDDL = func() string {
		var b strings.Builder
		b.WriteString("CREATE TEMP TABLE IF NOT EXISTS results_staging (")
		for i, c := range resultColumns {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(c + " " + copyColumnTypes[i].sql())
		}
		b.WriteString(") ON COMMIT DELETE ROWS")
		return b.String()
	}()
	copyStatement = "COPY results_staging (" + strings.Join(resultColumns, ", ") + ") FROM STDIN (FORMAT binary)"
	copyDirect    = "COPY results (" + strings.Join(resultColumns, ", ") + ") FROM STDIN (FORMAT binary)"
	copyUpsert    = "INSERT INTO results (" + strings.Join(resultColumns, ", ") + ") SELECT " + strings.Join(resultColumns, ", ") +
		" FROM results_staging ON CONFLICT (run_id, job_id) DO UPDATE SET " + upsertSet()
)

// pgxExecer runs writeRun's statements on a pgx transaction (their result is not read).
type pgxExecer struct{ tx pgx.Tx }

func (e pgxExecer) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	_, err := e.tx.Exec(ctx, q, args...)
	return nil, err
}

// copyWrite stores runs then results in one transaction over COPY (PostgreSQL only).
func (s *Store) copyWrite(ctx context.Context, runs []Run, rs []Result) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		tx, err := dc.(*stdlib.Conn).Conn().Begin(ctx)
		if err != nil {
			return fmt.Errorf("history: %w", err)
		}
		defer tx.Rollback(ctx)
		for i := range runs {
			if err := s.writeRun(ctx, pgxExecer{tx}, &runs[i]); err != nil {
				return err
			}
		}
		if rs = lastPerJob(rs); len(rs) > 0 {
			if err := copyResults(ctx, tx, rs); err != nil {
				return err
			}
		}
		if err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("history: %w", err)
		}
		return nil
	})
}

// copyResults writes rs, one row per (run, job), in tx. Most batches hold only new rows: they
// are copied straight into results, which spares the server a second copy of every row and
// the upsert's speculative insertion. A row already stored makes that copy fail; it is then
// undone, and the batch goes through the staging table and the upsert.
func copyResults(ctx context.Context, tx pgx.Tx, rs []Result) error {
	pc := tx.Conn().PgConn()
	if _, err := tx.Exec(ctx, "SAVEPOINT history_copy"); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	_, err := pc.CopyFrom(ctx, &copyReader{rows: rs}, copyDirect)
	if err == nil {
		return nil
	}
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); !ok || pgErr.Code != uniqueViolation {
		return fmt.Errorf("history: copying %d results: %w", len(rs), err)
	}
	if _, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT history_copy"); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if _, err := tx.Exec(ctx, copyStagingDDL); err != nil {
		return fmt.Errorf("history: staging %d results: %w", len(rs), err)
	}
	if _, err := pc.CopyFrom(ctx, &copyReader{rows: rs}, copyStatement); err != nil {
		return fmt.Errorf("history: copying %d results: %w", len(rs), err)
	}
	if _, err := tx.Exec(ctx, copyUpsert); err != nil {
		return fmt.Errorf("history: writing %d results: %w", len(rs), err)
	}
	return nil
}

// uniqueViolation is PostgreSQL's SQLSTATE for a duplicate key.
const uniqueViolation = "23505"

// copySignature opens a binary COPY stream: the signature, no flags, no header extension.
const copySignature = "PGCOPY\n\xff\r\n\x00" + "\x00\x00\x00\x00" + "\x00\x00\x00\x00"

// copyReader is a binary COPY stream of rows, encoded as COPY reads it: the rows are never
// held twice.
type copyReader struct {
	rows    []Result
	next    int
	started bool
	done    bool
	// buf holds what was encoded last, read up to off. It is encoded into again from its
	// start once read, so one buffer, grown to the longest row, serves the whole stream.
	buf []byte
	off int
}

func (r *copyReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if r.off == len(r.buf) && !r.fill() {
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		}
		k := copy(p[n:], r.buf[r.off:])
		n += k
		r.off += k
	}
	return n, nil
}

// fill encodes what comes next in the stream into buf; false once it has all been read.
func (r *copyReader) fill() bool {
	r.buf, r.off = r.buf[:0], 0
	switch {
	case !r.started:
		r.started = true
		r.buf = append(r.buf, copySignature...)
	case r.next < len(r.rows):
		r.buf = appendCopyRow(r.buf, &r.rows[r.next])
		r.next++
	case !r.done:
		r.done = true
		r.buf = binary.BigEndian.AppendUint16(r.buf, 0xffff) // the trailer: -1 fields
	default:
		return false
	}
	return true
}

// appendCopyRow appends one tuple in the order of resultColumns and copyColumnTypes.
func appendCopyRow(b []byte, r *Result) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(resultColumns)))
	for _, s := range []string{r.RunID, r.JobID, tenant.Team(r.Team), r.Suite, r.Lane, r.Skill, r.Case, r.Agent, r.Model, r.JudgeModel, r.Arm} {
		b = appendCopyText(b, s)
	}
	b = appendCopyInt4(b, r.Epoch)
	b = appendCopyInt4(b, r.Attempt)
	b = appendCopyText(b, r.Verdict)
	b = appendCopyText(b, r.ReasonClass)
	b = appendCopyText(b, r.Reason)
	b = appendCopyInt8(b, r.PromptTokens)
	b = appendCopyInt8(b, r.CompletionTokens)
	b = binary.BigEndian.AppendUint32(b, 8)
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(r.Cost))
	b = appendCopyInt8(b, r.DurationMS)
	b = appendCopyText(b, r.CaseDigest)
	b = appendCopyInt8(b, r.FinishedAt.UnixMilli())
	b = appendCopyInt8(b, r.RecordedAt.UnixMilli())
	b = appendCopyText(b, r.CellKey)
	b = appendCopyText(b, r.CellDigest)
	b = appendCopyText(b, r.ReusedFrom)
	return appendCopyText(b, r.AgentVersion)
}

// appendCopyText appends a text value. PostgreSQL's text cannot hold a NUL byte and refuses
// the whole batch for one, which would then be retried forever: a NUL (a model endpoint's
// garbage in a reason, a "\0" escape in a case's YAML) is stored as U+FFFD instead.
func appendCopyText(b []byte, s string) []byte {
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

func appendCopyInt4(b []byte, v int) []byte {
	b = binary.BigEndian.AppendUint32(b, 4)
	return binary.BigEndian.AppendUint32(b, uint32(int32(v)))
}

func appendCopyInt8(b []byte, v int64) []byte {
	b = binary.BigEndian.AppendUint32(b, 8)
	return binary.BigEndian.AppendUint64(b, uint64(v))
}
