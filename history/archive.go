package history

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// The default bounds of a run's archive (ArchiveLimits).
const (
	// DefaultMaxArchivedResult bounds one result as kept, compressed: a larger one is kept
	// without its trajectory (then without its output files, then without its transcript).
	DefaultMaxArchivedResult = 1 << 20
	// DefaultMaxArchivedRun bounds a run's archive, compressed: its status, report and
	// results. Results past it are kept trimmed to their verdict and evidence while that
	// fits, then not at all (counted as omitted).
	DefaultMaxArchivedRun = 256 << 20
)

// maxArchivedDocument bounds a stored blob once decompressed: a stored result or report is
// never read past it, whatever the database holds.
const maxArchivedDocument = 128 << 20

// ErrNotArchived is returned for a run whose rows are stored but not its report and results:
// a run written by a coordinator, or before the history kept them.
var ErrNotArchived = errors.New("history: the run's report and results are not kept")

// ArchiveLimits bound what WriteArchive keeps; zero fields take the defaults.
type ArchiveLimits struct {
	MaxResultBytes int
	MaxRunBytes    int64
}

func (l *ArchiveLimits) defaults() {
	if l.MaxResultBytes <= 0 {
		l.MaxResultBytes = DefaultMaxArchivedResult
	}
	if l.MaxRunBytes <= 0 {
		l.MaxRunBytes = DefaultMaxArchivedRun
	}
}

// ArchiveStats is what a run's archive holds.
type ArchiveStats struct {
	// Results are kept, Trimmed of them without their trajectory or more (each says so in its
	// trajectory's note or outputs_omitted); Omitted results were not kept at all.
	Results, Trimmed, Omitted int
	// Bytes is the archive's compressed size.
	Bytes int64
}

// WriteArchive keeps a finished run's status (with its spec), its report (the JSON of
// report.Report, as given) and each result results gives, in order, with its documents as
// they are (resolved inline by the caller), within limits. It replaces an archive already
// kept for the run, and stores the run's row from st as well, in one transaction.
func (s *Store) WriteArchive(ctx context.Context, st *pb.RunStatus, reportJSON []byte, results func(func(*pb.Result) error) error, limits ArchiveLimits) (ArchiveStats, error) {
	limits.defaults()
	id := st.GetId()
	status, err := proto.Marshal(st)
	if err != nil {
		return ArchiveStats{}, fmt.Errorf("history: archiving run %s: %w", id, err)
	}
	rep, err := gzipBytes(reportJSON)
	if err != nil {
		return ArchiveStats{}, fmt.Errorf("history: archiving run %s: %w", id, err)
	}
	stats := ArchiveStats{Bytes: int64(len(status) + len(rep))}
	if stats.Bytes > limits.MaxRunBytes {
		return ArchiveStats{}, fmt.Errorf("history: archiving run %s: its report alone is over the run's bound of %d bytes compressed", id, limits.MaxRunBytes)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return ArchiveStats{}, fmt.Errorf("history: %w", err)
	}
	defer tx.Rollback()
	run := FromStatus(st)
	if err := s.writeRun(ctx, tx, &run); err != nil {
		return ArchiveStats{}, err
	}
	for _, q := range []string{`DELETE FROM result_archives WHERE run_id = $1`, `DELETE FROM run_archives WHERE run_id = $1`} {
		if _, err := tx.ExecContext(ctx, s.d.bind(q), id); err != nil {
			return ArchiveStats{}, fmt.Errorf("history: archiving run %s: %w", id, err)
		}
	}
	insert, err := tx.PrepareContext(ctx, s.d.bind(`INSERT INTO result_archives (run_id, seq, job_id, trimmed, result) VALUES ($1, $2, $3, $4, $5)`))
	if err != nil {
		return ArchiveStats{}, fmt.Errorf("history: archiving run %s: %w", id, err)
	}
	defer insert.Close()
	seq := 0
	err = results(func(res *pb.Result) error {
		data, trimmed, err := fitResult(res, limits.MaxResultBytes, limits.MaxRunBytes-stats.Bytes)
		if err != nil {
			return err
		}
		if data == nil {
			stats.Omitted++
			return nil
		}
		seq++
		flag := 0
		if trimmed {
			flag = 1
		}
		if _, err := insert.ExecContext(ctx, id, seq, res.GetJobId(), flag, data); err != nil {
			return err
		}
		stats.Results++
		stats.Bytes += int64(len(data))
		if trimmed {
			stats.Trimmed++
		}
		return nil
	})
	if err != nil {
		return ArchiveStats{}, fmt.Errorf("history: archiving run %s: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, s.d.bind(`INSERT INTO run_archives (run_id, status, report, results, trimmed, omitted, bytes, archived_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`), id, status, rep, stats.Results, stats.Trimmed, stats.Omitted, stats.Bytes, time.Now().UnixMilli()); err != nil {
		return ArchiveStats{}, fmt.Errorf("history: archiving run %s: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return ArchiveStats{}, fmt.Errorf("history: %w", err)
	}
	return stats, nil
}

// fitResult encodes res within max bytes (compressed) and the run's room left: whole when it
// fits, else trimmed step by step (the trajectory, the output files, the transcript), each
// step said in the result itself. It returns nil when even the last step does not fit.
func fitResult(res *pb.Result, max int, room int64) (data []byte, trimmed bool, err error) {
	limit := func() int { return int(min(int64(max), room)) }
	data, err = encodeResult(res)
	if err != nil || len(data) <= limit() {
		return data, false, err
	}
	why := fmt.Sprintf("over the history's bound of %d bytes compressed per result", max)
	if int64(len(data)) <= int64(max) {
		why = "over the history's bound of the run's archive"
	}
	res = proto.Clone(res).(*pb.Result)
	steps := []func(){
		func() {
			if d := res.GetTrajectory(); d != nil {
				res.Trajectory = &pb.StoredDocument{Size: d.GetSize(), Note: "the trajectory was not kept in the history: the result was " + why}
			}
		},
		func() {
			if len(res.GetOutputs()) > 0 || res.GetOutputsStored() != nil {
				res.Outputs, res.OutputsStored = nil, nil
				res.OutputsOmitted = append(res.OutputsOmitted, "the output files were not kept in the history: the result was "+why)
			}
		},
		func() { res.Transcript = nil },
	}
	for _, step := range steps {
		step()
		if data, err = encodeResult(res); err != nil || len(data) <= limit() {
			return data, true, err
		}
	}
	return nil, true, nil
}

func encodeResult(res *pb.Result) ([]byte, error) {
	raw, err := proto.Marshal(res)
	if err != nil {
		return nil, err
	}
	return gzipBytes(raw)
}

func gzipBytes(raw []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func gunzipBytes(data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(io.LimitReader(zr, maxArchivedDocument+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxArchivedDocument {
		return nil, fmt.Errorf("over %d bytes once decompressed", maxArchivedDocument)
	}
	return out, nil
}

// Archive is a run's archive as kept: its final status (with the spec) and report.
type Archive struct {
	Status *pb.RunStatus
	// Report is the JSON of the run's report.Report.
	Report []byte
	Stats  ArchiveStats
}

// ArchivedRun returns run id's archive: ErrNotFound when the history has no such run,
// ErrNotArchived when it has its rows only.
func (s *Store) ArchivedRun(ctx context.Context, id string) (Archive, error) {
	var (
		status, rep []byte
		a           Archive
	)
	err := s.db.QueryRowContext(ctx, s.d.bind(`SELECT status, report, results, trimmed, omitted, bytes FROM run_archives WHERE run_id = $1`), id).
		Scan(&status, &rep, &a.Stats.Results, &a.Stats.Trimmed, &a.Stats.Omitted, &a.Stats.Bytes)
	if errors.Is(err, sql.ErrNoRows) {
		if _, rerr := s.Run(ctx, id); rerr != nil {
			return Archive{}, rerr
		}
		return Archive{}, fmt.Errorf("%w: run %s (a run of a coordinator, or kept before skillfleet kept them)", ErrNotArchived, id)
	}
	if err != nil {
		return Archive{}, fmt.Errorf("history: run %s: %w", id, err)
	}
	a.Status = &pb.RunStatus{}
	if err := proto.Unmarshal(status, a.Status); err != nil {
		return Archive{}, fmt.Errorf("history: run %s: its status: %w", id, err)
	}
	if a.Report, err = gunzipBytes(rep); err != nil {
		return Archive{}, fmt.Errorf("history: run %s: its report: %w", id, err)
	}
	return a, nil
}

// ArchivedResults calls fn with each result kept of run id, in the order they were accepted.
func (s *Store) ArchivedResults(ctx context.Context, id string, fn func(*pb.Result) error) error {
	if _, err := s.ArchivedRun(ctx, id); err != nil {
		return err
	}
	// Read one at a time by sequence: a run's results may be far larger than memory should
	// hold, and SQLite's one connection must not stay busy with an open cursor while fn runs.
	q := s.d.bind(`SELECT seq, result FROM result_archives WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT 1`)
	last := 0
	for {
		var data []byte
		err := s.db.QueryRowContext(ctx, q, id, last).Scan(&last, &data)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("history: results of run %s: %w", id, err)
		}
		raw, err := gunzipBytes(data)
		if err != nil {
			return fmt.Errorf("history: result %d of run %s: %w", last, id, err)
		}
		res := &pb.Result{}
		if err := proto.Unmarshal(raw, res); err != nil {
			return fmt.Errorf("history: result %d of run %s: %w", last, id, err)
		}
		if err := fn(res); err != nil {
			return err
		}
	}
}

// Runs returns the newest n runs (all when n <= 0), newest first, each as its archived
// status when kept, else as its row says (ToStatus).
func (s *Store) Runs(ctx context.Context, n int) ([]*pb.RunStatus, error) {
	q := `SELECT ` + prefixed("runs.", runColumns) + `, run_archives.status FROM runs
	LEFT JOIN run_archives ON run_archives.run_id = runs.run_id ORDER BY runs.created_ms DESC, runs.run_id DESC`
	var args []any
	if n > 0 {
		q += ` LIMIT $1`
		args = append(args, n)
	}
	rows, err := s.db.QueryContext(ctx, s.d.bind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("history: runs: %w", err)
	}
	defer rows.Close()
	var out []*pb.RunStatus
	for rows.Next() {
		var status []byte
		r, err := scanRun(scanFunc(func(dest ...any) error { return rows.Scan(append(dest, &status)...) }))
		if err != nil {
			return nil, fmt.Errorf("history: runs: %w", err)
		}
		st := &pb.RunStatus{}
		if status == nil || proto.Unmarshal(status, st) != nil {
			st = ToStatus(r)
		}
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history: runs: %w", err)
	}
	return out, nil
}

// Status returns run id's status: archived when kept, else as its row says (ToStatus).
func (s *Store) Status(ctx context.Context, id string) (*pb.RunStatus, error) {
	a, err := s.ArchivedRun(ctx, id)
	if errors.Is(err, ErrNotArchived) {
		r, err := s.Run(ctx, id)
		if err != nil {
			return nil, err
		}
		return ToStatus(r), nil
	}
	if err != nil {
		return nil, err
	}
	return a.Status, nil
}

type scanFunc func(dest ...any) error

func (f scanFunc) Scan(dest ...any) error { return f(dest...) }

// prefixed qualifies each of a comma-separated list of columns with prefix.
func prefixed(prefix, columns string) string {
	parts := strings.Split(columns, ",")
	for i, p := range parts {
		parts[i] = prefix + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}
