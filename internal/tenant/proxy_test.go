package tenant

import (
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func TestProxyFromRequest(t *testing.T) {
	p := &Proxy{
		Trusted:    []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")},
		UserHeader: "X-Webauth-User", TeamHeader: "X-Webauth-Team", RoleHeader: "X-Webauth-Role",
	}
	for _, c := range []struct {
		name    string
		remote  string
		headers map[string]string
		want    Principal
		ok      bool
		wantErr string
	}{
		{"trusted, all headers", "10.1.2.3:5000", map[string]string{"X-Webauth-User": "alice", "X-Webauth-Team": "teamA", "X-Webauth-Role": "Member"},
			Principal{Name: "alice", Team: "teamA", Role: Member}, true, ""},
		{"trusted, user only: default team, viewer", "10.1.2.3:5000", map[string]string{"X-Webauth-User": "bob"},
			Principal{Name: "bob", Team: DefaultTeam, Role: Viewer}, true, ""},
		{"ipv6 loopback trusted", "[::1]:5000", map[string]string{"X-Webauth-User": "carol", "X-Webauth-Role": "admin"},
			Principal{Name: "carol", Team: DefaultTeam, Role: Admin}, true, ""},
		{"ipv4-mapped trusted", "[::ffff:10.0.0.1]:5000", map[string]string{"X-Webauth-User": "dan"},
			Principal{Name: "dan", Team: DefaultTeam, Role: Viewer}, true, ""},
		{"untrusted peer: headers ignored", "192.168.1.1:5000", map[string]string{"X-Webauth-User": "eve", "X-Webauth-Role": "admin"},
			Principal{}, false, ""},
		{"trusted without user: not this way", "10.1.2.3:5000", map[string]string{"X-Webauth-Role": "admin"},
			Principal{}, false, ""},
		{"bad role refused", "10.1.2.3:5000", map[string]string{"X-Webauth-User": "eve", "X-Webauth-Role": "root"},
			Principal{}, false, "X-Webauth-Role"},
		{"bad team refused", "10.1.2.3:5000", map[string]string{"X-Webauth-User": "eve", "X-Webauth-Team": "../a"},
			Principal{}, false, "X-Webauth-Team"},
		{"control characters refused", "10.1.2.3:5000", map[string]string{"X-Webauth-User": "eve\x01"},
			Principal{}, false, "X-Webauth-User"},
		{"huge name refused", "10.1.2.3:5000", map[string]string{"X-Webauth-User": strings.Repeat("a", 300)},
			Principal{}, false, "X-Webauth-User"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = c.remote
			for k, v := range c.headers {
				r.Header.Set(k, v)
			}
			got, ok, err := p.FromRequest(r)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, c.wantErr)
				}
				return
			}
			if err != nil || ok != c.ok || got != c.want {
				t.Fatalf("got %+v, %v, %v; want %+v, %v", got, ok, err, c.want, c.ok)
			}
		})
	}
}

func TestProxyCheck(t *testing.T) {
	if err := (&Proxy{UserHeader: "X-User"}).Check(); err == nil {
		t.Error("a user header without trusted proxies was accepted")
	}
	if err := (&Proxy{RoleHeader: "X-Role"}).Check(); err == nil {
		t.Error("a role header without a user header was accepted")
	}
	if err := (&Proxy{UserHeader: "X-User", Trusted: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/32")}}).Check(); err != nil {
		t.Error(err)
	}
	var off *Proxy
	if off.Enabled() || off.Check() != nil {
		t.Error("a nil proxy is not off")
	}
}

// TestProxyRefusesRepeatedIdentityHeaders: a proxy that appends its identity headers to the
// client's instead of replacing them passes the client's own values on, and the first one
// used to win, so a client could name itself an admin. Any identity header present twice, as
// two lines or as one comma-joined value, is refused; the refusal names the header, not what
// it held.
func TestProxyRefusesRepeatedIdentityHeaders(t *testing.T) {
	p := &Proxy{
		Trusted:    []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		UserHeader: "X-Webauth-User", TeamHeader: "X-Webauth-Team", RoleHeader: "X-Webauth-Role",
	}
	for _, c := range []struct {
		name    string
		headers [][2]string // in order; a name given twice is two lines
		ok      bool
		wantErr string // the header the refusal names; "" for none
	}{
		{"one of each", [][2]string{{"X-Webauth-User", "alice"}, {"X-Webauth-Team", "teamA"}, {"X-Webauth-Role", "member"}}, true, ""},
		{"the role twice: the client's admin first", [][2]string{{"X-Webauth-User", "alice"}, {"X-Webauth-Role", "admin"}, {"X-Webauth-Role", "viewer"}}, false, "X-Webauth-Role"},
		{"the role twice, the same", [][2]string{{"X-Webauth-User", "alice"}, {"x-webauth-role", "viewer"}, {"X-Webauth-Role", "viewer"}}, false, "X-Webauth-Role"},
		{"the role comma-joined", [][2]string{{"X-Webauth-User", "alice"}, {"X-Webauth-Role", "admin, viewer"}}, false, "X-Webauth-Role"},
		{"the user twice", [][2]string{{"X-Webauth-User", "root"}, {"X-Webauth-User", "alice"}}, false, "X-Webauth-User"},
		{"the user comma-joined", [][2]string{{"X-Webauth-User", "root,alice"}}, false, "X-Webauth-User"},
		{"the user twice, one empty", [][2]string{{"X-Webauth-User", ""}, {"X-Webauth-User", "alice"}}, false, "X-Webauth-User"},
		{"the team twice", [][2]string{{"X-Webauth-User", "alice"}, {"X-Webauth-Team", "ops"}, {"X-Webauth-Team", "teamA"}}, false, "X-Webauth-Team"},
		{"the team comma-joined", [][2]string{{"X-Webauth-User", "alice"}, {"X-Webauth-Team", "ops,teamA"}}, false, "X-Webauth-Team"},
		{"the team twice without a user", [][2]string{{"X-Webauth-Team", "ops"}, {"X-Webauth-Team", "teamA"}}, false, "X-Webauth-Team"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = "10.1.2.3:5000"
			for _, h := range c.headers {
				r.Header.Add(h[0], h[1])
			}
			got, ok, err := p.FromRequest(r)
			if c.wantErr == "" {
				if err != nil || ok != c.ok {
					t.Fatalf("got %+v, %v, %v; want ok %v", got, ok, err, c.ok)
				}
				return
			}
			if err == nil || ok {
				t.Fatalf("got %+v, %v, %v; want a refusal naming %s", got, ok, err, c.wantErr)
			}
			if !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("refusal %q does not name %s", err, c.wantErr)
			}
			for _, h := range c.headers {
				if h[1] != "" && strings.Contains(err.Error(), h[1]) {
					t.Errorf("refusal %q repeats a value the request held (%q)", err, h[1])
				}
			}
		})
	}
}
