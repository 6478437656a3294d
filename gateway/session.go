package gateway

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/skillfleet/skillfleet/activation"
	"github.com/skillfleet/skillfleet/agent"
)

// Budget bounds one session.
type Budget struct {
	// MaxTokens is prompt plus completion tokens; 0 = unlimited. Each request reserves its
	// prompt estimate plus its max output before it is forwarded (a request naming no max
	// output gets what the budget leaves, bounded by the agent's max output, else its model's
	// documented one: see Config.MaxOutputTokens); a request whose
	// reservation does not fit gets 429, so requests in flight together cannot overspend.
	// The answer's metered usage replaces the reservation; the budget holds to the extent
	// the prompt estimate does (see bytesPerToken).
	MaxTokens int64
}

// maxReservable bounds every number that feeds a reservation, so that no sum of them can
// overflow: a request's max output and prompt estimate are each far below it, and a budget
// above it is as good as none.
const maxReservable = 1 << 40

// Session is one job's access to the gateway: a token valid until Close, its metered usage
// and its budget. Safe for concurrent use.
type Session struct {
	g      *Gateway
	token  string
	jobID  string
	budget Budget

	// slots holds a token per request in flight (MaxInFlight).
	slots chan struct{}
	// socket is the session's own socket file name in the gateway's directory, and srv
	// serves it ("" and nil before ListenUnix).
	socket string
	srv    *http.Server

	mu       sync.Mutex
	usage    Tokens
	requests int
	// answered counts the requests the CLI got a usable answer to, and answeredTools those
	// of them that offered tools: the turns (see Turns). A request the upstream refused
	// (429, 5xx) and the CLI sent again is one turn, as the built-in agent's client retries
	// within a turn.
	answered, answeredTools int
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
	// version is the CLI's name and version as its first readable User-Agent gave them.
	version string
}

// Open starts a session for a job with a fresh random token; jobID is only for logs. skills,
// when set, makes the session detect which skills' bodies enter the model's context (see
// package activation). After ListenUnix the session has a socket of its own (Socket).
func (g *Gateway) Open(jobID string, budget Budget, skills *activation.Detector) (*Session, error) {
	b := make([]byte, 48)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("gateway token: %w", err)
	}
	budget.MaxTokens = min(max(budget.MaxTokens, 0), maxReservable)
	s := &Session{g: g, token: hex.EncodeToString(b[:32]), jobID: jobID, budget: budget,
		slots: make(chan struct{}, g.cfg.MaxInFlight)}
	if skills != nil {
		s.skills = activation.NewTracker(skills)
	}
	g.mu.Lock()
	dir := g.dir
	g.sessions[s.token] = s
	g.mu.Unlock()
	if dir != "" {
		name := "job-" + hex.EncodeToString(b[32:]) + ".sock"
		srv, err := g.listen(filepath.Join(dir, name), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			g.serve(w, r, s)
		}), g.cfg.MaxConnsPerSession)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.mu.Lock()
		s.socket, s.srv = name, srv
		s.mu.Unlock()
	}
	return s, nil
}

// Token is the session's bearer token, to give to the agent CLI (never the real key).
func (s *Session) Token() string { return s.token }

// Socket is the file name of the session's own socket in the gateway's directory ("" when
// the gateway does not listen on Unix sockets). Its name is random and the directory cannot
// be listed from a sandbox, so only the job it is handed to can crowd it.
func (s *Session) Socket() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.socket
}

// Usage is what the session's requests consumed, as the upstream reported it.
func (s *Session) Usage() agent.Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.g.usage(s.usage)
}

// usage turns metered tokens into an agent.Usage with its cost.
func (g *Gateway) usage(t Tokens) agent.Usage {
	u := agent.Usage{PromptTokens: t.Prompt, CompletionTokens: t.Completion, CacheReadTokens: t.CacheRead, CacheWriteTokens: t.CacheWrite}
	u.Cost = g.cfg.Price.CostOf(u)
	return u
}

// Requests is how many requests the session forwarded upstream.
func (s *Session) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Turns is how many model calls the CLI got an answer to: the requests forwarded, less those
// the upstream refused or failed (a CLI sends them again, and a retry is not another turn),
// less a CLI's side queries: once a request offered tools (an agent's main loop always does),
// the answered requests that offered none (titles, topic checks, quota probes) are not turns.
// Token counts are never turns.
func (s *Session) Turns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.traj.sawTools {
		return s.answeredTools
	}
	return s.answered
}

// Activations returns the skills activated so far, with the turn (see Turns, from 1) of the
// request that first carried each one's body.
func (s *Session) Activations() []activation.Activation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.skills.Activated()
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

// overBudget says the budget is spent, and what was used.
func (s *Session) overBudget() (bool, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exhausted(), s.usage.Total()
}

// Close ends the session: its token is rejected from now on and its socket is gone. Its usage
// stays readable.
func (s *Session) Close() {
	s.g.mu.Lock()
	if s.g.sessions[s.token] == s {
		delete(s.g.sessions, s.token)
	}
	s.g.mu.Unlock()
	s.closeSocket()
}

func (s *Session) closeSocket() {
	s.mu.Lock()
	srv, name := s.srv, s.socket
	s.srv = nil
	s.mu.Unlock()
	if srv == nil {
		return
	}
	_ = srv.Close()
	s.g.mu.Lock()
	dir := s.g.dir
	s.g.mu.Unlock()
	_ = os.Remove(filepath.Join(dir, name))
}

// lookup finds the open session of a token, comparing in constant time.
func (g *Gateway) lookup(tok string) *Session {
	if len(tok) != 64 {
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

// reservation is what one forwarded request holds against its session's budget until its
// answer is metered, and what an answer without usage is metered at.
type reservation struct {
	prompt, output int64
	// bounded: output was sent upstream as the request's max output.
	bounded bool
}

func (r reservation) total() int64 { return r.prompt + r.output }

// reserve books a request's tokens before it is forwarded and returns the max output to send
// (0: leave the request's as it is). A budgeted request gets at most what the budget leaves
// after its prompt estimate as its max output (bounded by maxOutput when it named none); one
// whose prompt estimate alone does not fit is refused with 429. Without a budget a request
// that names none is sent with maxOutput only when the operator configured it (configured):
// else the upstream's own default applies, and maxOutput is only what an answer without usage
// is metered at. A token count reserves nothing: it is not billed.
func (s *Session) reserve(kind Kind, promptEstimate, asked, maxOutput int64, configured bool) (reservation, int64, *Refusal) {
	if kind == Count {
		return reservation{}, 0, nil
	}
	// Bounded before any sum: the protocols bound a max output already; this holds even
	// for one that would not.
	promptEstimate = min(max(promptEstimate, 0), maxReservable)
	asked = min(max(asked, 0), maxReservable)
	s.mu.Lock()
	defer s.mu.Unlock()
	r := reservation{prompt: promptEstimate, output: asked}
	if s.budget.MaxTokens <= 0 {
		// Nothing to fit, but a figure to meter an answer without usage at; the request's
		// own max output (if any) is sent unchanged.
		send := r.output
		if r.output == 0 {
			r.output = maxOutput
			if configured {
				send = maxOutput
			}
		}
		r.bounded = send > 0
		s.reserved += r.total()
		return r, send, nil
	}
	used := s.usage.Total()
	left := s.budget.MaxTokens - used - s.reserved
	if r.output == 0 {
		r.output = min(maxOutput, left-r.prompt)
	} else if r.output > left-r.prompt && left-r.prompt >= 1 {
		// A CLI asks for a fixed max output (Claude Code: 32,000) whatever is left: the
		// request goes with what the budget leaves, and its answer may end at that max,
		// rather than be refused while the budget still covers a shorter answer.
		r.output = left - r.prompt
	}
	if r.output < 1 || r.total() > left {
		ref := &Refusal{Status: http.StatusTooManyRequests, Code: "token_budget_exhausted", Msg: fmt.Sprintf(
			"the job's token budget cannot cover this request: it needs about %d prompt tokens plus at least 1 output token (%d asked for), and %d of %d tokens are left (%d used, %d reserved by requests in flight)",
			r.prompt, asked, max(left, 0), s.budget.MaxTokens, used, s.reserved)}
		if s.reserved > 0 {
			// Requests in flight may settle below their reservations: a retry may fit.
			ref.Code = "token_budget_reserved"
		} else {
			s.refused = true
		}
		return reservation{}, 0, ref
	}
	r.bounded = true
	s.reserved += r.total()
	return r, r.output, nil
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
		s.usage.Prompt += r.prompt
		s.usage.Completion += r.output
	}
}

// observe numbers a request about to be forwarded and, when it is part of the CLI's main
// conversation, keeps its conversation for the trajectory and scans its new messages for
// activations. Agents resend the whole conversation each time, so only messages past those
// scanned before are read; a conversation that got shorter (compacted, or restarted) is read
// again whole. A side query (no tools, once a request offered tools) and a token count are
// neither kept nor scanned.
func (s *Session) observe(kind Kind, req Request) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.traj.forwarded++
	seq := s.traj.forwarded
	if kind != Generate {
		s.traj.counts++
		return seq
	}
	tools := req.Tools() > 0
	if tools && !s.traj.sawTools {
		// The main loop starts here: what side queries before it showed is not its context.
		s.traj.sawTools, s.scanned = true, 0
	}
	if s.traj.sawTools && !tools {
		return seq
	}
	msgs := req.Conversation()
	s.remember(seq, msgs, req.Removed())
	if s.skills == nil {
		return seq
	}
	if len(msgs) < s.scanned {
		s.scanned = 0
	}
	turn := s.answered + 1
	if s.traj.sawTools {
		turn = s.answeredTools + 1
	}
	for _, m := range msgs[s.scanned:] {
		s.skills.Observe(turn, jsonText(m.Raw))
	}
	s.scanned = len(msgs)
	return seq
}

// Opener is the gateway as a command agent opens its sessions (agent.CommandConfig.Gateway).
func (g *Gateway) Opener() agent.OpenGateway {
	return func(jobID string, maxTokens int64, skills *activation.Detector) (agent.GatewaySession, error) {
		s, err := g.Open(jobID, Budget{MaxTokens: maxTokens}, skills)
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return s, nil
	}
}

// AgentVersion is the name and version of the CLI that sent the session's requests
// ("claude-cli/2.1.240", "codex_exec/0.162.1", "GeminiCLI/0.56.0"), as the first User-Agent
// the gateway could read one from named it; "" when none did. The CLI says it of itself: it
// tells a result which build ran, it proves nothing.
func (s *Session) AgentVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

// noteClient keeps the CLI's version from a forwarded request's User-Agent, once.
func (s *Session) noteClient(userAgent string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.version == "" {
		s.version = cliVersion(userAgent)
	}
}

// maxVersionPart bounds a User-Agent product's name and its version.
const maxVersionPart = 64

// cliVersion is the product and version of a User-Agent's first product token ("name/version",
// the version starting with a digit; Gemini CLI's "GeminiCLI/0.56.0/model" gives
// "GeminiCLI/0.56.0"), "" when it has none. Both parts are bounded and limited to the
// characters of a product token: the User-Agent comes from the sandbox, and what is kept
// reaches results, reports and the history.
func cliVersion(userAgent string) string {
	first, _, _ := strings.Cut(userAgent, " ")
	name, rest, ok := strings.Cut(first, "/")
	version, _, _ := strings.Cut(rest, "/")
	if !ok || !versionPart(name) || !versionPart(version) || version[0] < '0' || version[0] > '9' || name == "Go-http-client" {
		// Go's default names its HTTP version, not the program's.
		return ""
	}
	return name + "/" + version
}

// versionPart accepts a non-empty, bounded run of letters, digits, dots, dashes, underscores
// and pluses.
func versionPart(s string) bool {
	if s == "" || len(s) > maxVersionPart {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !isAlnum(c) && c != '.' && c != '-' && c != '_' && c != '+' {
			return false
		}
	}
	return true
}
