package gateway

import (
	"encoding/json"
	"net/http"
	"net/url"
)

// Protocol is one model API family at the gateway: its native paths, where its clients put
// their key, its allow-list of request fields, how the configured model is forced, where its
// answers carry their usage (JSON and server-sent events), how its conversations read as a
// trajectory, and the shape of its errors. Each is one set of files (openai*.go,
// anthropic*.go, gemini*.go); the gateway's core (gateway.go, session.go, forward.go,
// stream.go) knows none of them, so adding a protocol touches no other.
type Protocol interface {
	// Name is the protocol's name in an agent's config (api: openai | anthropic | gemini).
	Name() string
	// Paths says what the protocol serves, for the message of a request the gateway does not.
	Paths() string
	// Route says which of the protocol's operations a request is; ok is false when its path
	// is not one of this protocol's.
	Route(r *http.Request) (rt Route, ok bool)
	// Token is the gateway token as the protocol's clients send their key ("": none).
	Token(r *http.Request) string
	// Parse checks a request body against the route's allow-list. The gateway has already
	// checked that the body is one JSON value, no deeper than it allows, without duplicate
	// keys.
	Parse(rt Route, body []byte) (Request, *Refusal)
	// Upstream is the URL (under the configured base) and the headers of the forwarded
	// request: the key where the provider wants it, and the client's headers of the
	// protocol's allow-list.
	Upstream(base *url.URL, rt Route, model, key string, client http.Header) (target string, h http.Header)
	// ResponseHeaders are the upstream answer's headers that the client may see.
	ResponseHeaders() []string
	// Answer reads a non-streamed answer: its usage (ok false: it reports none) and, for the
	// trajectory, the turn it holds (nil: none).
	Answer(rt Route, body []byte) (u Tokens, ok bool, t *Turn)
	// Stream reads one streamed answer, event by event.
	Stream(rt Route, req Request) StreamReader
	// Local answers a route the gateway serves itself (Route.Kind == Local).
	Local(rt Route, model string) (status int, body []byte)
	// Error is an error answer's body in the protocol's own shape, so that its clients show
	// the message.
	Error(status int, code, msg string) []byte
	// StreamError is the event that ends a stream the gateway refuses to pass on as whole.
	StreamError(code, msg string) []byte
}

// headerFilter is a Protocol whose Upstream drops some values of a client's headers rather
// than refuse the request (Anthropic's betas). Dropped names each ("header: value"), so that
// the trajectory says what did not reach the model: a CLI that behaves differently for it is
// explained, not silently changed.
type headerFilter interface {
	Dropped(client http.Header) []string
}

// Kind is what the gateway does with a route.
type Kind int

const (
	// Generate is a model call: forwarded, metered against the budget, a turn.
	Generate Kind = iota
	// Count is a token count (Anthropic's count_tokens, Gemini's countTokens): forwarded,
	// never a turn, never part of the conversation, billed by no provider.
	Count
	// Local is answered by the gateway itself (an OpenAI model list).
	Local
	// Aside is a model call beside the conversation (Codex's history compaction): forwarded
	// and metered like Generate, never a turn, never the conversation.
	Aside
)

// Route is one operation of a protocol.
type Route struct {
	// Op names the operation within its protocol, for the protocol's own use and for logs.
	Op   string
	Kind Kind
	// Stream is set when the path itself asks for a stream (Gemini's streamGenerateContent).
	Stream bool
	// Model is the model the path names (Gemini), "" when the body names it.
	Model string
}

// Request is a parsed request, ready to be rebuilt once its reservation is known.
type Request interface {
	// Model is the model the client named ("" none); the configured one replaces it.
	Model() string
	// Stream says the client asked for a streamed answer.
	Stream() bool
	// MaxOutput is the output the client asked for at most (0: it named none), bounded by
	// the protocol's parse.
	MaxOutput() int64
	// Build is the upstream body: the checked fields, the configured model, and maxOutput
	// (when > 0) as the request's max output.
	Build(model string, maxOutput int64) ([]byte, error)
	// Conversation is what the request shows the model, in order, system prompt first.
	Conversation() []Message
	// Tools is how many tools the request offers the model: an agent's main loop always
	// offers its tools, a CLI's side query (a title, a topic check) offers none.
	Tools() int
	// Removed names the hosted tools the gateway took out of the request rather than refuse
	// it (a CLI sends them by default), for the trajectory's extra.
	Removed() []string
}

// Role is a conversation message's author.
type Role int

// The roles a protocol's messages map onto.
const (
	// Unreadable is a message the protocol could not read; the trajectory counts it skipped.
	Unreadable Role = iota
	System
	User
	// Agent is a model answer: text, reasoning, tool calls.
	Agent
	// ToolResult carries one tool's output back to the model.
	ToolResult
)

// Message is one message of a conversation, protocol-neutral.
type Message struct {
	Role Role
	Text string
	// Reasoning is a model's thinking, kept in the trajectory as reasoning.
	Reasoning string
	// Calls are an Agent message's tool calls.
	Calls []Call
	// CallID is the call a ToolResult answers ("" when the protocol names none); CallName
	// its tool's name, for protocols (Gemini) that match results by name.
	CallID, CallName string
	// Raw is the message as sent, scanned whole for skill activations: a skill's body may
	// arrive in any part of it.
	Raw json.RawMessage
	// Join says an Agent message continues the previous Agent message (a Responses API
	// function_call item after the assistant message of the same turn).
	Join bool
}

// Call is one tool call as the model wrote it; Args is a JSON string or object.
type Call struct {
	ID, Name string
	Args     json.RawMessage
}

// Turn is one model answer, as the trajectory records it.
type Turn struct {
	Model, Text, Reasoning string
	Calls                  []Call
	// Stop is the provider's stop reason when it is a refusal or a safety stop ("" else).
	Stop string
	// Streamed: assembled from a stream; Incomplete: cut at a cap, or the stream was.
	Streamed, Incomplete bool
	// MaxOutput: the provider ended the answer at its max output (OpenAI's finish_reason
	// length, the Responses API's incomplete for max_output_tokens, Anthropic's stop_reason
	// max_tokens, Gemini's MAX_TOKENS). Such an answer is also Incomplete.
	MaxOutput bool
}

// Tokens are one answer's usage, protocol-neutral. Prompt counts every prompt token, those
// the provider's cache served (CacheRead) or stored (CacheWrite) included, whatever the
// protocol's own accounting (Anthropic reports the three apart, OpenAI and Gemini the cached
// part within the prompt).
type Tokens struct {
	Prompt, Completion, CacheRead, CacheWrite int64
}

// Total is what the answer counts against a budget.
func (t Tokens) Total() int64 { return t.Prompt + t.Completion }

// StreamReader reads one streamed answer (server-sent events) for the gateway's relay.
type StreamReader interface {
	// Event reads one event: its name ("" when the stream names none) and its data. drop
	// says the event is not passed on to the client.
	Event(name string, data []byte) (drop bool)
	// Usage is the answer's usage once the stream showed it.
	Usage() (Tokens, bool)
	// Turn is the answer assembled from the events; cut says the client did not get all of it.
	Turn(cut bool) *Turn
	// End is written after the upstream's last event when the stream was passed on whole
	// and metered: the events held back until the usage was seen (OpenAI's [DONE]).
	End() []byte
}

// Refusal is an answer the gateway gives instead of forwarding a request.
type Refusal struct {
	Status    int
	Code, Msg string
}

func (r *Refusal) Error() string { return r.Msg }

// requestInfo is what every protocol's Request reports alike; each request type embeds it.
type requestInfo struct {
	model     string
	stream    bool
	maxOutput int64
	tools     int
	removed   []string
}

func (r *requestInfo) Model() string     { return r.model }
func (r *requestInfo) Stream() bool      { return r.stream }
func (r *requestInfo) MaxOutput() int64  { return r.maxOutput }
func (r *requestInfo) Tools() int        { return r.tools }
func (r *requestInfo) Removed() []string { return r.removed }
