package fleet

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/tenant"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
	"github.com/skillfleet/skillfleet/web"
)

// WebConfig is the coordinator's web viewer, served on its HTTP address beside the API.
type WebConfig struct {
	// ViewerTokens are read-only tokens: their holders log in to the viewer and read their
	// team's pages, but cancel nothing. The API (/v1/) does not accept them. They need API
	// tokens (the operators').
	ViewerTokens []coordinator.Token
	// SecureCookies marks the session cookie Secure on plain HTTP too: for a coordinator
	// behind a proxy that terminates TLS.
	SecureCookies bool
}

// webSource is a coordinator as the viewer reads it: its errors for an unknown run become
// web.ErrNotFound.
type webSource struct{ c *coordinator.Coordinator }

var _ web.Source = webSource{}

func notFound(err error) error {
	switch {
	case errors.Is(err, coordinator.ErrNotFound):
		return fmt.Errorf("%w: %w", web.ErrNotFound, err)
	case errors.Is(err, coordinator.ErrForbidden):
		return fmt.Errorf("%w: %w", web.ErrForbidden, err)
	case errors.Is(err, coordinator.ErrEvicted):
		return fmt.Errorf("%w: %w", web.ErrGone, err)
	}
	return err
}

func (s webSource) List(ctx context.Context) ([]*pb.RunStatus, error) { return s.c.List(ctx) }

func (s webSource) Status(ctx context.Context, id string) (*pb.RunStatus, error) {
	st, err := s.c.Status(ctx, id)
	return st, notFound(err)
}

func (s webSource) Report(ctx context.Context, id string) (report.Report, error) {
	rep, err := s.c.Report(ctx, id)
	return rep, notFound(err)
}

func (s webSource) AcceptedResults(ctx context.Context, id string, fn func(*pb.Result) error) error {
	return notFound(s.c.AcceptedResults(ctx, id, fn))
}

func (s webSource) CaseResults(ctx context.Context, id, skill, caseName string, fn func(*pb.Result) error) error {
	return notFound(s.c.CaseResults(ctx, id, skill, caseName, fn))
}

func (s webSource) ResolveDocuments(ctx context.Context, res *pb.Result) {
	s.c.ResolveDocuments(ctx, res)
}

func (s webSource) Cancel(ctx context.Context, id string) (*pb.RunStatus, error) {
	st, err := s.c.Cancel(ctx, id)
	return st, notFound(err)
}

// webTokens is the API's tokens as the viewer takes them: Tokens, and Token as "default".
func webTokens(api coordinator.APIConfig) []web.Token {
	var out []web.Token
	for _, t := range api.Tokens {
		out = append(out, web.Token{Name: t.Name, Secret: t.Secret, Team: t.Team, Role: t.Principal().Role})
	}
	if api.Token != "" {
		out = append(out, web.Token{Name: "default", Secret: api.Token})
	}
	return out
}

// Tenancy is what the viewer reads beside the coordinator; each may be nil (no history: the
// viewer's skill pages say so).
type Tenancy struct {
	History *History
	Policy  *ReportPolicy
}

// CoordinatorHandler is what the coordinator serves on its HTTP address: the API owns /v1/,
// /healthz, /readyz and /metrics; the web viewer everything else.
func CoordinatorHandler(c *coordinator.Coordinator, api coordinator.APIConfig, wc WebConfig, t Tenancy, log *zap.Logger) (http.Handler, error) {
	if log == nil {
		log = zap.NewNop()
	}
	cfg := web.Config{Operators: webTokens(api), SecureCookies: wc.SecureCookies, Log: log.Named("web"), Guesses: api.Guesses, Proxy: api.Proxy}
	for _, v := range wc.ViewerTokens {
		// A viewer token is a viewer's, whatever its line says.
		cfg.Viewers = append(cfg.Viewers, web.Token{Name: v.Name, Secret: v.Secret, Team: v.Team, Role: tenant.Viewer})
	}
	// The viewer's logins and refusals go where the coordinator's actions go: its log, and its
	// audit log when it keeps a history.
	deps := web.Deps{Source: webSource{c}, Audit: c}
	if t.History != nil {
		deps.History = t.History.Store
		if t.Policy != nil && t.Policy.History != nil {
			deps.Flaky = t.Policy
		}
	}
	viewer, err := web.New(cfg, deps)
	if err != nil {
		return nil, refuse("%w", err)
	}
	apiHandler := c.Handler(api)
	mux := http.NewServeMux()
	for _, p := range []string{"/v1/", "/healthz", "/readyz", "/metrics"} {
		mux.Handle(p, apiHandler)
	}
	mux.Handle("/", viewer)
	return mux, nil
}
