package coordinator

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"go.uber.org/zap"
)

// pushSuite stores the uploaded bundle as the latest of the suite named in the path.
func (a *api) pushSuite(w http.ResponseWriter, r *http.Request) {
	team, ok := teamOf(r)
	if !ok {
		writeError(w, http.StatusNotFound, ErrNotFound, nil)
		return
	}
	var ps *PushedSuite
	answered, err := a.upload(w, r, func(body io.Reader) (err error) {
		ps, err = a.c.PushSuite(r.Context(), team, r.PathValue("name"), body)
		return err
	})
	if answered {
		return
	}
	if err != nil {
		writeScheduleError(a, w, err)
		return
	}
	writeJSONBody(w, http.StatusOK, ps)
}

func (a *api) listSuites(w http.ResponseWriter, r *http.Request) {
	suites, err := a.c.Suites(r.Context())
	if err != nil {
		writeScheduleError(a, w, err)
		return
	}
	writeJSONBody(w, http.StatusOK, map[string]any{"suites": suites})
}

func (a *api) listSchedules(w http.ResponseWriter, r *http.Request) {
	s, err := a.c.Schedules(r.Context())
	if err != nil {
		writeScheduleError(a, w, err)
		return
	}
	writeJSONBody(w, http.StatusOK, map[string]any{"schedules": s})
}

// ScheduleRequest is the body of PUT /v1/schedules/{name}.
type ScheduleRequest struct {
	Suite  string   `json:"suite"`
	Cron   string   `json:"cron"`
	Agents []string `json:"agents,omitempty"`
	// MaxCost is each fired run's cost cap in US dollars; 0 none.
	MaxCost float64 `json:"max_cost,omitempty"`
}

func (a *api) addSchedule(w http.ResponseWriter, r *http.Request) {
	var req ScheduleRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, errors.New("the body must be a JSON object with suite, cron and agents: "+err.Error()), nil)
		return
	}
	team, ok := teamOf(r)
	if !ok {
		writeError(w, http.StatusNotFound, ErrNotFound, nil)
		return
	}
	s, err := a.c.AddSchedule(r.Context(), Schedule{Name: r.PathValue("name"), Team: team, Suite: req.Suite, Cron: req.Cron, Agents: req.Agents, MaxCost: req.MaxCost})
	var pe *PlanError
	if errors.As(err, &pe) {
		writeError(w, http.StatusUnprocessableEntity, err, nil)
		return
	}
	if err != nil {
		writeScheduleError(a, w, err)
		return
	}
	w.Header().Set("Location", "/v1/schedules/"+s.Name)
	writeJSONBody(w, http.StatusCreated, s)
}

func (a *api) removeSchedule(w http.ResponseWriter, r *http.Request) {
	team, ok := teamOf(r)
	if !ok {
		writeError(w, http.StatusNotFound, ErrNotFound, nil)
		return
	}
	if err := a.c.RemoveSchedule(r.Context(), team, r.PathValue("name")); err != nil {
		writeScheduleError(a, w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func writeScheduleError(a *api, w http.ResponseWriter, err error) {
	var inv *InvalidError
	switch {
	case errors.As(err, &inv):
		writeError(w, http.StatusBadRequest, err, nil)
	case errors.Is(err, ErrNoSuite), errors.Is(err, ErrNotFound):
		writeError(w, http.StatusNotFound, err, nil)
	case errors.Is(err, ErrForbidden):
		writeError(w, http.StatusForbidden, err, nil)
	case errors.Is(err, ErrScheduleExists):
		writeError(w, http.StatusConflict, err, nil)
	case errors.Is(err, ErrNoSchedules):
		writeError(w, http.StatusNotImplemented, err, nil)
	default:
		a.c.log.Error("suites and schedules request failed", zap.Error(err))
		writeError(w, http.StatusInternalServerError, err, nil)
	}
}

func writeJSONBody(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
