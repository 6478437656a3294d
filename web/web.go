// Package web is the coordinator's web viewer: server-rendered pages (html/template) over the
// runs a coordinator holds — the runs list, a run with its cases, a case with every epoch's
// evidence and trajectory, a skill's history, and comparisons — and the self-contained HTML
// report `skillfleet test --html` and `runs report --format html` write.
//
// Pages work without JavaScript; one small embedded script only refreshes a page while its run
// goes. Everything a suite supplies (names, outputs, transcripts, files) is untrusted: it is
// escaped by html/template, clipped to bounded sizes, and served under a strict
// Content-Security-Policy. No GET changes state: cancelling is a POST with a CSRF token bound
// to the session, and needs an operator's token (see Config).
//
// The package defines what it reads (Source, History, Flaky) and imports neither the
// coordinator nor the queue: package fleet adapts them and mounts the handler.
package web

import (
	"context"
	"errors"
	"io"
	"time"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/history"
	"github.com/skillfleet/skillfleet/internal/authlimit"
	"github.com/skillfleet/skillfleet/internal/tenant"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
)

// ErrNotFound is what a Source's errors wrap for a run it does not know; the viewer answers
// 404 for it.
var ErrNotFound = errors.New("not found")

// ErrForbidden is what a Source's errors wrap for a change the visitor's role may not make;
// the viewer answers 403 for it.
var ErrForbidden = errors.New("forbidden")

// ErrGone is what a Source's errors wrap for the results of a run that are no longer kept
// (its report is); the viewer answers 410 with the error's words.
var ErrGone = errors.New("gone")

// Source is what the viewer reads of a coordinator, and the one thing it changes (Cancel).
type Source interface {
	// List returns every run, newest first.
	List(ctx context.Context) ([]*pb.RunStatus, error)
	// Status returns a run's state.
	Status(ctx context.Context, id string) (*pb.RunStatus, error)
	// Report returns a run's report: live while it goes, final once it ended.
	Report(ctx context.Context, id string) (report.Report, error)
	// AcceptedResults calls fn with each result the run's report counts, documents as stored,
	// filed under its job's identity.
	AcceptedResults(ctx context.Context, id string, fn func(*pb.Result) error) error
	// CaseResults is AcceptedResults for one case (every agent and arm of it), read at the
	// case's cost whatever the run's size.
	CaseResults(ctx context.Context, id, skill, caseName string, fn func(*pb.Result) error) error
	// ResolveDocuments brings a result's trajectory (as ATIF JSON) and output files inline.
	ResolveDocuments(ctx context.Context, res *pb.Result)
	// Cancel stops a run.
	Cancel(ctx context.Context, id string) (*pb.RunStatus, error)
}

// History is the results history a skill's page reads; a nil History makes the page say that
// the coordinator keeps none.
type History interface {
	SkillRuns(ctx context.Context, team, suite, lane, skill string, n int) ([]history.SkillRun, error)
}

// Flaky lists the flaky cells of a team's suite in a lane ("" for every lane); nil: none are
// shown.
type Flaky interface {
	FlakyCells(ctx context.Context, team, suite, lane string) ([]report.FlakyCell, error)
}

// Token is a token the viewer accepts at its login form, with the name its holder is known
// by and the team and role that decide what the holder sees and may change.
type Token struct {
	Name, Secret string
	// Team is the holder's team ("" is tenant.DefaultTeam).
	Team string
	// Role is the holder's role (0: member for an operator's token, viewer for a viewer's).
	Role tenant.Role
}

// principal is t's holder, of role def when t names none.
func (t Token) principal(def tenant.Role) tenant.Principal {
	p := tenant.Principal{Name: t.Name, Team: tenant.Team(t.Team), Role: t.Role}
	if p.Role == 0 {
		p.Role = def
	}
	return p
}

// Auditor records what a principal did to an object of the viewer (logins, logouts, and
// refused ones) in the coordinator's audit log.
type Auditor interface {
	Audit(who tenant.Principal, action, object, outcome, detail string)
}

// Config configures the viewer.
type Config struct {
	// Operators are the API's tokens: their holders read their team's pages (an admin's:
	// every team's) and, as members or admins, cancel its runs. Viewers are read-only tokens:
	// their holders read their team's pages and cancel nothing. They are the viewer's own:
	// the API (/v1/) does not accept them.
	//
	// With neither, the viewer serves only requests for a loopback Host (as the API does
	// without a token), to anyone who can reach it there, without a login.
	Operators, Viewers []Token
	// SessionTTL is how long a login lasts (0 = 12 hours).
	SessionTTL time.Duration
	// MaxSessions bounds the sessions kept (0 = 10,000); past it the oldest go first.
	MaxSessions int
	// MaxHeavy bounds the heavy pages served at once (0 = 4): a case page, a trajectory, an
	// HTML report or a comparison reads a run's results back, and a burst of them would take
	// the coordinator's memory and CPU from the runs. Past it a request gets 503 at once.
	MaxHeavy int
	// MaxHeavyPerPrincipal is the share of MaxHeavy one principal may hold (0 = a quarter,
	// at least one; negative: all of it, for a viewer with one user), so that one viewer's
	// requests cannot make every other team's heavy pages answer 503.
	MaxHeavyPerPrincipal int
	// WriteTimeout bounds each write of a heavy page (0 = 30 s): a client that stops reading
	// one is cut off this long after, and its slot given back.
	WriteTimeout time.Duration
	// SecureCookies marks the session cookie Secure even on a plain HTTP request (a proxy in
	// front terminates TLS); a request that came over TLS gets a Secure cookie anyway.
	SecureCookies bool
	// PageSize is the cases per page of a run (0 = 200) and RunsPageSize the runs per page of
	// the list (0 = 50).
	PageSize, RunsPageSize int
	// Now is the clock of sessions and of "ago" in pages (nil: time.Now).
	Now func() time.Time
	// Random makes session ids and CSRF tokens (nil: crypto/rand).
	Random io.Reader
	// Log receives what goes wrong behind a page (nil: none).
	Log *zap.Logger
	// Guesses limits wrong logins per client address (nil: authlimit's defaults); the
	// coordinator shares its API's, so that guesses split between the two draw on one budget.
	Guesses *authlimit.Limiter
	// ReadOnly makes every visitor a viewer, whatever token they logged in with (or none):
	// no page offers to cancel, and a POST to cancel is refused (403). Viewer tokens then need
	// no operator tokens. It is the viewer of a history, where there is nothing to stop.
	ReadOnly bool
	// LinkLogin also accepts a token in the query of any page's GET (?token=…), as a
	// Jupyter server's printed link does: the visitor gets a session and is sent to the same
	// page without the token (so it leaves the address bar). The wrong-token budget applies
	// as at the form. It suits a viewer whose link is printed on its owner's terminal, not a
	// shared one, whose tokens would end up in browser histories and proxies' logs.
	LinkLogin bool
	// Proxy, when enabled, takes the visitor from an authenticating proxy's headers instead
	// of a login (single sign-on).
	Proxy *tenant.Proxy
	// CookieName names the session cookie ("" = skillfleet_session). Browsers send a cookie
	// to every port of a host, so viewers sharing a host (two on loopback) need their own.
	CookieName string
}

// Deps are the viewer's data: the coordinator (required), the history and flaky labels (nil
// when the coordinator keeps no history).
type Deps struct {
	Source  Source
	History History
	Flaky   Flaky
	// Audit keeps logins and logouts (nil: not recorded).
	Audit Auditor
}
