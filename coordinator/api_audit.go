package coordinator

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/internal/tenant"
)

// AuditList is the answer of GET /v1/audit.
type AuditList struct {
	Records []AuditRecord `json:"records"`
	// Next is the before= of the next, older page; 0 when this is the last.
	Next int64 `json:"next,omitempty"`
}

// auditRecords serves GET /v1/audit?team=&before=&limit=: an admin reads every team's
// records (or one team's), anyone else its own team's.
func (a *api) auditRecords(w http.ResponseWriter, r *http.Request) {
	if a.c.auditLog == nil {
		writeError(w, http.StatusNotFound, errors.New("this coordinator keeps no history (--history off): its audit records are in its log only"), nil)
		return
	}
	p := tenant.Of(r.Context())
	q := r.URL.Query()
	team := q.Get("team")
	switch {
	case p.Role == tenant.Admin:
	case team == "" || team == tenant.Team(p.Team):
		team = tenant.Team(p.Team)
	default:
		writeError(w, http.StatusNotFound, fmt.Errorf("no team %q among yours", team), nil)
		return
	}
	var before int64
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			writeError(w, http.StatusBadRequest, fmt.Errorf("before must be a positive integer, got %q", v), nil)
			return
		}
		before = n
	}
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > 1000 {
			writeError(w, http.StatusBadRequest, fmt.Errorf("limit must be an integer from 1 to 1000, got %q", v), nil)
			return
		}
		limit = n
	}
	recs, err := a.c.auditLog.Records(r.Context(), team, before, limit)
	if err != nil {
		a.c.log.Warn("reading the audit log failed", zap.Error(err))
		writeError(w, http.StatusInternalServerError, errors.New("the history could not be read; the coordinator's log says why"), nil)
		return
	}
	out := AuditList{Records: recs}
	if out.Records == nil {
		out.Records = []AuditRecord{}
	}
	if len(recs) == limit {
		out.Next = recs[len(recs)-1].ID
	}
	writeJSONBody(w, http.StatusOK, out)
}
