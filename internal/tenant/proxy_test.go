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
