package history

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/internal/tenant"
)

// Reusable is the run a changed-only run may reuse a cell's verdict from.
type Reusable struct {
	Run        string
	CellDigest string
	FinishedAt time.Time
}

// keysPerReuseQuery bounds one lookup's IN list, under both backends' parameter limits.
const keysPerReuseQuery = 500

// reuseKeyPrefix is how many characters of a cell key the reuse lookup's index holds
// (results_team_reuse, migration 7; the two must agree, or the lookup reads no index).
const reuseKeyPrefix = 24

// Reusable finds, for each cell of the team's suite in epochs (its key, pb.Job.cell_key, and
// how many epochs it runs), the latest run of the team other than exclude that finished it
// since the given time with every epoch passed under one cell digest: another team's pass
// under the same suite name is never a source. Team "" is tenant.DefaultTeam. A run that
// itself reused the cell is no source (its rows say "reused", not "passed"), so a verdict is
// reused only while the run that earned it is within the window. A cell some rows of which
// were lost (history down) has fewer rows than epochs and is not reusable: it runs.
func (s *Store) Reusable(ctx context.Context, team, suite string, since time.Time, exclude string, epochs map[string]int) (map[string]Reusable, error) {
	keys := make([]string, 0, len(epochs))
	for k := range epochs {
		if k != "" {
			keys = append(keys, k)
		}
	}
	out := make(map[string]Reusable)
	latest := make(map[string]int64)
	for start := 0; start < len(keys); start += keysPerReuseQuery {
		chunk := keys[start:min(start+keysPerReuseQuery, len(keys))]
		q, args := reuseQuery(team, suite, chunk, exclude, since)
		rows, err := s.db.QueryContext(ctx, s.d.bind(q), args...)
		if err != nil {
			return nil, fmt.Errorf("history: reusable cells of %s: %w", suite, err)
		}
		for rows.Next() {
			var (
				key, run, lo, hi string
				n, passed, ms    int64
			)
			if err := rows.Scan(&key, &run, &lo, &hi, &n, &passed, &ms); err != nil {
				rows.Close()
				return nil, fmt.Errorf("history: reusable cells of %s: %w", suite, err)
			}
			if _, asked := epochs[key]; !asked || lo == "" || lo != hi || n != passed || n < int64(max(epochs[key], 1)) {
				continue
			}
			if prev, ok := latest[key]; ok && (ms < prev || (ms == prev && run < out[key].Run)) {
				continue
			}
			latest[key] = ms
			out[key] = Reusable{Run: run, CellDigest: lo, FinishedAt: time.UnixMilli(ms).UTC()}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("history: reusable cells of %s: %w", suite, err)
		}
	}
	return out, nil
}

// reuseQuery is the lookup of keys' rows, grouped by cell key and run: found by the key
// prefixes the index holds, so a group may be another key's that shares a prefix with one of
// keys (Reusable keeps the keys it asked for). Holding the rows to the whole keys in SQL as
// well made the planners take a key's rows for twenty times rarer than they are, and sort
// them rather than hash them.
func reuseQuery(team, suite string, keys []string, exclude string, since time.Time) (string, []any) {
	prefix := fmt.Sprintf("substr(%%s, 1, %d)", reuseKeyPrefix)
	var q strings.Builder
	q.WriteString(`SELECT cell_key, run_id, MIN(cell_digest), MAX(cell_digest), COUNT(*),
	SUM(CASE WHEN verdict = 'passed' THEN 1 ELSE 0 END), MAX(finished_ms)
FROM results WHERE team = $1 AND suite = $2 AND ` + fmt.Sprintf(prefix, "cell_key") + ` IN (`)
	args := []any{tenant.Team(team), suite}
	for i, k := range keys {
		if i > 0 {
			q.WriteString(", ")
		}
		fmt.Fprintf(&q, prefix, fmt.Sprintf("$%d", len(args)+1))
		args = append(args, k)
	}
	fmt.Fprintf(&q, ") AND run_id <> $%d AND finished_ms >= $%d GROUP BY cell_key, run_id", len(args)+1, len(args)+2)
	return q.String(), append(args, exclude, since.UnixMilli())
}
