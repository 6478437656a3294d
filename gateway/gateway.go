package agent

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/activation"
	"github.com/skillfleet/skillfleet/internal/httpserve"
)

// Gateway defaults.
const (
	DefaultGatewayMaxBodyBytes     = 8 << 20
	DefaultGatewayMaxResponseBytes = 32 << 20
	// DefaultGatewayMaxInFlight is how many requests of one job the gateway forwards at once.
	DefaultGatewayMaxInFlight = 4
	// DefaultGatewayMaxOutputTokens bounds the output the gateway asks for when a budgeted
	// request names none: low enough for any model's output limit (a larger max is an error
	// upstream for many models and local servers), high enough for an agent's turn.
	DefaultGatewayMaxOutputTokens = 4096
	// GatewaySocketName is the gateway's socket file in the directory given to ListenUnix.
	GatewaySocketName = "gateway.sock"
)

// GatewayConfig is the one upstream a Gateway forwards to.
type GatewayConfig struct {
	// Name is the agent's name in the config and Model its configured model: the gateway's
	// requests are counted in the model metrics under endpoint Name and model Model, never
	// under the model a CLI names (a sandbox could invent any number of them). Name defaults
	// to "gateway".
	Name, Model string
	// BaseURL is the upstream's OpenAI-compatible base URL, e.g. https://api.openai.com/v1.
	BaseURL string
	// APIKey is the real key; it never leaves the worker except towards BaseURL, and it is
	// redacted from everything the gateway answers.
	APIKey string
	// Price turns metered tokens into Session.Usage().Cost.
	Price Price
	// MaxBodyBytes caps a request body (0 = 8 MiB; larger gets 413).
	MaxBodyBytes int64
	// MaxResponseBytes caps an upstream answer (0 = 32 MiB; larger gets 502).
	MaxResponseBytes int64
	// MaxInFlight is how many requests of one session are forwarded at once (0 = 4); more
	// wait for a slot (until their client gives up).
	MaxInFlight int
	// MaxOutputTokens is the max output set on a budgeted request that names none, when the
	// budget leaves more (0 = 4096). It is also what an answer without usage to a request
	// without a max output is metered at.
	MaxOutputTokens int64
	// MaxTokensField is the Chat Completions field that carries that max output:
	// "max_completion_tokens" (the default; OpenAI's reasoning models refuse max_tokens) or
	// "max_tokens" (Ollama, LM Studio and llama.cpp servers before February 2026 know only
	// that one, and ignore the other). A client's own max output keeps its field.
	MaxTokensField string
}

// GatewayDeps are a Gateway's collaborators; zero fields get working defaults.
type GatewayDeps struct {
	// HTTP carries the upstream requests (default: a client on a clone of http.DefaultTransport,
	// with a 10-minute timeout).
	HTTP *http.Client
	// Log gets refusals and upstream failures, never a key or a token (default: no logging).
	Log *zap.Logger
	// Registry gets the model metrics of the requests the gateway forwards or refuses (nil:
	// not registered); it may be shared with Clients.
	Registry prometheus.Registerer
	// Now is the clock of request latencies (default: time.Now).
	Now func() time.Time
}

// Budget bounds one session.
type Budget struct {
	// MaxTokens is prompt plus completion tokens; 0 = unlimited. Each request reserves its
	// prompt estimate plus its max output before it is forwarded (a request naming no max
	// output gets what the budget leaves, bounded by MaxOutputTokens); a request whose
	// reservation does not fit gets 429, so requests in flight together cannot overspend.
	// The answer's metered usage replaces the reservation; the budget holds to the extent
	// the prompt estimate does (see bytesPerToken).
	MaxTokens int64
}

// Gateway is the model gateway: an OpenAI-compatible endpoint (Chat Completions and the
// Responses API) for agent CLIs running inside sandboxes. A CLI authenticates with a per-job
// token (Open); the gateway swaps it for the real key, forwards only those two calls to the
// one configured upstream, meters the tokens into the job's session and enforces its budget.
// A request is parsed and rebuilt from an allow-list of fields (see gatewayrequest.go), sent
// to the configured model, and forwarded only when its token reservation fits the budget;
// at most MaxInFlight requests of a job are forwarded at once. A session also records what it
// carried as an ATIF trajectory (Session.Trajectory, see gatewaytrajectory.go).
//
// It is an http.Handler (tokens of all open sessions are accepted), normally served on a Unix
// socket with ListenUnix: a sandbox has no network, so the socket's directory is bind-mounted
// into it and an in-sandbox forwarder (see Command) gives the CLI a TCP base URL.
//
// Streaming (stream: true) is relayed event by event. For Chat Completions the gateway asks
// the upstream for the usage chunk (stream_options.include_usage) to meter the session, and
// drops that chunk again when the CLI did not ask for it; a Responses stream carries its usage
// in response.completed.
type Gateway struct {
	cfg GatewayConfig
	// endpoints maps a served path to its upstream URL.
	endpoints map[string]string
	http      *http.Client
	log       *zap.Logger
	m         *metrics
	now       func() time.Time

	// onWait, when set (by tests), is called when a request starts waiting for a slot.
	onWait func()

	// agentName names the agent in the sessions' trajectories.
	agentName string

	mu       sync.Mutex
	sessions map[string]*Session
	servers  []*http.Server
}

// NewGateway makes a gateway forwarding to cfg's upstream.
func NewGateway(cfg GatewayConfig, deps GatewayDeps) (*Gateway, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("agent: gateway: base URL must be an absolute http(s) URL")
	}
	if cfg.Model == "" {
		return nil, errors.New("agent: gateway: a model is required: the gateway sends every request to the configured model")
	}
	u.RawQuery, u.Fragment, u.User = "", "", nil
	base := strings.TrimSuffix(u.Path, "/")
	endpoints := map[string]string{}
	for path, up := range gatewayPaths {
		u.Path = base + up
		endpoints[path] = u.String()
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultGatewayMaxBodyBytes
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = DefaultGatewayMaxResponseBytes
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultGatewayMaxInFlight
	}
	if cfg.MaxOutputTokens <= 0 {
		cfg.MaxOutputTokens = DefaultGatewayMaxOutputTokens
	}
	switch cfg.MaxTokensField {
	case "":
		cfg.MaxTokensField = "max_completion_tokens"
	case "max_completion_tokens", "max_tokens":
	default:
		return nil, fmt.Errorf("agent: gateway: max tokens field %q: want max_completion_tokens or max_tokens", cfg.MaxTokensField)
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
	agentName := cmp.Or(cfg.Name, CommandAgentName)
	if cfg.Name == "" {
		cfg.Name = "gateway"
	}
	m, err := newMetrics(deps.Registry)
	if err != nil {
		return nil, fmt.Errorf("agent: gateway metrics: %w", err)
	}
	return &Gateway{cfg: cfg, endpoints: endpoints, http: deps.HTTP, log: deps.Log, m: m, now: deps.Now, agentName: agentName, sessions: map[string]*Session{}}, nil
}

// gatewayPaths are what the gateway serves (the client's path, with or without /v1) and where
// each goes under the upstream's base URL: Chat Completions, and the Responses API that some
// agent CLIs (Codex) speak. Nothing else is forwarded.
var gatewayPaths = map[string]string{
	"/v1/chat/completions": "/chat/completions",
	"/chat/completions":    "/chat/completions",
	"/v1/responses":        "/responses",
	"/responses":           "/responses",
}

// count records one request's outcome: ok or failed upstream, or refused by the gateway.
func (g *Gateway) count(outcome, class string) {
	g.m.requests.WithLabelValues(g.cfg.Name, g.cfg.Model, outcome, class).Inc()
}

// refuse answers a request the gateway does not forward, and counts it.
func (g *Gateway) refuse(w http.ResponseWriter, status int, code, msg string) {
	g.count("refused", statusClass(status))
	gatewayError(w, status, code, msg)
}

// ListenUnix serves the gateway on dir/gateway.sock until Close and returns the socket's path.
// dir is created (0755) if needed. The socket is made connectable by any user (0666), because
// the sandbox's user differs from the worker's: a token, not the socket, is the credential.
func (g *Gateway) ListenUnix(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("agent: gateway: %w", err)
	}
	p := filepath.Join(dir, GatewaySocketName)
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("agent: gateway: stale socket: %w", err)
	}
	l, err := net.Listen("unix", p)
	if err != nil {
		return "", fmt.Errorf("agent: gateway: %w", err)
	}
	if err := os.Chmod(p, 0o666); err != nil {
		_ = l.Close()
		return "", fmt.Errorf("agent: gateway: %w", err)
	}
	// The sandbox is the client here, and it may be hostile: it gets every timeout and a
	// connection cap. Responses may stream for as long as an upstream answer may take.
	hs := httpserve.New(l, g, httpserve.Config{
		ReadHeaderTimeout: 30 * time.Second, ReadTimeout: time.Minute,
		WriteTimeout: 11 * time.Minute, IdleTimeout: 2 * time.Minute,
		MaxConns: 64, MaxConnsPerIP: -1, // every peer of a unix socket has the same (no) address
		ErrorLog: zap.NewStdLog(g.log),
	})
	srv := hs.HTTP
	g.mu.Lock()
	g.servers = append(g.servers, srv)
	g.mu.Unlock()
	go func() {
		if err := hs.Serve(); err != nil {
			g.log.Error("model gateway stopped serving", zap.String("socket", p), zap.Error(err))
		}
	}()
	return p, nil
}

// Close stops the listeners started by ListenUnix and invalidates every open session.
func (g *Gateway) Close() error {
	g.mu.Lock()
	servers := g.servers
	g.servers = nil
	clear(g.sessions)
	g.mu.Unlock()
	var errs []error
	for _, s := range servers {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// Session is one job's access to the gateway: a token valid until Close, its metered usage
// and its budget. Safe for concurrent use.
type Session struct {
	g      *Gateway
	token  string
	jobID  string
	budget Budget

	// slots holds a token per request in flight (MaxInFlight).
	slots chan struct{}

	mu       sync.Mutex
	usage    Usage
	requests int
	// answered counts the requests the CLI got a usable answer to: its turns. A request the
	// upstream refused (429, 5xx) and the CLI sent again is one turn, as the built-in agent's
	// client retries within a turn.
	answered int
	// reserved is what the requests in flight hold against the budget.
	reserved int64
	// refused: a request was turned away because the budget could not cover it.
	refused bool
	// skills detects activations in the requests' messages; scanned is how many messages of
	// the conversation were scanned already.
	skills  *activation.Tracker
	scanned int
	// traj is what Trajectory is built from.
	traj trajectoryState
}

// TrackActivations makes the session detect, in every request's messages, which skills' bodies
// enter the model's context (see package activation). Call it before handing out the token.
func (s *Session) TrackActivations(d *activation.Detector) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.skills = activation.NewTracker(d)
}

// Activations returns the skills activated so far, with the turn (see Turns, from 1) of the
// request that first carried each one's body.
func (s *Session) Activations() []activation.Activation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.skills.Activated()
}

// observe scans the messages of a request about to be forwarded as the session's next one.
// Agents resend the whole conversation each time, so only messages past those scanned before
// are read; a conversation that got shorter (compacted, or restarted) is read again whole.
func (s *Session) observe(req *preparedRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remember(req)
	if s.skills == nil {
		return
	}
	msgs := req.contextMessages()
	if len(msgs) < s.scanned {
		s.scanned = 0
	}
	turn := s.answered + 1
	for _, m := range msgs[s.scanned:] {
		s.skills.Observe(turn, jsonText(m))
	}
	s.scanned = len(msgs)
}

// Open starts a session for a job with a fresh random token. jobID is only for logs.
func (g *Gateway) Open(jobID string, budget Budget) (*Session, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("agent: gateway token: %w", err)
	}
	s := &Session{g: g, token: hex.EncodeToString(b), jobID: jobID, budget: budget, slots: make(chan struct{}, g.cfg.MaxInFlight)}
	g.mu.Lock()
	g.sessions[s.token] = s
	g.mu.Unlock()
	return s, nil
}

// Token is the session's bearer token, to give to the agent CLI (never the real key).
func (s *Session) Token() string { return s.token }

// Usage is what the session's requests consumed, as the upstream reported it.
func (s *Session) Usage() Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.usage
	u.Cost = s.g.cfg.Price.Cost(u.PromptTokens, u.CompletionTokens)
	return u
}

// Requests is how many requests the session forwarded upstream.
func (s *Session) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Turns is how many model calls the CLI got an answer to: the requests forwarded, less those
// the upstream refused or failed (a CLI sends them again, and a retry is not another turn).
func (s *Session) Turns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.answered
}

// BudgetExhausted says the session reached its token budget, or a request was refused because
// what the budget left could not cover it (further requests get 429).
func (s *Session) BudgetExhausted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exhausted() || s.refused
}

func (s *Session) exhausted() bool {
	return s.budget.MaxTokens > 0 && s.usage.Total() >= s.budget.MaxTokens
}

// Close ends the session: its token is rejected from now on. Its usage stays readable.
func (s *Session) Close() {
	s.g.mu.Lock()
	if s.g.sessions[s.token] == s {
		delete(s.g.sessions, s.token)
	}
	s.g.mu.Unlock()
}

// reservation is what one forwarded request holds against its session's budget until its
// answer is metered, and what an answer without usage is metered at.
type reservation struct {
	prompt, output int64
	// bounded: output was sent upstream as the request's max output.
	bounded bool
}

func (r reservation) total() int64 { return r.prompt + r.output }

// reserve books a request's tokens before it is forwarded and returns the max output to send
// (0: leave the request's as it is). A budgeted request naming no max output gets what the
// budget leaves after its prompt estimate, bounded by maxOutput; one whose reservation does not
// fit is refused with 429.
func (s *Session) reserve(p *preparedRequest, maxOutput int64) (reservation, int64, *refusal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := reservation{prompt: p.promptEstimate, output: p.maxOutput}
	if s.budget.MaxTokens <= 0 {
		// Nothing to fit, but a figure to meter an answer without usage at; the request's
		// own max output (if any) is sent unchanged.
		send := r.output
		if r.output == 0 {
			r.output = maxOutput
		}
		r.bounded = send > 0
		s.reserved += r.total()
		return r, send, nil
	}
	used := s.usage.Total()
	left := s.budget.MaxTokens - used - s.reserved
	if r.output == 0 {
		r.output = min(maxOutput, left-r.prompt)
	}
	if r.output < 1 || r.total() > left {
		ref := &refusal{status: http.StatusTooManyRequests, code: "token_budget_exhausted", msg: fmt.Sprintf(
			"the job's token budget cannot cover this request: it needs about %d prompt tokens plus at least 1 output token (%d asked for), and %d of %d tokens are left (%d used, %d reserved by requests in flight)",
			r.prompt, p.maxOutput, max(left, 0), s.budget.MaxTokens, used, s.reserved)}
		if s.reserved > 0 {
			// Requests in flight may settle below their reservations: a retry may fit.
			ref.code = "token_budget_reserved"
		} else {
			s.refused = true
		}
		return reservation{}, 0, ref
	}
	r.bounded = true
	s.reserved += r.total()
	return r, r.output, nil
}

// lookup finds the open session of a bearer token, comparing in constant time.
func (g *Gateway) lookup(h http.Header) *Session {
	tok, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	if !ok || len(tok) != 64 {
		return nil
	}
	g.mu.Lock()
	s := g.sessions[tok]
	g.mu.Unlock()
	// The map lookup already matched; the constant-time compare guards against a future map
	// keyed differently, and costs nothing.
	if s == nil || subtle.ConstantTimeCompare([]byte(s.token), []byte(tok)) != 1 {
		return nil
	}
	return s
}

// forwardedRequestHeaders are the only client headers sent upstream: no auth-ish header
// (Authorization, api-key, OpenAI-Organization, cookies, proxy auth) can ride along, and no
// Accept-Encoding, so that the transport decompresses and the usage can be read.
var forwardedRequestHeaders = []string{"Content-Type", "Accept", "User-Agent"}

// forwardedResponseHeaders are the only upstream headers given back to the CLI.
var forwardedResponseHeaders = []string{"Content-Type", "Retry-After", "X-Request-Id",
	"X-Ratelimit-Limit-Requests", "X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Requests",
	"X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Requests", "X-Ratelimit-Reset-Tokens"}

// ServeHTTP serves POST /v1/chat/completions and /v1/responses (with or without /v1) for open
// sessions.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target, ok := g.endpoints[r.URL.Path]
	if !ok {
		g.refuse(w, http.StatusNotFound, "not_found", "the gateway serves only POST /v1/chat/completions and /v1/responses")
		return
	}
	responsesAPI := strings.HasSuffix(r.URL.Path, "/responses")
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		g.refuse(w, http.StatusMethodNotAllowed, "method_not_allowed", "the gateway serves only POST /v1/chat/completions and /v1/responses")
		return
	}
	s := g.lookup(r.Header)
	if s == nil {
		g.refuse(w, http.StatusUnauthorized, "invalid_token", "unknown or expired gateway token")
		return
	}
	log := g.log.With(zap.String("job", s.jobID))
	s.mu.Lock()
	over, used := s.exhausted(), s.usage.Total()
	s.mu.Unlock()
	if over {
		g.refuse(w, http.StatusTooManyRequests, "token_budget_exhausted", fmt.Sprintf(
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
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.cfg.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			g.refuse(w, http.StatusRequestEntityTooLarge, "request_too_large", fmt.Sprintf("request body over %d bytes", g.cfg.MaxBodyBytes))
			return
		}
		g.refuse(w, http.StatusBadRequest, "bad_request", "reading the request body failed")
		return
	}
	req, ref := parseRequest(body, responsesAPI, g.cfg.MaxTokensField)
	if ref != nil {
		log.Info("model gateway: request refused", zap.String("reason", ref.msg))
		g.refuse(w, ref.status, ref.code, ref.msg)
		return
	}
	if req.model != "" && req.model != g.cfg.Model {
		log.Debug("model gateway: the request's model replaced by the configured one", zap.String("asked", req.model), zap.String("model", g.cfg.Model))
	}
	res, maxOutput, ref := s.reserve(req, g.cfg.MaxOutputTokens)
	if ref != nil {
		if ref.code == "token_budget_reserved" {
			w.Header().Set("Retry-After", "1")
		}
		g.refuse(w, ref.status, ref.code, ref.msg)
		return
	}
	s.observe(req)
	settled := false
	defer func() {
		if !settled {
			s.unreserve(res)
		}
	}()
	body, err = req.build(g.cfg.Model, maxOutput)
	if err != nil {
		g.refuse(w, http.StatusInternalServerError, "gateway_error", "building the upstream request failed")
		return
	}

	// Not cancelled with the client: an answer is metered in full even when its caller hangs up
	// early, or a sandboxed program could spend tokens past the budget by disconnecting. The
	// gateway's HTTP client bounds the request.
	up, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		g.refuse(w, http.StatusInternalServerError, "gateway_error", "building the upstream request failed")
		return
	}
	for _, h := range forwardedRequestHeaders {
		if v := r.Header.Values(h); len(v) > 0 {
			up.Header[h] = v
		}
	}
	if up.Header.Get("Content-Type") == "" {
		up.Header.Set("Content-Type", "application/json")
	}
	if g.cfg.APIKey != "" {
		up.Header.Set("Authorization", "Bearer "+g.cfg.APIKey)
	}
	start := g.now()
	resp, err := g.http.Do(up)
	if err != nil {
		if r.Context().Err() == nil {
			log.Warn("model gateway: upstream request failed", zap.String("error", g.redact(err.Error())))
		}
		var op *net.OpError
		if !errors.As(err, &op) || op.Op != "dial" {
			// The request may have reached the upstream, which may have spent the tokens.
			settled = true
			s.book(res, true)
		}
		g.count("failed", "transport")
		gatewayError(w, http.StatusBadGateway, "upstream_unreachable", "the model endpoint could not be reached")
		return
	}
	defer func() { _ = resp.Body.Close() }()
	// An upstream that answers a stream request with one JSON body is metered like any other.
	settled = true
	if req.stream.on && resp.StatusCode/100 == 2 && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		g.relayStream(w, resp, s, req, res, start, log)
		return
	}
	out, err := io.ReadAll(io.LimitReader(resp.Body, g.cfg.MaxResponseBytes+1))
	if err != nil || int64(len(out)) > g.cfg.MaxResponseBytes {
		log.Warn("model gateway: upstream answer unreadable or too large", zap.Int("status", resp.StatusCode))
		s.book(res, resp.StatusCode/100 == 2)
		g.count("failed", "transport")
		gatewayError(w, http.StatusBadGateway, "upstream_bad_response", "the model endpoint's answer could not be read")
		return
	}
	var meter struct {
		Usage *tokenUsage `json:"usage"`
	}
	_ = json.Unmarshal(out, &meter)
	if !g.settle(s, resp.StatusCode, meter.Usage, res, start, log) {
		gatewayError(w, http.StatusBadGateway, "upstream_no_usage",
			"the model endpoint's answer reported no token usage, so it cannot be metered; it was refused and metered at the request's reservation")
		return
	}
	if resp.StatusCode/100 == 2 {
		s.recordAnswer(req, meter.Usage, g.redactTurn(parseAnswer(out, req.responsesAPI)))
	}
	g.copyHeaders(w, resp)
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(g.redactBytes(out))
}

// tokenUsage is the usage object of an answer or of a stream's last chunk, in Chat
// Completions' words or the Responses API's.
type tokenUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
}

// counts returns the prompt and completion tokens, whichever API reported them.
func (u *tokenUsage) counts() (prompt, completion int64) {
	return max(u.PromptTokens, 0) + max(u.InputTokens, 0), max(u.CompletionTokens, 0) + max(u.OutputTokens, 0)
}

// unreserve gives back the reservation of a request that was not forwarded.
func (s *Session) unreserve(r reservation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reserved -= r.total()
}

// book ends a forwarded request's reservation without usage: metered at the reservation when
// the upstream may have spent it, at zero when not.
func (s *Session) book(r reservation, spent bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reserved -= r.total()
	s.requests++
	if spent {
		s.usage.PromptTokens += r.prompt
		s.usage.CompletionTokens += r.output
	}
}

// settle books one forwarded request: the session's usage, which its budget is checked
// against, and the metrics. A successful answer without usage (or with zero tokens, which no
// real answer has) is metered at its reservation, never at zero, so that an upstream that
// does not report cannot make the budget leak; settle then reports false and the answer
// must not be passed on as a success. An error answer is metered at its usage if it has
// one, else at zero: providers do not bill refused requests.
func (g *Gateway) settle(s *Session, status int, u *tokenUsage, res reservation, start time.Time, log *zap.Logger) bool {
	g.m.latency.WithLabelValues(g.cfg.Name, g.cfg.Model).Observe(g.now().Sub(start).Seconds())
	var p, c int64
	if u != nil {
		p, c = u.counts()
	}
	ok := status/100 == 2
	metered := p+c > 0
	if ok && !metered {
		p, c = res.prompt, res.output
	}
	s.mu.Lock()
	s.reserved -= res.total()
	s.requests++
	if ok && metered {
		s.answered++
	}
	s.usage.PromptTokens += p
	s.usage.CompletionTokens += c
	s.mu.Unlock()
	if !ok {
		g.count("failed", statusClass(status))
		return true
	}
	if metered {
		g.count("ok", "2xx")
		if res.bounded && c > res.output {
			// The budget still holds the real figure, but reservations no longer bound what
			// requests in flight together can spend: the upstream ignores the max output field.
			log.Warn("model gateway: the answer's output exceeds the max output asked for; does the upstream ignore the field? (see MaxTokensField)",
				zap.Int64("completion_tokens", c), zap.Int64("max_output", res.output))
		}
	} else {
		log.Warn("model gateway: upstream answer without usage; refused and metered at its reservation", zap.Int64("tokens", p+c))
		g.count("failed", "no_usage")
	}
	g.m.tokens.WithLabelValues(g.cfg.Name, g.cfg.Model, "prompt").Add(float64(p))
	g.m.tokens.WithLabelValues(g.cfg.Name, g.cfg.Model, "completion").Add(float64(c))
	g.m.cost.WithLabelValues(g.cfg.Name, g.cfg.Model).Add(g.cfg.Price.Cost(p, c))
	return metered
}

// copyHeaders gives the client the upstream headers it may see, with the key redacted.
func (g *Gateway) copyHeaders(w http.ResponseWriter, resp *http.Response) {
	for _, h := range forwardedResponseHeaders {
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
	return bytes.ReplaceAll(b, []byte(g.cfg.APIKey), []byte("[redacted]"))
}

// gatewayError answers in OpenAI's error format, so that CLIs show the message.
func gatewayError(w http.ResponseWriter, status int, code, msg string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": msg, "type": "gateway_error", "code": code, "param": nil}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

var _ http.Handler = (*Gateway)(nil)
