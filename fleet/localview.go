package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/changes"
	"github.com/skillfleet/skillfleet/flaky"
	"github.com/skillfleet/skillfleet/history"
	"github.com/skillfleet/skillfleet/internal/httpserve"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
	"github.com/skillfleet/skillfleet/web"
)

// ErrReadOnly is what the viewer of a history answers to a cancel: its runs ended long ago,
// and it changes nothing.
var ErrReadOnly = errors.New("the viewer of a history is read-only: it cancels nothing")

// archiveSource is the runs a history keeps (history.Store.WriteArchive: those of
// `skillfleet test`) as the web viewer reads them. A run the history has only the rows of (a
// coordinator's) is listed, and its pages say that it was not kept.
type archiveSource struct{ store *history.Store }

var _ web.Source = archiveSource{}

// archiveErr makes the history's "no such run" and "not kept" the viewer's 404.
func archiveErr(err error) error {
	if errors.Is(err, history.ErrNotFound) || errors.Is(err, history.ErrNotArchived) {
		return fmt.Errorf("%w: %w", web.ErrNotFound, err)
	}
	return err
}

func (s archiveSource) List(ctx context.Context) ([]*pb.RunStatus, error) {
	return s.store.Runs(ctx, 0)
}

func (s archiveSource) Status(ctx context.Context, id string) (*pb.RunStatus, error) {
	st, err := s.store.Status(ctx, id)
	return st, archiveErr(err)
}

// Report is the run's report as it was when the run ended (with what changed and its flaky
// labels then).
func (s archiveSource) Report(ctx context.Context, id string) (report.Report, error) {
	a, err := s.store.ArchivedRun(ctx, id)
	if err != nil {
		return report.Report{}, archiveErr(err)
	}
	rep, err := report.FromJSON(strings.NewReader(string(a.Report)))
	if err != nil {
		return report.Report{}, fmt.Errorf("the report of run %s: %w", id, err)
	}
	return rep, nil
}

// AcceptedResults replays the results kept; those the archive's bound left out are missing
// (their cases show the report's evidence only).
func (s archiveSource) AcceptedResults(ctx context.Context, id string, fn func(*pb.Result) error) error {
	return archiveErr(s.store.ArchivedResults(ctx, id, fn))
}

// CaseResults replays the kept results of one case.
func (s archiveSource) CaseResults(ctx context.Context, id, skill, caseName string, fn func(*pb.Result) error) error {
	return s.AcceptedResults(ctx, id, func(res *pb.Result) error {
		if res.GetSkill() != skill || res.GetCaseName() != caseName {
			return nil
		}
		return fn(res)
	})
}

// ResolveDocuments does nothing: an archived result's documents are inline.
func (archiveSource) ResolveDocuments(context.Context, *pb.Result) {}

func (archiveSource) Cancel(context.Context, string) (*pb.RunStatus, error) {
	return nil, ErrReadOnly
}

// archiveFlaky labels a suite's cells from the history's recent verdicts, as `skillfleet
// flaky` does without a coordinator.
type archiveFlaky struct {
	store *history.Store
	cfg   flaky.Config
}

func (f archiveFlaky) FlakyCells(ctx context.Context, team, suite, lane string) ([]report.FlakyCell, error) {
	return changes.FlakyCells(ctx, f.store, team, suite, lane, f.cfg)
}

// LocalViewerConfig is `skillfleet view`: the web viewer, read-only, over a local history.
type LocalViewerConfig struct {
	// Addr is where to listen: a loopback address (CheckLoopbackAddr); "" = 127.0.0.1:0.
	Addr string
	// Token is the viewer's one token, required: its link (URL) logs a browser in, and the
	// login form takes it too.
	Token string
	// Flaky tunes the flaky labels of skill pages (zero: flaky's defaults).
	Flaky flaky.Config
	// Log receives what goes wrong behind a page (nil: none).
	Log *zap.Logger
}

// LocalViewer is the viewer of a local history, listening.
type LocalViewer struct {
	srv *httpserve.Server
	url string
}

// CheckLoopbackAddr refuses an address to listen on that is not this machine's loopback: the
// viewer of a history is one person's, and its link carries its token. "localhost" is taken
// as 127.0.0.1, so that what is bound does not depend on name resolution.
func CheckLoopbackAddr(addr string) (string, error) {
	if addr == "" {
		return "127.0.0.1:0", nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", refuse("--addr %q: want HOST:PORT on loopback, such as 127.0.0.1:0", addr)
	}
	if strings.EqualFold(host, "localhost") {
		host = "127.0.0.1"
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return "", refuse("--addr %q: the viewer of a local history listens on loopback only (127.0.0.1, ::1), not %q", addr, host)
	}
	return net.JoinHostPort(host, port), nil
}

// StartLocalViewer listens on cfg.Addr and builds the viewer over store's archived runs:
// read-only (no cancel form; a POST to cancel is refused), its token the only login, and
// requests for a Host other than loopback refused, so that a DNS-rebinding page gets
// nothing. Serve serves it.
func StartLocalViewer(cfg LocalViewerConfig, store *history.Store) (*LocalViewer, error) {
	if store == nil {
		return nil, errors.New("fleet: the viewer needs a history")
	}
	if cfg.Token == "" {
		return nil, errors.New("fleet: the viewer of a history needs a token")
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	addr, err := CheckLoopbackAddr(cfg.Addr)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--addr %s: %w", addr, err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	viewer, err := web.New(web.Config{
		Viewers:  []web.Token{{Name: "local", Secret: cfg.Token}},
		ReadOnly: true, LinkLogin: true,
		// One user, whose link this is: its pages may take every heavy slot.
		MaxHeavyPerPrincipal: -1,
		// Cookies go to every port of a host: each viewer's is its own.
		CookieName: "skillfleet_view_" + strconv.Itoa(port),
		Log:        cfg.Log.Named("web"),
	}, web.Deps{Source: archiveSource{store}, History: store, Flaky: archiveFlaky{store: store, cfg: cfg.Flaky}})
	if err != nil {
		_ = l.Close()
		return nil, err
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !httpserve.LoopbackHost(r.Host) {
			w.Header().Set("Content-Security-Policy", web.CSP)
			w.Header().Set("X-Content-Type-Options", "nosniff")
			http.Error(w, "this viewer serves loopback hosts only (127.0.0.1, ::1, localhost)", http.StatusForbidden)
			return
		}
		viewer.ServeHTTP(w, r)
	})
	u := url.URL{Scheme: "http", Host: l.Addr().String(), Path: "/", RawQuery: url.Values{"token": {cfg.Token}}.Encode()}
	return &LocalViewer{srv: httpserve.New(l, h, httpserve.Config{}), url: u.String()}, nil
}

// URL is the viewer's link, its token in the query: opening it logs in.
func (v *LocalViewer) URL() string { return v.url }

// Serve serves until ctx ends, then shuts down: requests under way get a few seconds to
// finish.
func (v *LocalViewer) Serve(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- v.srv.Serve() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := v.srv.HTTP.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = v.srv.HTTP.Close()
	}
	return errors.Join(err, <-done)
}
