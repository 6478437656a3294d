package web

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/internal/tenant"
)

// TestLoginFloodEndsOnlyItsHoldersSessions: the review's logout flood. Any token, a viewer's
// too, logged in 10,000 times and the cap on sessions evicted everybody else's. A holder's own
// logins now make room for its next one, and the cap trims the holder with the most sessions.
func TestLoginFloodEndsOnlyItsHoldersSessions(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	s := newSessions(sessionCookie, time.Hour, 100, clock, rand.Reader)
	var others []*session
	for i := range 80 {
		now = now.Add(time.Second)
		ss, err := s.start(tenant.Principal{Name: fmt.Sprintf("person-%d", i), Team: "teamA", Role: tenant.Viewer})
		if err != nil {
			t.Fatal(err)
		}
		others = append(others, ss)
	}
	for range 10000 {
		now = now.Add(time.Millisecond)
		if _, err := s.start(tenant.Principal{Name: "mallory", Team: "teamB", Role: tenant.Viewer}); err != nil {
			t.Fatal(err)
		}
	}
	for i, ss := range others {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.AddCookie(&http.Cookie{Name: sessionCookie, Value: ss.id})
		if s.get(r) == nil {
			t.Fatalf("person-%d was logged out by another holder's logins", i)
		}
	}
	s.mu.Lock()
	own := len(s.ofHolderLocked("mallory", now))
	total := len(s.byID)
	s.mu.Unlock()
	if own > maxSessionsPerHolder || total > 100 {
		t.Errorf("mallory holds %d sessions, %d in all; want at most %d and the cap of 100", own, total, maxSessionsPerHolder)
	}
}

// TestProxyRepeatedIdentityHeaderRefused: behind an authenticating proxy, a page request whose
// identity headers came twice (a proxy that appends to the client's) gets no session and no
// page: 401, naming the header.
func TestProxyRepeatedIdentityHeaderRefused(t *testing.T) {
	proxy := &tenant.Proxy{Trusted: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")},
		UserHeader: "X-Webauth-User", TeamHeader: "X-Webauth-Team", RoleHeader: "X-Webauth-Role"}
	s, err := New(Config{Proxy: proxy, Now: func() time.Time { return t0 }}, Deps{Source: newFake()})
	if err != nil {
		t.Fatal(err)
	}
	if w := do(s, "GET", "/", nil, nil, "X-Webauth-User", "carol", "X-Webauth-Role", "member"); w.Code != http.StatusOK {
		t.Fatalf("one of each header: %d, want 200", w.Code)
	}
	for _, vals := range [][]string{{"admin", "member"}, {"admin,member"}} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("X-Webauth-User", "carol")
		for _, v := range vals {
			r.Header.Add("X-Webauth-Role", v)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != http.StatusUnauthorized || len(w.Result().Cookies()) > 0 || !strings.Contains(w.Body.String(), "X-Webauth-Role") {
			t.Errorf("role %q: %d, cookies %v; want 401 naming the header and no session", vals, w.Code, w.Result().Cookies())
		}
	}
}
