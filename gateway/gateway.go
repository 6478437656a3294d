package gateway

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/internal/jsonscan"
	"github.com/skillfleet/skillfleet/internal/modelmetrics"
)

// Defaults of a Config's zero fields.
const (
	DefaultMaxBodyBytes     = 8 << 20
	DefaultMaxResponseBytes = 32 << 20
	// DefaultMaxInFlight is how many requests of one job the gateway forwards at once.
	DefaultMaxInFlight = 4
	// DefaultMaxConnsPerSession is how many connections one job may hold on its socket.
	DefaultMaxConnsPerSession = 16
	// SocketName is the gateway's shared socket file in the directory given to ListenUnix.
	SocketName = "gateway.sock"
	// maxJSONDepth bounds a request body's nesting; a real conversation nests under 20.
	maxJSONDepth = 128
)

// APIs are the protocols an upstream may speak (an agent's api:).
const (
	APIOpenAI    = "openai"
	APIAnthropic = "anthropic"
	APIGemini    = "gemini"
)

// Config is the one upstream a Gateway forwards to.
type Config struct {
	// Name is the agent's name in the config and Model its configured model: requests are
	// counted in the model metrics under endpoint Name and model Model, never under the model
	// a CLI names (a sandbox could invent any number of them). Name defaults to "gateway".
	Name, Model string
	// API is the upstream's protocol: openai (the default), anthropic or gemini. A CLI
	// talks to an upstream of its own protocol: requests on another protocol's paths are
	// refused in that protocol's error shape, saying which one the agent speaks.
	API string
	// BaseURL is the upstream's base URL as that protocol's SDKs take it: OpenAI's with
	// its version (https://api.openai.com/v1), Anthropic's and Gemini's without
	// (https://api.anthropic.com, https://generativelanguage.googleapis.com).
	BaseURL string
	// APIKey is the real key; it never leaves the worker except towards BaseURL, and it is
	// redacted from everything the gateway answers.
	APIKey string
	// Price turns metered tokens into Session.Usage().Cost.
	Price agent.Price
	// MaxBodyBytes caps a request body (0 = 8 MiB; larger gets 413).
	MaxBodyBytes int64
	// MaxResponseBytes caps an upstream answer (0 = 32 MiB; larger gets 502).
	MaxResponseBytes int64
	// MaxInFlight is how many requests of one session are forwarded at once (0 = 4); more
	// wait for a slot (until their client gives up).
	MaxInFlight int
	// MaxConnsPerSession is how many connections one session's own socket serves at once
	// (0 = 16): a job can use up its own share, never another job's.
	MaxConnsPerSession int
	// MaxOutputTokens is the operator's max output (an agent's max_output_tokens): sent on
	// every request that names none, bounded by what the budget leaves. 0: a budgeted request
	// that names none gets the model's documented maximum (DocumentedMaxOutput), else
	// DefaultMaxOutputTokens, and an unbudgeted one is sent without (Anthropic's, which
	// requires one, with that figure). A request's own max output is kept, lowered only to
	// what the budget leaves. The figure is also what an answer without usage to a request
	// without a max output is metered at.
	MaxOutputTokens int64
	// MaxTokensField is the Chat Completions field that carries that max output:
	// "max_completion_tokens" (the default; OpenAI's reasoning models refuse max_tokens) or
	// "max_tokens" (Ollama, LM Studio and llama.cpp servers before February 2026 know only
	// that one, and ignore the other). A client's own max output keeps its field. OpenAI only.
	MaxTokensField string
	// ServiceTier, when set, is the service_tier sent on every OpenAI request; when empty a
	// client's service_tier (Codex's fast mode) is dropped, so that the job's owner, not the
	// CLI, chooses what the upstream bills. OpenAI only.
	ServiceTier string
}

// Deps are a Gateway's collaborators; zero fields get working defaults.
type Deps struct {
	// HTTP carries the upstream requests (default: a client on a clone of
	// http.DefaultTransport, with a 10-minute timeout).
	HTTP *http.Client
	// Log gets refusals and upstream failures, never a key or a token (default: no logging).
	Log *zap.Logger
	// Registry gets the model metrics of the requests the gateway forwards or refuses (nil:
	// not registered); it may be shared with the model clients.
	Registry prometheus.Registerer
	// Now is the clock of request latencies (default: time.Now).
	Now func() time.Time
}

// Gateway is the model gateway: the model endpoint of agent CLIs running inside sandboxes,
// at the native paths of three protocol families (OpenAI's Chat Completions and Responses,
// Anthropic's Messages, Gemini's generateContent; see Protocol). A CLI authenticates with a
// per-job token (Open) where its SDK puts the key; the gateway swaps it for the real key,
// forwards the request to the one configured upstream, meters its tokens into the job's
// session and enforces its budget. A request is checked (one JSON value, no duplicate key)
// and rebuilt from its protocol's allow-list, sent to the configured model, and forwarded
// only when its token reservation fits the budget; at most MaxInFlight requests of a job are
// forwarded at once. A session records what it carried as an ATIF trajectory
// (Session.Trajectory) and which skills entered the model's context.
//
// It is an http.Handler (tokens of all open sessions are accepted), normally served on Unix
// sockets with ListenUnix: a sandbox has no network, so the socket's directory is
// bind-mounted into it and an in-sandbox forwarder (see agent.Command) gives the CLI a TCP
// base URL. Each session opened after ListenUnix gets a socket of its own, under a random
// name in that directory, which serves only its token and at most MaxConnsPerSession
// connections.
type Gateway struct {
	cfg       Config
	base      *url.URL
	protocols []Protocol
	// api is the configured upstream's protocol.
	api  Protocol
	http *http.Client
	log  *zap.Logger
	m    *modelmetrics.Metrics
	now  func() time.Time

	// onWait, when set (by tests), is called when a request starts waiting for a slot.
	onWait func()

	// agentName names the agent in the sessions' trajectories.
	agentName string
	// maxOutput is the max output of a request that names none (see Config.MaxOutputTokens).
	maxOutput int64
	// key is the API key as bytes, for redactBytes: converting it for every line of a
	// relayed stream was a tenth of relaying a Responses answer (issue 31).
	key []byte

	mu       sync.Mutex
	sessions map[string]*Session
	servers  []*http.Server
	// dir is where ListenUnix put the shared socket, and where sessions put theirs.
	dir string
}

// New makes a gateway forwarding to cfg's upstream.
func New(cfg Config, deps Deps) (*Gateway, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("gateway: base URL must be an absolute http(s) URL")
	}
	if cfg.Model == "" {
		return nil, errors.New("gateway: a model is required: the gateway sends every request to the configured model")
	}
	u.RawQuery, u.Fragment, u.User = "", "", nil
	u.Path = strings.TrimSuffix(u.Path, "/")
	cfg.API = cmp.Or(cfg.API, APIOpenAI)
	cfg.MaxBodyBytes = cmp.Or(max(cfg.MaxBodyBytes, 0), DefaultMaxBodyBytes)
	cfg.MaxResponseBytes = cmp.Or(max(cfg.MaxResponseBytes, 0), DefaultMaxResponseBytes)
	cfg.MaxInFlight = cmp.Or(max(cfg.MaxInFlight, 0), DefaultMaxInFlight)
	cfg.MaxConnsPerSession = cmp.Or(max(cfg.MaxConnsPerSession, 0), DefaultMaxConnsPerSession)
	cfg.MaxOutputTokens = min(max(cfg.MaxOutputTokens, 0), maxOutputBound)
	maxOutput := maxOutputFor(cfg.MaxOutputTokens, cfg.Model)
	switch cfg.MaxTokensField {
	case "":
		cfg.MaxTokensField = "max_completion_tokens"
	case "max_completion_tokens", "max_tokens":
	default:
		return nil, fmt.Errorf("gateway: max tokens field %q: want max_completion_tokens or max_tokens", cfg.MaxTokensField)
	}
	protocols := []Protocol{
		openAI{maxField: cfg.MaxTokensField, serviceTier: cfg.ServiceTier},
		anthropic{defaultMax: maxOutput},
		gemini{},
	}
	i := slices.IndexFunc(protocols, func(p Protocol) bool { return p.Name() == cfg.API })
	if i < 0 {
		return nil, fmt.Errorf("gateway: api %q: want openai, anthropic or gemini", cfg.API)
	}
	if deps.HTTP == nil {
		deps.HTTP = &http.Client{Timeout: 10 * time.Minute}
		if t, ok := http.DefaultTransport.(*http.Transport); ok {
			deps.HTTP.Transport = t.Clone()
		}
	}
	if deps.Log == nil {
		deps.Log = zap.NewNop()
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	agentName := cmp.Or(cfg.Name, agent.CommandAgentName)
	cfg.Name = cmp.Or(cfg.Name, "gateway")
	m, err := modelmetrics.New(deps.Registry)
	if err != nil {
		return nil, fmt.Errorf("gateway metrics: %w", err)
	}
	return &Gateway{cfg: cfg, base: u, protocols: protocols, api: protocols[i], http: deps.HTTP,
		log: deps.Log, m: m, now: deps.Now, agentName: agentName, sessions: map[string]*Session{},
		maxOutput: maxOutput, key: []byte(cfg.APIKey)}, nil
}

// count records one request's outcome: ok or failed upstream, or refused by the gateway.
func (g *Gateway) count(outcome, class string) {
	g.m.Requests.WithLabelValues(g.cfg.Name, g.cfg.Model, outcome, class).Inc()
}

// refuse answers a request the gateway does not forward, in p's error shape, and counts it.
func (g *Gateway) refuse(w http.ResponseWriter, p Protocol, status int, code, msg string) {
	g.count("refused", modelmetrics.StatusClass(status))
	writeError(w, p, status, code, msg)
}

func writeError(w http.ResponseWriter, p Protocol, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(p.Error(status, code, msg))
}

// ServeHTTP serves the protocols' paths for every open session.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) { g.serve(w, r, nil) }

// route finds the protocol and operation of a request: the configured protocol's first,
// where two claim one path (OpenAI's /v1/models/{id} and Gemini's /v1/models/{id}:method).
func (g *Gateway) route(r *http.Request) (Protocol, Route, bool) {
	if rt, ok := g.api.Route(r); ok {
		return g.api, rt, true
	}
	for _, p := range g.protocols {
		if rt, ok := p.Route(r); ok {
			return p, rt, true
		}
	}
	return nil, Route{}, false
}

// paths says what the gateway serves, for a 404's message.
func (g *Gateway) paths() string { return g.api.Paths() }

// serve serves one request; only, when set, is the one session whose token the socket takes.
func (g *Gateway) serve(w http.ResponseWriter, r *http.Request, only *Session) {
	p, rt, ok := g.route(r)
	if !ok {
		g.refuse(w, g.api, http.StatusNotFound, "not_found", "the model gateway serves only "+g.paths())
		return
	}
	if p != g.api {
		g.refuse(w, p, http.StatusNotFound, "wrong_api", fmt.Sprintf(
			"this agent's upstream speaks the %s API (api: %s in its config), not %s's: point the CLI at a %s endpoint, or configure an agent with api: %s",
			g.api.Name(), g.api.Name(), p.Name(), g.api.Name(), p.Name()))
		return
	}
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		// Codex tries a WebSocket first and falls back to HTTP at once on 426.
		w.Header().Set("Upgrade", "")
		g.refuse(w, p, http.StatusUpgradeRequired, "websocket_unsupported", "the model gateway serves HTTP only; send the request over HTTP")
		return
	}
	method := http.MethodPost
	if rt.Kind == Local {
		method = http.MethodGet
	}
	if r.Method != method {
		w.Header().Set("Allow", method)
		g.refuse(w, p, http.StatusMethodNotAllowed, "method_not_allowed", "the model gateway serves only "+g.paths())
		return
	}
	s := g.lookup(p.Token(r))
	if s == nil || (only != nil && s != only) {
		g.refuse(w, p, http.StatusUnauthorized, "invalid_token", "unknown or expired gateway token")
		return
	}
	if rt.Kind == Local {
		status, body := p.Local(rt, g.cfg.Model)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
		return
	}
	log := g.log.With(zap.String("job", s.jobID))
	if over, used := s.overBudget(); over {
		w.Header().Set("X-Should-Retry", "false")
		g.refuse(w, p, http.StatusTooManyRequests, "token_budget_exhausted", fmt.Sprintf(
			"the job's token budget is exhausted: %d of %d tokens used; no further model requests are allowed for this job",
			used, s.budget.MaxTokens))
		return
	}
	// A slot before the body: waiting requests hold no body in memory.
	select {
	case s.slots <- struct{}{}:
	default:
		if g.onWait != nil {
			g.onWait()
		}
		select {
		case s.slots <- struct{}{}:
		case <-r.Context().Done():
			g.count("refused", "client_gone")
			return
		}
	}
	defer func() { <-s.slots }()
	body, err := readBody(http.MaxBytesReader(w, r.Body, g.cfg.MaxBodyBytes), r.ContentLength, g.cfg.MaxBodyBytes)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			g.refuse(w, p, http.StatusRequestEntityTooLarge, "request_too_large", fmt.Sprintf("request body over %d bytes", g.cfg.MaxBodyBytes))
			return
		}
		g.refuse(w, p, http.StatusBadRequest, "bad_request", "reading the request body failed")
		return
	}
	// One reading of the body for every check and for the upstream: with a duplicate key,
	// the allow-list could read one value and the upstream act on another.
	if err := jsonscan.Check(body, jsonscan.Options{MaxDepth: maxJSONDepth}); err != nil {
		g.refuse(w, p, http.StatusBadRequest, "invalid_json", "model gateway: the request body is refused: "+err.Error())
		return
	}
	req, ref := p.Parse(rt, body)
	if ref != nil {
		log.Info("model gateway: request refused", zap.String("reason", ref.Msg))
		g.refuse(w, p, ref.Status, ref.Code, ref.Msg)
		return
	}
	if m := req.Model(); m != "" && m != g.cfg.Model {
		log.Debug("model gateway: the request's model replaced by the configured one", zap.String("asked", m), zap.String("model", g.cfg.Model))
	}
	est := (int64(len(body)) + bytesPerToken - 1) / bytesPerToken
	res, maxOutput, ref := s.reserve(rt.Kind, est, req.MaxOutput(), g.maxOutput, g.cfg.MaxOutputTokens > 0)
	if ref != nil {
		if ref.Code == "token_budget_reserved" {
			w.Header().Set("Retry-After", "1")
		} else {
			// The SDKs (OpenAI's, Anthropic's) retry a 429 unless told this one cannot succeed.
			w.Header().Set("X-Should-Retry", "false")
		}
		g.refuse(w, p, ref.Status, ref.Code, ref.Msg)
		return
	}
	seq := s.observe(rt.Kind, req)
	if hf, ok := p.(headerFilter); ok {
		s.noteDropped(hf.Dropped(r.Header))
	}
	s.noteClient(r.Header.Get("User-Agent"))
	g.forward(w, r, p, rt, req, s, exchange{seq: seq, res: res, maxOutput: maxOutput, tools: req.Tools() > 0}, log)
}

// readBody reads a request body whole. A body that says its length (every CLI's does) is read
// into a buffer of that size, bounded by max, rather than one io.ReadAll grows, and copies,
// from 512 bytes up; the limit reader still decides where it ends.
func readBody(r io.Reader, length, max int64) ([]byte, error) {
	if length <= 0 || length > max {
		return io.ReadAll(r)
	}
	// One byte more than said: a body that ends where it said sees its EOF without growing.
	buf := make([]byte, 0, length+1)
	for {
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case errors.Is(err, io.EOF):
			return buf, nil
		case err != nil:
			return buf, err
		case len(buf) == cap(buf):
			// Longer than it said: the rest as any other body.
			rest, err := io.ReadAll(r)
			return append(buf, rest...), err
		}
	}
}

// bytesPerToken turns a request's size into its prompt estimate for a reservation. Four bytes
// a token is about right for English text, and the JSON around the text makes the estimate
// higher still; the metered usage replaces it when the answer comes.
const bytesPerToken = 4

// upstreamContext is the context of a forwarded request: not cancelled with the client, so
// that an answer is metered in full even when its caller hangs up early (or a sandboxed
// program could spend tokens past the budget by disconnecting). The gateway's HTTP client
// bounds the request.
func upstreamContext(r *http.Request) context.Context { return context.WithoutCancel(r.Context()) }

// copyHeaders gives the client the upstream headers it may see, with the key redacted.
func (g *Gateway) copyHeaders(w http.ResponseWriter, p Protocol, resp *http.Response) {
	for _, h := range p.ResponseHeaders() {
		for _, v := range resp.Header.Values(h) {
			w.Header().Add(h, g.redact(v))
		}
	}
}

// redact removes the real key from text an upstream or a transport produced.
func (g *Gateway) redact(s string) string {
	if g.cfg.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, g.cfg.APIKey, "[redacted]")
}

func (g *Gateway) redactBytes(b []byte) []byte {
	if g.cfg.APIKey == "" {
		return b
	}
	if !bytes.Contains(b, g.key) {
		// ReplaceAll copies even what it leaves as it was: a relayed stream is all lines.
		return b
	}
	return bytes.ReplaceAll(b, g.key, []byte("[redacted]"))
}

// isDialError says a transport error happened before the request left: nothing was spent.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

var _ http.Handler = (*Gateway)(nil)
