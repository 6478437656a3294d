package coordinator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/internal/tenant"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// ErrForbidden is returned for a change the caller may see but not make: a viewer's cancel,
// push or schedule. Another team's object is ErrNotFound instead, so that its existence is
// not disclosed.
var ErrForbidden = errors.New("your role may not change this")

// Outcomes an audit record gives.
const (
	outcomeOK      = "ok"
	outcomeRefused = "refused"
	outcomeDenied  = "denied"
)

// AuditRecord is one thing a principal did or tried: who, in which role, what action on
// which object of which team, and what came of it.
type AuditRecord struct {
	ID    int64     `json:"id,omitempty"`
	At    time.Time `json:"at"`
	Actor string    `json:"actor"`
	Role  string    `json:"role,omitempty"`
	// Team is the team of the object (the actor's own for a login).
	Team    string `json:"team"`
	Action  string `json:"action"`
	Object  string `json:"object"`
	Outcome string `json:"outcome"`
	Detail  string `json:"detail,omitempty"`
}

// AuditLog keeps the audit records (the history database's audit table; fleet adapts it).
type AuditLog interface {
	// Record keeps r. It must not block the request that made r: a log that cannot keep up
	// drops records, counts and logs them.
	Record(r AuditRecord)
	// Records returns the newest records before id beforeID (0: the newest), of team ("":
	// every team), at most limit.
	Records(ctx context.Context, team string, beforeID int64, limit int) ([]AuditRecord, error)
}

// Audit records what who did to object in who's team (a login, a logout, a refused viewer
// change), in the coordinator's log and its audit log, as the coordinator's own actions are.
func (c *Coordinator) Audit(who tenant.Principal, action, object, outcome, detail string) {
	c.audit(who, "", action, object, outcome, detail)
}

// audit records what actor did to object of team ("": the actor's own), in the coordinator's
// log and in its audit log.
func (c *Coordinator) audit(actor tenant.Principal, team, action, object, outcome, detail string) {
	if team == "" {
		team = actor.Team
	}
	r := AuditRecord{At: c.now().UTC(), Actor: actor.Name, Team: tenant.Team(team), Action: action, Object: object, Outcome: outcome, Detail: detail}
	if actor.Role != 0 {
		r.Role = actor.Role.String()
	}
	c.log.Info("audit", zap.String("actor", r.Actor), zap.String("role", r.Role), zap.String("team", r.Team),
		zap.String("action", action), zap.String("object", object), zap.String("outcome", outcome), zap.String("detail", detail))
	if c.auditLog != nil {
		c.auditLog.Record(r)
	}
}

// runTeam is the team that owns run id: of the active run, else of its stored status.
func (c *Coordinator) runTeam(ctx context.Context, id string) (string, error) {
	if r := c.active(id); r != nil {
		return tenant.Team(r.spec.GetTeam()), nil
	}
	st, err := c.load(ctx, id)
	if err != nil {
		return "", err
	}
	return tenant.Team(st.GetSpec().GetTeam()), nil
}

// readable returns ErrNotFound, as for a run that does not exist, when the caller of ctx may
// not read a run of team; a context with no principal (the process's own call) may.
func readable(ctx context.Context, team string) error {
	if p, ok := tenant.From(ctx); ok && !p.CanRead(team) {
		return ErrNotFound
	}
	return nil
}

// mayRead is readable for run id, whose team it looks up.
func (c *Coordinator) mayRead(ctx context.Context, id string) error {
	return c.access(ctx, id, "")
}

// mayChange is mayRead for a change (action, audited when refused): a viewer gets
// ErrForbidden.
func (c *Coordinator) mayChange(ctx context.Context, id, action string) error {
	return c.access(ctx, id, action)
}

// access checks the caller of ctx against run id's team: to read it, or with an action to
// change it, auditing a refused change.
func (c *Coordinator) access(ctx context.Context, id, action string) error {
	p, ok := tenant.From(ctx)
	if !ok {
		return nil
	}
	team, err := c.runTeam(ctx, id)
	switch {
	case err != nil && (action == "" || !errors.Is(err, ErrNotFound)):
		return err
	case err != nil || !p.CanRead(team):
		if action != "" {
			c.audit(p, "", action, "run/"+id, outcomeDenied, "not found or another team's")
		}
		return ErrNotFound
	case action != "" && !p.CanChange(team):
		c.audit(p, team, action, "run/"+id, outcomeDenied, "role "+p.Role.String())
		return fmt.Errorf("%s run %s: %w (%s)", action, id, ErrForbidden, p.Role)
	}
	return nil
}

// visibleRuns keeps the runs of sts the caller of ctx may read.
func visibleRuns(ctx context.Context, sts []*pb.RunStatus) []*pb.RunStatus {
	p, ok := tenant.From(ctx)
	if !ok {
		return sts
	}
	out := sts[:0]
	for _, st := range sts {
		if p.CanRead(st.GetSpec().GetTeam()) {
			out = append(out, st)
		}
	}
	return out
}

// teamOf is the team a request acts in: the caller's own, or for an admin the one ?team=
// names. ok is false for a team the caller may not read (a member naming another team), which
// is answered as not found.
func teamOf(r *http.Request) (team string, ok bool) {
	p := tenant.Of(r.Context())
	team = r.URL.Query().Get("team")
	if team == "" {
		return tenant.Team(p.Team), true
	}
	if tenant.CheckTeam(team) != nil || !p.CanRead(team) {
		return "", false
	}
	return team, true
}
