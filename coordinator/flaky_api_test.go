package coordinator_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/fleet"
)

func TestAPIFlaky(t *testing.T) {
	a := startAPI(t, func(cfg *fleet.InProcessConfig, _ *coordinator.APIConfig) {
		cfg.History = fleet.HistoryConfig{Target: filepath.Join(t.TempDir(), "history.db")}
	})
	st := a.submit(t, "name=examples&priority=scheduled", bundleOf(t, examples))
	a.wait(t, st.GetId())
	tests := []struct {
		path string
		code int
	}{
		{"/v1/flaky?suite=examples&lane=scheduled", http.StatusOK},
		{"/v1/flaky?suite=examples", http.StatusOK},
		{"/v1/flaky?suite=examples&lane=on-demand", http.StatusOK},
		{"/v1/flaky", http.StatusBadRequest},
		{"/v1/flaky?suite=examples&lane=nightly", http.StatusBadRequest},
	}
	for _, tt := range tests {
		resp, body := a.do(t, http.MethodGet, tt.path, token, nil)
		if resp.StatusCode != tt.code {
			t.Errorf("GET %s: %d %s, want %d", tt.path, resp.StatusCode, body, tt.code)
			continue
		}
		if tt.code == http.StatusOK {
			var l coordinator.FlakyList
			if err := json.Unmarshal(body, &l); err != nil || l.Suite != "examples" || l.Cells == nil {
				t.Errorf("GET %s: %s (%v), want a list of the suite's cells (none flaky after one run)", tt.path, body, err)
			}
		}
	}
	if resp, _ := a.do(t, http.MethodGet, "/v1/flaky?suite=examples", "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without a token: %d, want 401", resp.StatusCode)
	}
	l, err := a.client().Flaky(context.Background(), "examples", "scheduled")
	if err != nil || l.Suite != "examples" || len(l.Cells) != 0 {
		t.Errorf("client: %+v, %v", l, err)
	}
	rep, err := a.fleet.Coordinator.Report(context.Background(), st.GetId())
	if err != nil || rep.Changes == nil || rep.Changes.Previous != nil {
		t.Errorf("the run's report has no \"what changed\" section saying there is no previous run: %+v, %v", rep.Changes, err)
	}
}

func TestAPIFlakyWithoutHistory(t *testing.T) {
	a := startAPI(t, nil)
	_, err := a.client().Flaky(context.Background(), "examples", "")
	var apiErr *coordinator.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotFound {
		t.Errorf("without history: %v, want 404", err)
	}
}
