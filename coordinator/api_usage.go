package coordinator

import (
	"encoding/json"
	"errors"
	"net/http"

	"go.uber.org/zap"
)

// UsageList is the answer of GET /v1/usage: each team's share and bounds.
type UsageList struct {
	Teams []TeamUsage `json:"teams"`
}

// usage serves GET /v1/usage?team=: a team's jobs, running jobs and bytes against its
// bounds; a member or viewer sees its own team, an admin every team (or the one named).
func (a *api) usage(w http.ResponseWriter, r *http.Request) {
	teams, err := a.c.Usage(r.Context(), r.URL.Query().Get("team"))
	if errors.Is(err, ErrNotFound) {
		writeError(w, http.StatusNotFound, err, nil)
		return
	}
	if err != nil {
		a.c.log.Warn("reading the usage failed", zap.Error(err))
		writeError(w, http.StatusInternalServerError, err, nil)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(UsageList{Teams: teams}); err != nil {
		a.c.log.Warn("writing the usage failed", zap.Error(err))
	}
}
