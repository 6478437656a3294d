package web

import (
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/skillfleet/skillfleet/internal/httpserve"
	"github.com/skillfleet/skillfleet/internal/tenant"
)

// Outcomes of the audit records the viewer makes.
const (
	outcomeOK      = "ok"
	outcomeRefused = "refused"
)

// audit records a login, a logout or a refused change, when the viewer has an audit log.
func (srv *Server) audit(who tenant.Principal, action, object, outcome, detail string) {
	if srv.auditor != nil {
		srv.auditor.Audit(who, action, object, outcome, detail)
	}
}

// Sessions are server-side: the cookie holds a random id (32 bytes from Config.Random) that
// names a session in memory, with its holder, role, CSRF token and expiry. Logging out deletes
// it at once; a restarted coordinator has none, so everyone logs in again. Several coordinators
// behind one address need sticky sessions.

// sessionCookie is the session cookie's name unless Config.CookieName says otherwise.
const sessionCookie = "skillfleet_session"

// session is one login.
type session struct {
	id, csrf string
	// who is the token's holder (or the proxy's user); its Name is "" for the anonymous
	// visitor of a token-less viewer.
	who     tenant.Principal
	expires time.Time
	created time.Time
}

// visitor is who a request comes from.
type visitor struct {
	tenant.Principal
	// CSRF is the token the page's forms carry.
	CSRF string
	// Anonymous: a token-less viewer, where nobody logs in (or out). Proxied: the proxy in
	// front logs people in and out.
	Anonymous, Proxied bool
}

// CanCancel reports whether the visitor may cancel runs: of the runs a page shows (its
// team's, or every team's for an admin), a member's or an admin's.
func (v *visitor) CanCancel() bool { return v != nil && v.Role >= tenant.Member }

// sessions keeps the logins, at most max of them.
type sessions struct {
	// cookie is the session cookie's name.
	cookie string
	ttl    time.Duration
	max    int
	now    func() time.Time
	rand   io.Reader

	mu   sync.Mutex
	byID map[string]*session
}

func newSessions(cookie string, ttl time.Duration, max int, now func() time.Time, rand io.Reader) *sessions {
	return &sessions{cookie: cookie, ttl: ttl, max: max, now: now, rand: rand, byID: map[string]*session{}}
}

func (s *sessions) token() (string, error) {
	var b [32]byte
	if _, err := io.ReadFull(s.rand, b[:]); err != nil {
		return "", fmt.Errorf("session: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// start makes a session for a token's holder.
func (s *sessions) start(who tenant.Principal) (*session, error) {
	id, err := s.token()
	if err != nil {
		return nil, err
	}
	csrf, err := s.token()
	if err != nil {
		return nil, err
	}
	now := s.now()
	ss := &session{id: id, csrf: csrf, who: who, created: now, expires: now.Add(s.ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	// A holder's own logins make room for its next one: logging in over and over (a viewer's
	// token will do) ends only its holder's sessions, never other people's.
	if own := s.ofHolderLocked(who.Name, now); len(own) >= maxSessionsPerHolder {
		delete(s.byID, own[0].id)
	}
	if len(s.byID) >= s.max {
		s.evictLocked(now)
	}
	s.byID[id] = ss
	return ss, nil
}

// maxSessionsPerHolder bounds the live logins of one token's holder: a person's browsers
// and devices, with room to spare.
const maxSessionsPerHolder = 32

// ofHolderLocked is a holder's live sessions, oldest first; the caller holds mu.
func (s *sessions) ofHolderLocked(name string, now time.Time) []*session {
	var own []*session
	for _, ss := range s.byID {
		if ss.who.Name == name && now.Before(ss.expires) {
			own = append(own, ss)
		}
	}
	slices.SortFunc(own, func(a, b *session) int { return a.created.Compare(b.created) })
	return own
}

// evictLocked drops the expired sessions and, when none had expired, the oldest session of
// the holder with the most: with every holder bounded, the many holders' sessions are what
// the cap trims, each holder's oldest first.
func (s *sessions) evictLocked(now time.Time) {
	count := map[string]int{}
	for id, ss := range s.byID {
		if !now.Before(ss.expires) {
			delete(s.byID, id)
			continue
		}
		count[ss.who.Name]++
	}
	if len(s.byID) < s.max {
		return
	}
	var victim *session
	for _, ss := range s.byID {
		if victim == nil || count[ss.who.Name] > count[victim.who.Name] ||
			(count[ss.who.Name] == count[victim.who.Name] && ss.created.Before(victim.created)) {
			victim = ss
		}
	}
	if victim != nil {
		delete(s.byID, victim.id)
	}
}

// get returns the live session a request's cookie names, or nil.
func (s *sessions) get(r *http.Request) *session {
	c, err := r.Cookie(s.cookie)
	if err != nil || c.Value == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.byID[c.Value]
	if ss == nil {
		return nil
	}
	if !s.now().Before(ss.expires) {
		delete(s.byID, ss.id)
		return nil
	}
	return ss
}

func (s *sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byID, id)
}

// setCookie gives the browser its session: HttpOnly (no script reads it), SameSite=Strict (no
// other site's page sends it), Secure over TLS or when configured.
func (srv *Server) setCookie(w http.ResponseWriter, r *http.Request, ss *session) {
	http.SetCookie(w, &http.Cookie{
		Name: srv.cfg.CookieName, Value: ss.id, Path: "/", MaxAge: int(srv.cfg.SessionTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || srv.cfg.SecureCookies,
	})
}

func (srv *Server) clearCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: srv.cfg.CookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || srv.cfg.SecureCookies,
	})
}

// authed wraps a page: it finds the visitor, or sends a browser to the login form (GET) or
// refuses (anything else), and gives the page a request whose context carries the visitor's
// principal, which every read of the Source is checked against. A token-less viewer serves
// loopback Hosts only, and gives each browser an anonymous session so that its forms carry a
// CSRF token; a user an authenticating proxy names (Config.Proxy) gets a session the same
// way, without a login.
func (srv *Server) authed(page func(http.ResponseWriter, *http.Request, *visitor)) http.HandlerFunc {
	h := func(w http.ResponseWriter, r *http.Request, v *visitor) {
		page(w, r.WithContext(tenant.With(r.Context(), v.Principal)), v)
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if p, ok, err := srv.cfg.Proxy.FromRequest(r); err != nil {
			srv.audit(tenant.Principal{}, "login", "viewer", outcomeRefused, err.Error())
			srv.fail(w, r, nil, http.StatusUnauthorized, err)
			return
		} else if ok {
			if srv.cfg.ReadOnly {
				p.Role = tenant.Viewer
			}
			ss := srv.sessions.get(r)
			if ss == nil || ss.who != p {
				// A new user behind the same browser (or a changed role) gets a new session:
				// a session is never another principal's.
				var err error
				if ss, err = srv.sessions.start(p); err != nil {
					srv.fail(w, r, nil, http.StatusInternalServerError, err)
					return
				}
				srv.setCookie(w, r, ss)
			}
			h(w, r, &visitor{Principal: p, CSRF: ss.csrf, Proxied: true})
			return
		}
		if srv.anonymous {
			if !httpserve.LoopbackHost(r.Host) {
				srv.fail(w, r, nil, http.StatusForbidden, fmt.Errorf("without tokens this viewer serves only loopback hosts (127.0.0.1, ::1, localhost), not %q: configure the coordinator's tokens to serve others", r.Host))
				return
			}
			ss := srv.sessions.get(r)
			if ss == nil {
				who := tenant.Anonymous
				if srv.cfg.ReadOnly {
					who.Role = tenant.Viewer
				}
				var err error
				if ss, err = srv.sessions.start(who); err != nil {
					srv.fail(w, r, nil, http.StatusInternalServerError, err)
					return
				}
				srv.setCookie(w, r, ss)
			}
			h(w, r, &visitor{Principal: ss.who, CSRF: ss.csrf, Anonymous: true})
			return
		}
		if srv.cfg.LinkLogin && (r.Method == http.MethodGet || r.Method == http.MethodHead) && r.URL.Query().Has("token") {
			srv.linkLogin(w, r)
			return
		}
		ss := srv.sessions.get(r)
		if ss == nil {
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			srv.fail(w, r, nil, http.StatusUnauthorized, errors.New("log in first"))
			return
		}
		h(w, r, &visitor{Principal: ss.who, CSRF: ss.csrf})
	}
}

// checkPost refuses a state-changing request that another site's page could have made: one
// whose Origin (or, without it, Sec-Fetch-Site) says it came from elsewhere, and, when the
// visitor has a session, one without the session's CSRF token.
func checkPost(r *http.Request, v *visitor) error {
	if err := sameOrigin(r); err != nil {
		return err
	}
	if v == nil {
		return nil
	}
	got := r.PostFormValue("csrf")
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(v.CSRF)) != 1 {
		return errors.New("the form's CSRF token is missing or stale: reload the page and try again")
	}
	return nil
}

// sameOrigin refuses a request a browser says came from another origin.
func sameOrigin(r *http.Request) error {
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		u, err := url.Parse(o)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return fmt.Errorf("a form of another site (%q) cannot post here", o)
		}
		return nil
	} else if o == "null" && r.Header.Get("Sec-Fetch-Site") != "same-origin" {
		// Chromium sends "Origin: null" on a form posted from a page of this very site, since
		// every page here is served with Referrer-Policy: no-referrer; it then says
		// Sec-Fetch-Site: same-origin. A sandboxed frame or a data: page elsewhere says
		// cross-site, or nothing.
		return errors.New("a form of an opaque origin cannot post here")
	}
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return errors.New("a form of another site cannot post here")
	}
	return nil
}

// embedded reports whether a browser says another site's page loaded r as a resource (an
// image, a frame, a fetch) rather than navigating its window to it.
func embedded(r *http.Request) bool {
	site, dest := r.Header.Get("Sec-Fetch-Site"), r.Header.Get("Sec-Fetch-Dest")
	return (site == "cross-site" || site == "same-site") && dest != "" && dest != "document"
}

// loginPage is the login form's data.
type loginPage struct {
	Next, Error string
	Anonymous   bool
	// ReadOnly: the viewer of a history, whose token its owner's terminal shows.
	ReadOnly bool
}

func (srv *Server) loginForm(w http.ResponseWriter, r *http.Request) {
	if srv.anonymous {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	srv.render(w, r, http.StatusOK, "login", "Log in", nil, loginPage{Next: localPath(r.URL.Query().Get("next")), ReadOnly: srv.cfg.ReadOnly})
}

// login checks the token of the form against every configured token (match).
func (srv *Server) login(w http.ResponseWriter, r *http.Request) {
	if srv.anonymous {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := sameOrigin(r); err != nil {
		srv.fail(w, r, nil, http.StatusForbidden, err)
		return
	}
	next := localPath(r.PostFormValue("next"))
	token := r.PostFormValue("token")
	if token == "" {
		// No guess, so no cost (the form requires a token; a post without one is no person's).
		srv.render(w, r, http.StatusUnauthorized, "login", "Log in", nil, loginPage{Next: next, Error: "Paste a token to log in.", ReadOnly: srv.cfg.ReadOnly})
		return
	}
	// Refused unread once the address has guessed wrong too often, a right guess included,
	// or the limit would not slow the guessing.
	if retry, blocked := srv.cfg.Guesses.Blocked(r); blocked {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(retry.Seconds()))))
		srv.render(w, r, http.StatusTooManyRequests, "login", "Log in", nil, loginPage{Next: next, ReadOnly: srv.cfg.ReadOnly,
			Error: fmt.Sprintf("Too many wrong tokens from this address: try again in %s.", retry.Round(time.Second))})
		return
	}
	who, found := srv.match([]byte(token))
	if !found {
		srv.cfg.Guesses.Failed(r)
		srv.audit(tenant.Principal{}, "login", "viewer", outcomeRefused, "wrong token at the login form from "+r.RemoteAddr)
		srv.render(w, r, http.StatusUnauthorized, "login", "Log in", nil, loginPage{Next: next, Error: "That token is not accepted here.", ReadOnly: srv.cfg.ReadOnly})
		return
	}
	srv.startSession(w, r, who, next)
}

// startSession logs who in and sends the browser on to next.
func (srv *Server) startSession(w http.ResponseWriter, r *http.Request, who tenant.Principal, next string) {
	ss, err := srv.sessions.start(who)
	if err != nil {
		srv.fail(w, r, nil, http.StatusInternalServerError, err)
		return
	}
	srv.audit(who, "login", "viewer", outcomeOK, "")
	srv.setCookie(w, r, ss)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// match finds the token got among the configured ones, each compared in constant time so
// that timing tells neither a token nor which one matched. A viewer token's holder is a
// viewer whatever its line says, and a read-only viewer makes every holder one.
func (srv *Server) match(got []byte) (who tenant.Principal, found bool) {
	for _, t := range srv.cfg.Viewers {
		if subtle.ConstantTimeCompare(got, []byte(t.Secret)) == 1 {
			who, found = t.principal(tenant.Viewer), true
			who.Role = tenant.Viewer
		}
	}
	for _, t := range srv.cfg.Operators {
		if subtle.ConstantTimeCompare(got, []byte(t.Secret)) == 1 {
			who, found = t.principal(tenant.Member), true
		}
	}
	if srv.cfg.ReadOnly {
		who.Role = tenant.Viewer
	}
	return who, found && len(got) > 0
}

// linkLogin logs in with the token of a link (Config.LinkLogin) and sends the browser to the
// same page without it; a wrong token gets the login form, and counts against the address's
// budget as one typed there does.
func (srv *Server) linkLogin(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	got := q.Get("token")
	q.Del("token")
	next := r.URL.Path
	if len(q) > 0 {
		next += "?" + q.Encode()
	}
	next = localPath(next)
	if got == "" {
		srv.render(w, r, http.StatusUnauthorized, "login", "Log in", nil, loginPage{Next: next, ReadOnly: srv.cfg.ReadOnly, Error: "The link has no token."})
		return
	}
	if embedded(r) {
		// A page of another site loading the link as an image or a frame is no person
		// following it: refused, and not counted against the address.
		srv.fail(w, r, nil, http.StatusForbidden, errors.New("a link login must be opened, not embedded in another site's page"))
		return
	}
	if retry, blocked := srv.cfg.Guesses.Blocked(r); blocked {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(retry.Seconds()))))
		srv.render(w, r, http.StatusTooManyRequests, "login", "Log in", nil, loginPage{Next: next, ReadOnly: srv.cfg.ReadOnly,
			Error: fmt.Sprintf("Too many wrong tokens from this address: try again in %s.", retry.Round(time.Second))})
		return
	}
	who, found := srv.match([]byte(got))
	if !found {
		srv.cfg.Guesses.Failed(r)
		srv.audit(tenant.Principal{}, "login", "viewer", outcomeRefused, "wrong token in a link from "+r.RemoteAddr)
		srv.render(w, r, http.StatusUnauthorized, "login", "Log in", nil, loginPage{Next: next, ReadOnly: srv.cfg.ReadOnly, Error: "The link's token is not accepted here (a viewer's link lasts as long as the viewer that printed it)."})
		return
	}
	srv.startSession(w, r, who, next)
}

func (srv *Server) logout(w http.ResponseWriter, r *http.Request, v *visitor) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := checkPost(r, v); err != nil {
		srv.fail(w, r, v, http.StatusForbidden, err)
		return
	}
	if ss := srv.sessions.get(r); ss != nil {
		srv.sessions.end(ss.id)
		srv.audit(ss.who, "logout", "viewer", outcomeOK, "")
	}
	srv.clearCookie(w, r)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// localPath keeps a post-login destination on this site: a path, never a scheme-relative
// "//host" or a "/\host" some browsers read as one.
func localPath(p string) string {
	// Browsers drop tabs and newlines from a URL and read a backslash as a slash, so a path
	// holding any of them (or another control character) could become //host: refused, as
	// is anything a URL parser reads a scheme, a host or user info in.
	if p == "" || p[0] != '/' || strings.HasPrefix(p, "//") ||
		strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) {
		return "/"
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || strings.HasPrefix(u.Path, "//") {
		return "/"
	}
	return p
}
