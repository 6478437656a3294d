package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/history"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// HistoryOff is the HistoryConfig.Target that keeps no history.
const HistoryOff = "off"

// HistoryConfig names the results history: a postgres:// URL, a SQLite file path, or
// HistoryOff.
type HistoryConfig struct {
	Target string
	// Password replaces a PostgreSQL URL's password (from a file or the environment, so it is
	// not on the command line).
	Password string
	// Writer tunes batching, retries and retention.
	Writer history.WriterConfig
}

// History is an open history: the store and its background writer. It is the coordinator's
// History.
type History struct {
	Store  *history.Store
	Writer *history.Writer
}

var _ coordinator.History = (*History)(nil)

// Record queues a counted result (coordinator.History).
func (h *History) Record(res *pb.Result, st *pb.RunStatus) { h.Writer.Record(res, st) }

// RunFinished queues a finished run (coordinator.History).
func (h *History) RunFinished(st *pb.RunStatus) { h.Writer.RunFinished(st) }

// Close writes what is queued (until ctx ends) and closes the database.
func (h *History) Close(ctx context.Context) error {
	return errors.Join(h.Writer.Close(ctx), h.Store.Close())
}

// OpenHistory opens the history cfg names and starts its writer; it returns nil, nil for
// HistoryOff or an empty target.
func OpenHistory(ctx context.Context, cfg HistoryConfig, log *zap.Logger) (*History, error) {
	if cfg.Target == "" || cfg.Target == HistoryOff {
		return nil, nil
	}
	if err := RefuseHistoryPassword(cfg.Target, "a file or the environment"); err != nil {
		return nil, &ConfigError{Err: err}
	}
	if cfg.Password != "" && !history.IsPostgres(cfg.Target) {
		return nil, refuse("--history: a password is only used with a postgres:// URL, and %s is a file", cfg.Target)
	}
	s, err := history.Open(ctx, history.Options{Target: cfg.Target, Password: cfg.Password})
	if err != nil {
		return nil, fmt.Errorf("--history %s: %w", history.Describe(cfg.Target), err)
	}
	log.Info("history", zap.String("backend", s.Backend()), zap.String("database", history.Describe(cfg.Target)))
	return &History{Store: s, Writer: history.NewWriter(s, cfg.Writer, log)}, nil
}

// RefuseHistoryPassword refuses a --history URL that holds a password: on a command line it is
// seen by whoever can list the host's processes. instead says where the password goes.
func RefuseHistoryPassword(target, instead string) error {
	if !history.HoldsPassword(target) {
		return nil
	}
	return fmt.Errorf("--history %s holds a password, which anyone who can list this host's processes can read: remove it from the URL and put it in %s", history.Describe(target), instead)
}

// HistoryPassword returns the PostgreSQL password from file (its first line) when one is
// named, else from the environment variable env ("" when unset).
func HistoryPassword(file, env string) (string, error) {
	if file == "" {
		return os.Getenv(env), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--history-password-file: %w", err)
	}
	pw, _, _ := strings.Cut(string(b), "\n")
	pw = strings.TrimRight(pw, "\r")
	if pw == "" {
		return "", fmt.Errorf("--history-password-file %s is empty", file)
	}
	return pw, nil
}

// DefaultLocalHistory is where `skillfleet test` keeps its history: under $XDG_STATE_HOME,
// else ~/.local/state, in skillfleet/history.db.
func DefaultLocalHistory() (string, error) {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no state directory for the history (set $XDG_STATE_HOME, or --history PATH|off): %w", err)
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "skillfleet", "history.db"), nil
}

var _ coordinator.Reuse = (*History)(nil)

// Reusable finds the runs of team a changed-only run may reuse its cells' verdicts from
// (coordinator.Reuse, over history.Store.Reusable).
func (h *History) Reusable(ctx context.Context, team, suite string, since time.Time, exclude string, epochs map[string]int) (map[string]coordinator.Reused, error) {
	found, err := h.Store.Reusable(ctx, team, suite, since, exclude, epochs)
	if err != nil {
		return nil, err
	}
	out := make(map[string]coordinator.Reused, len(found))
	for k, f := range found {
		out[k] = coordinator.Reused{Run: f.Run, CellDigest: f.CellDigest, FinishedAt: f.FinishedAt}
	}
	return out, nil
}
