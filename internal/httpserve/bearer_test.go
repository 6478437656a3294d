package httpserve

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestRequireBearer(t *testing.T) {
	const token = "metrics-token-0123456789"
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) })
	for _, tc := range []struct {
		name, token, header string
		want                int
	}{
		{"no token configured: open", "", "", http.StatusOK},
		{"the token", token, "Bearer " + token, http.StatusOK},
		{"no header", token, "", http.StatusUnauthorized},
		{"a wrong token", token, "Bearer metrics-token-0123456788", http.StatusUnauthorized},
		{"a prefix of the token", token, "Bearer metrics-token", http.StatusUnauthorized},
		{"the token without the scheme", token, token, http.StatusUnauthorized},
		{"basic auth", token, "Basic " + token, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/metrics", nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			w := httptest.NewRecorder()
			RequireBearer(tc.token, ok).ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Errorf("status %d, want %d", w.Code, tc.want)
			}
			if w.Code == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
				t.Error("a 401 without WWW-Authenticate")
			}
		})
	}
}
