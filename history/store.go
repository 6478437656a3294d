// Package history keeps every run and job result in a SQL database for months: an embedded
// SQLite file by default (pure Go, no cgo), PostgreSQL for a fleet. JetStream stays the source
// of truth for a run in flight; history is what later features (flaky detection, "what
// changed", changed-only runs) read. Writes go through a Writer that batches them off the
// coordinator's critical path; Backfill re-feeds a run from any iterator of results.
package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// ErrNotFound is returned for a run the store does not hold.
var ErrNotFound = errors.New("history: run not found")

// Options open a store.
type Options struct {
	// Target is a postgres:// (or postgresql://) URL, or the path of a SQLite file (created
	// with its directory when missing).
	Target string
	// Password, when set, replaces the URL's password (PostgreSQL only), so that it can come
	// from a file or the environment rather than the command line.
	Password string
}

// Store is a results store over one of the two backends.
type Store struct {
	db *sql.DB
	d  dialect
}

// IsPostgres reports whether target names a PostgreSQL database rather than a SQLite file.
func IsPostgres(target string) bool {
	return strings.HasPrefix(target, "postgres://") || strings.HasPrefix(target, "postgresql://")
}

// Open connects to the store named by opts.Target and brings its schema up to date. It
// refuses a database whose schema is newer than this binary knows.
func Open(ctx context.Context, opts Options) (*Store, error) {
	var (
		s   *Store
		err error
	)
	if IsPostgres(opts.Target) {
		s, err = openPostgres(opts)
	} else {
		s, err = openSQLite(opts.Target)
	}
	if err != nil {
		return nil, err
	}
	if err := s.db.PingContext(ctx); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("history: connecting to %s: %w", Describe(opts.Target), err)
	}
	if err := s.migrate(ctx); err != nil {
		s.db.Close()
		return nil, err
	}
	return s, nil
}

func openPostgres(opts Options) (*Store, error) {
	cfg, err := pgx.ParseConfig(opts.Target)
	if err != nil {
		// pgx's error repeats the URL, password included.
		return nil, errors.New("history: the PostgreSQL URL cannot be parsed")
	}
	if opts.Password != "" {
		cfg.Password = opts.Password
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(8)
	return &Store{db: db, d: postgresDialect}, nil
}

func openSQLite(path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("history: no database file named")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	// WAL lets readers run beside the writer; the busy timeout rides out another process
	// holding the file (a second `skillfleet test` sharing the default file). A page cache of
	// up to 64 MiB (the default is 2 MiB) holds the index pages one of the Writer's batches
	// touches, so that a transaction does not spill them (and journal them for its statement)
	// half way, to write them again at commit.
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(ON)" +
		"&_pragma=cache_size(-65536)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("history: %s: %w", path, err)
	}
	// One connection: SQLite has one writer at a time anyway, and this keeps transactions
	// from waiting on each other inside the process.
	db.SetMaxOpenConns(1)
	return &Store{db: db, d: sqliteDialect}, nil
}

// passwordParams are the query parameters of a PostgreSQL URL that hold a secret (libpq's
// password, and the key of an encrypted client certificate).
var passwordParams = []string{"password", "sslpassword"}

// Describe returns target fit for a log line: a URL's password, in its user information or
// its query, is left out.
func Describe(target string) string {
	if !IsPostgres(target) {
		return target
	}
	u, err := url.Parse(target)
	if err != nil {
		return "postgres://(unparsable URL)"
	}
	if q := u.Query(); hasPasswordParam(q) {
		for _, k := range passwordParams {
			if q.Has(k) {
				q.Set(k, "xxxxx")
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// HoldsPassword reports whether target is a PostgreSQL URL with a password in it (in its
// user information or its query): a password on a command line is seen by whoever can list
// the host's processes, so the daemons and the CLI refuse it.
func HoldsPassword(target string) bool {
	if !IsPostgres(target) {
		return false
	}
	u, err := url.Parse(target)
	if err != nil {
		// Open refuses it without repeating it.
		return false
	}
	if _, ok := u.User.Password(); ok {
		return true
	}
	return hasPasswordParam(u.Query())
}

func hasPasswordParam(q url.Values) bool {
	for _, k := range passwordParams {
		if q.Has(k) {
			return true
		}
	}
	return false
}

// Backend names the store's backend: "sqlite" or "postgres".
func (s *Store) Backend() string { return s.d.name }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// dialect is what differs between the backends: everything else is the same SQL.
type dialect struct {
	name string
	// dollar: placeholders are $1, $2, …; otherwise ?.
	dollar bool
	// lock, when set, is run first in the migration transaction so that two coordinators
	// starting together do not both migrate.
	lock string
	// copy: results are written by COPY (copy.go), not by INSERT.
	copy bool
}

var (
	sqliteDialect   = dialect{name: "sqlite"}
	postgresDialect = dialect{name: "postgres", dollar: true, lock: "SELECT pg_advisory_xact_lock(7431902177)", copy: true}
)

// ph returns the i-th (1-based) placeholder.
func (d dialect) ph(i int) string {
	if d.dollar {
		return fmt.Sprintf("$%d", i)
	}
	return "?"
}

// bind rewrites a query written with $n placeholders for the dialect. Queries use each
// placeholder once, in order, so ? works for SQLite.
func (d dialect) bind(q string) string {
	if d.dollar {
		return q
	}
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		if q[i] == '$' && i+1 < len(q) && q[i+1] >= '0' && q[i+1] <= '9' {
			b.WriteByte('?')
			for i+1 < len(q) && q[i+1] >= '0' && q[i+1] <= '9' {
				i++
			}
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}
