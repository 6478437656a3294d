package web

import (
	"bytes"
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"time"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/internal/authlimit"
	"github.com/skillfleet/skillfleet/internal/httpserve"
)

//go:embed templates/*.tmpl
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// CSP is the Content-Security-Policy of every response: scripts and styles only from this
// origin (no inline script or style, so injected markup could not run or restyle anything),
// fetches only to it, forms only to it, and no framing.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// maxFormBytes bounds a form's body: the forms carry a token and a CSRF token.
const maxFormBytes = 16 << 10

// Server is the viewer's HTTP handler.
type Server struct {
	cfg       Config
	src       Source
	hist      History
	flaky     Flaky
	auditor   Auditor
	log       *zap.Logger
	pages     map[string]*template.Template
	sessions  *sessions
	anonymous bool
	mux       *http.ServeMux
	// heavy holds a slot per heavy page being served (Config.MaxHeavy, MaxHeavyPerPrincipal).
	heavy *httpserve.Slots
}

// New makes the viewer. Its tokens must be distinct: a secret that is both an operator's and
// a viewer's would make its holder's role a matter of list order.
func New(cfg Config, deps Deps) (*Server, error) {
	if deps.Source == nil {
		return nil, errors.New("web: a source of runs is required")
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 12 * time.Hour
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 10_000
	}
	if cfg.PageSize <= 0 {
		cfg.PageSize = 200
	}
	if cfg.RunsPageSize <= 0 {
		cfg.RunsPageSize = 50
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Random == nil {
		cfg.Random = rand.Reader
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	if cfg.Guesses == nil {
		cfg.Guesses, _ = authlimit.New(authlimit.DefaultConfig(), cfg.Now, nil) // unregistered: cannot fail
	}
	seen := map[string]bool{}
	for _, t := range append(append([]Token(nil), cfg.Operators...), cfg.Viewers...) {
		if t.Secret == "" {
			return nil, fmt.Errorf("web: token %q is empty", t.Name)
		}
		if seen[t.Secret] {
			return nil, fmt.Errorf("web: token %q is given twice (an operator's token cannot also be a viewer's)", t.Name)
		}
		seen[t.Secret] = true
	}
	if cfg.CookieName == "" {
		cfg.CookieName = sessionCookie
	}
	if cfg.MaxHeavy <= 0 {
		cfg.MaxHeavy = 4
	}
	switch {
	case cfg.MaxHeavyPerPrincipal == 0:
		cfg.MaxHeavyPerPrincipal = max(cfg.MaxHeavy/4, 1)
	case cfg.MaxHeavyPerPrincipal < 0 || cfg.MaxHeavyPerPrincipal > cfg.MaxHeavy:
		cfg.MaxHeavyPerPrincipal = cfg.MaxHeavy
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	if len(cfg.Operators) == 0 && len(cfg.Viewers) > 0 && !cfg.ReadOnly {
		return nil, errors.New("web: viewer tokens need operator tokens: without them the viewer serves loopback callers without a login, and a viewer token would protect nothing")
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, src: deps.Source, hist: deps.History, flaky: deps.Flaky, auditor: deps.Audit, log: cfg.Log, pages: pages,
		sessions: newSessions(cfg.CookieName, cfg.SessionTTL, cfg.MaxSessions, cfg.Now, cfg.Random),
		// Behind an authenticating proxy nobody is anonymous: a request the proxy did not
		// vouch for needs a token.
		anonymous: len(cfg.Operators) == 0 && len(cfg.Viewers) == 0 && !cfg.Proxy.Enabled(),
		heavy:     httpserve.NewSlots(cfg.MaxHeavy, cfg.MaxHeavyPerPrincipal),
	}
	s.mux = s.routes()
	return s, nil
}

func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /assets/{name}", s.asset)
	mux.HandleFunc("GET /login", s.loginForm)
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("POST /logout", s.authed(s.logout))
	mux.HandleFunc("GET /{$}", s.authed(s.runsPage))
	mux.HandleFunc("GET /runs/{id}", s.authed(s.runPage))
	mux.HandleFunc("GET /runs/{id}/cases", s.authed(s.bounded(s.casePage)))
	mux.HandleFunc("GET /runs/{id}/trajectory", s.authed(s.bounded(s.trajectoryFile)))
	mux.HandleFunc("GET /runs/{id}/report.html", s.authed(s.bounded(s.reportFile)))
	mux.HandleFunc("POST /runs/{id}/cancel", s.authed(s.cancel))
	mux.HandleFunc("GET /skills/{name}", s.authed(s.skillPage))
	mux.HandleFunc("GET /compare", s.authed(s.bounded(s.comparePage)))
	mux.HandleFunc("/", s.authed(func(w http.ResponseWriter, r *http.Request, v *visitor) {
		s.fail(w, r, v, http.StatusNotFound, errors.New("there is no such page"))
	}))
	return mux
}

// ServeHTTP serves the viewer; every response carries the security headers.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	s.mux.ServeHTTP(w, r)
}

// asset serves the embedded stylesheet and script.
func (s *Server) asset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	b, err := fs.ReadFile(assetFS, path.Join("assets", name))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	switch path.Ext(name) {
	case ".css":
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	case ".js":
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=3600")
	_, _ = w.Write(b)
}

// layout is what every page's frame shows around its content.
type layout struct {
	Title   string
	Visitor *visitor
	Body    any
}

// render executes a page into memory first, so that a failing template answers 500 rather
// than half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, page, title string, v *visitor, body any) {
	t := s.pages[page]
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", layout{Title: title, Visitor: v, Body: body}); err != nil {
		s.log.Error("rendering a page", zap.String("page", page), zap.Error(err))
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

// errorPage is the data of an error.
type errorPage struct {
	Code    int
	Status  string
	Message string
}

// fail answers an error page. Its message may name a run or a case, which the template
// escapes like any other text.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, v *visitor, code int, err error) {
	msg := err.Error()
	if code == http.StatusInternalServerError {
		s.log.Warn("viewer request failed", zap.String("path", r.URL.Path), zap.Error(err))
		// An internal error (the database's, the queue's) is for the log: it may name hosts,
		// users and tables.
		msg = "this page could not be read; the coordinator's log says why"
	}
	if errors.Is(err, context.Canceled) {
		code, msg = 499, "the request was cancelled"
	}
	s.render(w, r, code, "error", http.StatusText(code), v, errorPage{Code: code, Status: http.StatusText(code), Message: clipEscaped(msg, 4<<10).Text})
}

// lookupCode is the status for a Source's error.
func lookupCode(err error) int {
	switch {
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrForbidden):
		return http.StatusForbidden
	case errors.Is(err, ErrGone):
		return http.StatusGone
	}
	return http.StatusInternalServerError
}

// bounded serves h only within a heavy-page slot: a principal holds at most its share of them
// (MaxHeavyPerPrincipal), and all together at most MaxHeavy. Past either it answers 503 at
// once, asking to come back shortly, rather than queue requests that each read a run's results
// back. Every write of h has a deadline (WriteTimeout), so a client that stops reading is cut
// off and its slot given back.
func (s *Server) bounded(h func(http.ResponseWriter, *http.Request, *visitor)) func(http.ResponseWriter, *http.Request, *visitor) {
	return func(w http.ResponseWriter, r *http.Request, v *visitor) {
		release, err := s.heavy.Acquire(v.Share())
		if err != nil {
			msg := "the viewer is serving as many heavy pages as it may at once; try again in a moment"
			if full := (*httpserve.FullError)(nil); errors.As(err, &full) && full.PerKey {
				msg = "you have as many heavy pages loading as one person may at once; try again when they are done"
			}
			w.Header().Set("Retry-After", "2")
			s.fail(w, r, v, http.StatusServiceUnavailable, errors.New(msg))
			return
		}
		defer release()
		rc := http.NewResponseController(w)
		h(httpserve.WriteDeadlines(w, s.cfg.WriteTimeout), r, v)
		// What h left buffered goes out after it returns, under a deadline of its own.
		_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	}
}
