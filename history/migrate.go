package history

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// migrations holds each backend's schema steps, numbered NNNN_what.sql, applied in order.
//
//go:embed migrations
var migrations embed.FS

// ErrSchemaNewer is wrapped when the database was migrated by a newer skillfleet.
var ErrSchemaNewer = fmt.Errorf("history: the database schema is newer than this skillfleet knows")

type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads a backend's migrations in version order.
func loadMigrations(backend string) ([]migration, error) {
	dir := path.Join("migrations", backend)
	entries, err := fs.ReadDir(migrations, dir)
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("history: migration %s/%s is not named NNNN_what.sql", dir, e.Name())
		}
		data, err := migrations.ReadFile(path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(data)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("history: migrations of %s skip from %d to %d", backend, i, m.version)
		}
	}
	return out, nil
}

// migrate applies the migrations the database lacks, each in its own transaction with its
// schema_migrations row, so a crash leaves either the step and its row or neither. It is a
// no-op on an up-to-date database, and refuses one migrated further than it knows.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := loadMigrations(s.d.name)
	if err != nil {
		return err
	}
	if err := s.applyAll(ctx, ms); err != nil {
		return err
	}
	// Checked once more with nothing to apply: a database already ahead never reaches apply.
	v, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	if v > len(ms) {
		return fmt.Errorf("%w: version %d, this binary knows up to %d", ErrSchemaNewer, v, len(ms))
	}
	return nil
}

// applyAll applies the migrations of ms the database lacks. Given the first of a backend's
// migrations only, it makes a database of that older version (as the tests of an upgrade do).
func (s *Store) applyAll(ctx context.Context, ms []migration) error {
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	name       TEXT NOT NULL,
	applied_ms BIGINT NOT NULL
)`); err != nil {
		return fmt.Errorf("history: creating schema_migrations: %w", err)
	}
	for _, m := range ms {
		if err := s.apply(ctx, m, len(ms)); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) apply(ctx context.Context, m migration, latest int) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("history: migration %s: %w", m.name, err)
	}
	defer tx.Rollback()
	if s.d.lock != "" {
		if _, err := tx.ExecContext(ctx, s.d.lock); err != nil {
			return fmt.Errorf("history: migration lock: %w", err)
		}
	}
	v, err := currentVersion(ctx, tx)
	if err != nil {
		return err
	}
	if v > latest {
		return fmt.Errorf("%w: version %d, this binary knows up to %d", ErrSchemaNewer, v, latest)
	}
	if v >= m.version {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return fmt.Errorf("history: migration %s/%s: %w", s.d.name, m.name, err)
	}
	if _, err := tx.ExecContext(ctx, s.d.bind(`INSERT INTO schema_migrations (version, name, applied_ms) VALUES ($1, $2, $3)`),
		m.version, m.name, time.Now().UnixMilli()); err != nil {
		return fmt.Errorf("history: migration %s: %w", m.name, err)
	}
	return tx.Commit()
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func currentVersion(ctx context.Context, q queryer) (int, error) {
	var v sql.NullInt64
	if err := q.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("history: reading the schema version: %w", err)
	}
	return int(v.Int64), nil
}

// SchemaVersion returns the highest migration applied to the database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	return currentVersion(ctx, s.db)
}
