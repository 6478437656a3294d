package coordinator_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skillfleet/skillfleet/coordinator"
)

// TestMetricsToken: with a metrics token /metrics answers only its bearer (401 otherwise, the
// API's own token included); without one it stays open, as before.
func TestMetricsToken(t *testing.T) {
	a := startAPI(t, nil)
	const metricsToken = "metrics-token-0123456789"
	for _, tc := range []struct {
		name, configured, header string
		want                     int
	}{
		{"no metrics token: open", "", "", http.StatusOK},
		{"the metrics token", metricsToken, "Bearer " + metricsToken, http.StatusOK},
		{"no credentials", metricsToken, "", http.StatusUnauthorized},
		{"another token", metricsToken, "Bearer api-token-0123456789", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := a.fleet.Coordinator.Handler(coordinator.APIConfig{Gatherer: prometheus.NewRegistry(), MetricsToken: tc.configured})
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			req.Host = "127.0.0.1:8080"
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Errorf("GET /metrics: %d, want %d", rec.Code, tc.want)
			}
		})
	}
}
