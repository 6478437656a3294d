package tenant

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Proxy takes the principal from headers an authenticating proxy in front sets (single sign-on
// the way Grafana's auth proxy does it): the user's name from UserHeader, its team from
// TeamHeader and its role from RoleHeader. Only a request whose connection comes from one of
// Trusted is believed; from anywhere else the headers are ignored, or any client could name
// itself an admin.
type Proxy struct {
	// Trusted are the proxies' addresses: the TCP peer, not X-Forwarded-For, must be one.
	Trusted []netip.Prefix
	// UserHeader names the header holding the user's name; empty turns the proxy off.
	UserHeader string
	// TeamHeader and RoleHeader name the headers of the team (absent: DefaultTeam) and the
	// role (absent: DefaultRole).
	TeamHeader, RoleHeader string
	// DefaultRole is the role of a user the proxy names without one (0 = Viewer: a
	// misconfigured proxy must not hand out changes).
	DefaultRole Role
}

// Enabled reports whether p takes principals from headers at all.
func (p *Proxy) Enabled() bool { return p != nil && p.UserHeader != "" && len(p.Trusted) > 0 }

// maxHeaderName bounds a user's name from a header: it is logged and recorded.
const maxHeaderName = 200

// FromRequest returns the principal r's proxy headers name. ok is false when they name none:
// the proxy is off, the request did not come from a trusted proxy, or the user header is
// absent (then a bearer token may still authenticate it). A trusted request whose headers
// are malformed, or repeated, is an error: it must be refused, not taken as someone else.
func (p *Proxy) FromRequest(r *http.Request) (pr Principal, ok bool, err error) {
	if !p.Enabled() || !p.trusted(r.RemoteAddr) {
		return Principal{}, false, nil
	}
	if err := p.once(r.Header); err != nil {
		return Principal{}, false, err
	}
	user := strings.TrimSpace(r.Header.Get(p.UserHeader))
	if user == "" {
		return Principal{}, false, nil
	}
	if len(user) > maxHeaderName || strings.ContainsFunc(user, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
		return Principal{}, false, fmt.Errorf("the proxy's %s header is not a user name (over %d bytes or control characters)", p.UserHeader, maxHeaderName)
	}
	pr = Principal{Name: user, Team: DefaultTeam, Role: p.DefaultRole}
	if pr.Role == 0 {
		pr.Role = Viewer
	}
	if p.TeamHeader != "" {
		if t := strings.TrimSpace(r.Header.Get(p.TeamHeader)); t != "" {
			if err := CheckTeam(t); err != nil {
				return Principal{}, false, fmt.Errorf("the proxy's %s header: %w", p.TeamHeader, err)
			}
			pr.Team = t
		}
	}
	if p.RoleHeader != "" {
		if v := strings.TrimSpace(r.Header.Get(p.RoleHeader)); v != "" {
			role, err := ParseRole(strings.ToLower(v))
			if err != nil {
				return Principal{}, false, fmt.Errorf("the proxy's %s header: %w", p.RoleHeader, err)
			}
			pr.Role = role
		}
	}
	return pr, true, nil
}

// once refuses identity headers that are present more than once, as several lines or as one
// comma-joined value: a proxy that appends its headers to the client's instead of replacing
// them passes the client's own on, and whichever value were believed, the client might have
// chosen it. The refusal names the header, never what it held.
func (p *Proxy) once(h http.Header) error {
	for _, name := range []string{p.UserHeader, p.TeamHeader, p.RoleHeader} {
		if name == "" {
			continue
		}
		switch vs := h.Values(name); {
		case len(vs) > 1:
			return fmt.Errorf("the proxy's %s header is present %d times: the proxy must replace a client's identity headers, not add to them", name, len(vs))
		case len(vs) == 1 && strings.Contains(vs[0], ","):
			return fmt.Errorf("the proxy's %s header holds a comma-joined list where one value belongs: the proxy must replace a client's identity headers, not add to them", name)
		}
	}
	return nil
}

func (p *Proxy) trusted(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, t := range p.Trusted {
		if t.Contains(a) {
			return true
		}
	}
	return false
}

// Check refuses a proxy that names headers but trusts no address (its headers would never be
// believed, silently) or names a role header with no user header.
func (p *Proxy) Check() error {
	if p == nil {
		return nil
	}
	if p.UserHeader == "" && (p.TeamHeader != "" || p.RoleHeader != "") {
		return errors.New("proxy headers: a team or role header needs a user header")
	}
	if p.UserHeader != "" && len(p.Trusted) == 0 {
		return errors.New("proxy headers: a user header needs the addresses of the proxies that set it (--trusted-proxy)")
	}
	return nil
}
