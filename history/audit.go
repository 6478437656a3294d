package history

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/internal/text"
)

// The bounds of an audit entry's fields, in bytes: they come from hostile input (a refused
// token's name, a path no route knows), and a flood of refused attempts must not grow the
// database by more than their count.
const (
	maxAuditField  = 200
	maxAuditDetail = 1000
)

// Audit's page sizes.
const (
	defaultAuditLimit = 100
	maxAuditLimit     = 1000
)

// AuditEntry is one thing a principal did or tried: who, in which team and role, what action
// on which object, and whether it was allowed.
type AuditEntry struct {
	ID      int64     // set by the store
	At      time.Time // the time of writing when zero
	Actor   string    // the token's or proxy user's name ("" anonymous)
	Team    string    // the team the object belongs to (or the actor's, for a login)
	Role    string
	Action  string // e.g. "submit", "cancel", "push", "schedule.add", "schedule.remove", "login", "login.refused", "denied"
	Object  string // e.g. "run/<id>", "suite/<team>/<name>", "schedule/<team>/<name>"
	Outcome string // "ok", "refused", "denied", "not_found", "failed"
	// Detail says more (a refusal's reason); it is clipped to 1000 bytes on a rune boundary,
	// every other text field to 200.
	Detail string
}

// auditText makes a field fit to store: PostgreSQL refuses invalid UTF-8 and NUL in TEXT, and
// an entry refused for its bytes would lose the record of a hostile attempt, so those become
// U+FFFD; then it is clipped to n bytes, "…" included, on a rune boundary.
func auditText(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	if len(s) <= n {
		return s
	}
	return text.ClipBytes(s, n-len("…"))
}

// AppendAudit stores entries in one transaction, each field bounded (see AuditEntry); their IDs
// are the store's, in the order given.
func (s *Store) AppendAudit(ctx context.Context, es ...AuditEntry) error {
	if len(es) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("history: audit: %w", err)
	}
	defer tx.Rollback()
	insert, err := tx.PrepareContext(ctx, s.d.bind(`INSERT INTO audit (at_ms, actor, team, role, action, object, outcome, detail)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`))
	if err != nil {
		return fmt.Errorf("history: audit: %w", err)
	}
	defer insert.Close()
	now := time.Now()
	for _, e := range es {
		at := e.At
		if at.IsZero() {
			at = now
		}
		if _, err := insert.ExecContext(ctx, at.UnixMilli(), auditText(e.Actor, maxAuditField), auditText(e.Team, maxAuditField),
			auditText(e.Role, maxAuditField), auditText(e.Action, maxAuditField), auditText(e.Object, maxAuditField),
			auditText(e.Outcome, maxAuditField), auditText(e.Detail, maxAuditDetail)); err != nil {
			return fmt.Errorf("history: audit: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("history: audit: %w", err)
	}
	return nil
}

// AuditQuery selects a page of the audit log.
type AuditQuery struct {
	// Team is the team whose entries are read; "" reads every team's.
	Team string
	// BeforeID reads entries older than it (the last ID of the previous page); 0 the newest.
	BeforeID int64
	// Limit is the page's size: 0 (or less) is 100, and more than 1000 is 1000.
	Limit int
}

// Audit returns a page of the audit log, newest first (by ID).
func (s *Store) Audit(ctx context.Context, q AuditQuery) ([]AuditEntry, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = defaultAuditLimit
	}
	limit = min(limit, maxAuditLimit)
	// The conditions are left out rather than disabled in SQL so that each shape of the query
	// gets its own plan: (team, id) for one team, the primary key for all.
	var (
		where []string
		args  []any
	)
	if q.Team != "" {
		args = append(args, q.Team)
		where = append(where, fmt.Sprintf("team = $%d", len(args)))
	}
	if q.BeforeID > 0 {
		args = append(args, q.BeforeID)
		where = append(where, fmt.Sprintf("id < $%d", len(args)))
	}
	query := `SELECT id, at_ms, actor, team, role, action, object, outcome, detail FROM audit`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	args = append(args, limit)
	query += fmt.Sprintf(` ORDER BY id DESC LIMIT $%d`, len(args))
	rows, err := s.db.QueryContext(ctx, s.d.bind(query), args...)
	if err != nil {
		return nil, fmt.Errorf("history: audit: %w", err)
	}
	defer rows.Close()
	var out []AuditEntry
	for rows.Next() {
		var (
			e  AuditEntry
			ms int64
		)
		if err := rows.Scan(&e.ID, &ms, &e.Actor, &e.Team, &e.Role, &e.Action, &e.Object, &e.Outcome, &e.Detail); err != nil {
			return nil, fmt.Errorf("history: audit: %w", err)
		}
		e.At = time.UnixMilli(ms).UTC()
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history: audit: %w", err)
	}
	return out, nil
}
