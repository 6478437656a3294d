package agenttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"
)

// The protocols a request can speak, as Conv.Protocol names them.
const (
	ProtocolChat      = "openai-chat"      // OpenAI Chat Completions
	ProtocolResponses = "openai-responses" // OpenAI Responses
	ProtocolAnthropic = "anthropic"        // Anthropic Messages
	ProtocolGemini    = "gemini"           // Gemini generateContent
)

// scriptedModel is the model name rendered replies carry; clients do not check it.
const scriptedModel = "test-model"

// Tokens is a turn's usage, protocol-neutral. Prompt counts all input tokens, cached ones
// included (OpenAI's and Gemini's meaning); Completion counts all output tokens, reasoning
// included (OpenAI's and Anthropic's meaning). Each renderer converts to its provider's
// accounting, so one scripted turn costs the same whichever protocol carries it.
type Tokens struct {
	Prompt, Completion int64
	// CacheRead and CacheWrite are the parts of Prompt read from and written to the prompt
	// cache. Only Anthropic reports writes; the others count them as plain input.
	CacheRead, CacheWrite int64
	// Reasoning is the part of Completion spent thinking. Gemini reports it apart from the
	// candidates (thoughtsTokenCount), OpenAI as a detail (reasoning_tokens).
	Reasoning int64
}

// Turn is one scripted model turn, protocol-neutral.
type Turn struct {
	Text, Thinking string
	Calls          []Call
	Usage          Tokens
	// Refusal is the provider's refusal or safety stop: Anthropic stop_reason "refusal",
	// Gemini finishReason "SAFETY" without content, OpenAI a refusal instead of content.
	Refusal bool
}

// Conv is the protocol-neutral view of a request, enough for a script to decide its turn.
type Conv struct {
	Protocol string // one of the Protocol constants; "" for a path no protocol serves
	Model    string
	System   string // the system prompt (Anthropic system, Gemini systemInstruction, Responses instructions, Chat system messages)
	Input    string // the first user message's text
	// ToolResults are the contents of the tool results in the conversation, in order.
	ToolResults []string
	Tools       []string // names of the tools offered (a hosted tool by its type)
	Stream      bool
	Raw         Request
}

// Script answers the n-th request (0-based) with a turn to render in the request's protocol,
// or with a non-nil reply (usually an error from FailFor) to send as it is.
type Script func(n int, c Conv) (Turn, *Reply)

// Scripted adapts a protocol-neutral script to a server's answer function: it parses each
// request, asks the script, and renders the turn in the protocol and mode (JSON or SSE) the
// request asked for, so one scripted model can serve all four APIs.
func Scripted(s Script) func(n int, r Request) Reply {
	return func(n int, r Request) Reply {
		c := ParseConv(r)
		t, rep := s(n, c)
		if rep != nil {
			return *rep
		}
		return Render(c, t)
	}
}

// Render renders a turn in the protocol and mode of the request c was parsed from.
func Render(c Conv, t Turn) Reply {
	switch c.Protocol {
	case ProtocolAnthropic:
		return AnthropicTurn(t, c.Stream)
	case ProtocolGemini:
		return GeminiTurn(t, c.Stream)
	case ProtocolResponses:
		return ResponsesTurn(t, c.Stream)
	case ProtocolChat:
		return OpenAITurn(t, c.Stream)
	}
	return scriptError(fmt.Sprintf("agenttest: no protocol serves %s", c.Raw.Path))
}

// FailFor is an error reply in the error format of the protocol c speaks, with optional
// header pairs; a pointer, as a Script returns it.
func FailFor(c Conv, status int, headerPairs ...string) *Reply {
	var r Reply
	switch c.Protocol {
	case ProtocolAnthropic:
		r = AnthropicFail(status, headerPairs...)
	case ProtocolGemini:
		r = GeminiFail(status, headerPairs...)
	default:
		r = Fail(status, headerPairs...)
	}
	return &r
}

// ParseConv reads the protocol-neutral view of a request; the protocol comes from the path.
func ParseConv(r Request) Conv {
	c := Conv{Protocol: protocolOf(r.Path), Raw: r}
	var body map[string]any
	_ = json.Unmarshal(r.Body, &body)
	c.Model, _ = body["model"].(string)
	c.Stream, _ = body["stream"].(bool)
	switch c.Protocol {
	case ProtocolChat:
		parseChat(&c, body)
	case ProtocolResponses:
		parseResponses(&c, body)
	case ProtocolAnthropic:
		parseAnthropic(&c, body)
	case ProtocolGemini:
		parseGemini(&c, body)
	}
	return c
}

func protocolOf(path string) string {
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		return ProtocolChat
	case strings.HasSuffix(path, "/responses"):
		return ProtocolResponses
	case strings.HasSuffix(path, "/messages"):
		return ProtocolAnthropic
	case strings.HasSuffix(path, ":generateContent"), strings.HasSuffix(path, ":streamGenerateContent"):
		return ProtocolGemini
	}
	return ""
}

func parseChat(c *Conv, body map[string]any) {
	var system []string
	for _, m := range objects(body["messages"]) {
		switch m["role"] {
		case "system", "developer":
			system = append(system, textOf(m["content"]))
		case "user":
			if c.Input == "" {
				c.Input = textOf(m["content"])
			}
		case "tool":
			c.ToolResults = append(c.ToolResults, textOf(m["content"]))
		}
	}
	c.System = strings.Join(system, "\n")
	for _, t := range objects(body["tools"]) {
		fn, _ := t["function"].(map[string]any)
		c.Tools = append(c.Tools, str(fn["name"]))
	}
}

func parseResponses(c *Conv, body map[string]any) {
	system := []string{}
	if s := str(body["instructions"]); s != "" {
		system = append(system, s)
	}
	if s, ok := body["input"].(string); ok {
		c.Input = s
	}
	for _, it := range objects(body["input"]) {
		switch {
		case it["type"] == "function_call_output", it["type"] == "custom_tool_call_output":
			c.ToolResults = append(c.ToolResults, textOf(it["output"]))
		case it["role"] == "system", it["role"] == "developer":
			system = append(system, textOf(it["content"]))
		case it["role"] == "user" && c.Input == "":
			c.Input = textOf(it["content"])
		}
	}
	c.System = strings.Join(system, "\n")
	for _, t := range objects(body["tools"]) {
		name := str(t["name"])
		if name == "" {
			name = str(t["type"]) // hosted tools such as web_search have only a type
		}
		c.Tools = append(c.Tools, name)
	}
}

func parseAnthropic(c *Conv, body map[string]any) {
	c.System = textOf(body["system"])
	for _, m := range objects(body["messages"]) {
		if m["role"] != "user" {
			continue
		}
		if c.Input == "" {
			c.Input = textOf(m["content"])
		}
		for _, b := range objects(m["content"]) {
			if b["type"] == "tool_result" {
				c.ToolResults = append(c.ToolResults, textOf(b["content"]))
			}
		}
	}
	for _, t := range objects(body["tools"]) {
		c.Tools = append(c.Tools, str(t["name"]))
	}
}

func parseGemini(c *Conv, body map[string]any) {
	// The model is in the path (/v1beta/models/{model}:generateContent), not the body.
	if _, rest, ok := strings.Cut(c.Raw.Path, "/models/"); ok {
		c.Model, _, _ = strings.Cut(rest, ":")
	}
	c.Stream = strings.HasSuffix(c.Raw.Path, ":streamGenerateContent")
	if si, ok := body["systemInstruction"].(map[string]any); ok {
		c.System = textOf(si["parts"])
	}
	for _, m := range objects(body["contents"]) {
		if m["role"] != "user" && m["role"] != nil {
			continue
		}
		if t := textOf(m["parts"]); c.Input == "" && t != "" {
			c.Input = t
		}
		for _, p := range objects(m["parts"]) {
			if fr, ok := p["functionResponse"].(map[string]any); ok {
				c.ToolResults = append(c.ToolResults, functionResponseText(fr["response"]))
			}
		}
	}
	for _, t := range objects(body["tools"]) {
		for _, fd := range objects(t["functionDeclarations"]) {
			c.Tools = append(c.Tools, str(fd["name"]))
		}
	}
}

// functionResponseText is a Gemini function response's content: clients (the Gemini CLI
// among them) wrap a tool's output as {"output": ...}; anything else is shown as JSON.
func functionResponseText(v any) string {
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		for _, k := range []string{"output", "content", "result"} {
			if s, ok := m[k].(string); ok {
				return s
			}
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// textOf is the text of a content value in any of the shapes the protocols use: a string,
// or a list of parts or blocks whose text fields are joined by newlines.
func textOf(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []any:
		var parts []string
		for _, p := range objects(v) {
			if p["thought"] == true {
				continue
			}
			if s, ok := p["text"].(string); ok {
				parts = append(parts, s)
			} else if p["content"] != nil {
				parts = append(parts, textOf(p["content"]))
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

func objects(v any) []map[string]any {
	raw, _ := v.([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, x := range raw {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// scriptError is the reply for a turn that cannot be rendered (a scripting mistake, such as
// tool arguments that are not a JSON object); a 400 so that no client retries it.
func scriptError(msg string) Reply {
	return Reply{Status: http.StatusBadRequest, Body: msg,
		Header: map[string]string{"Content-Type": "text/plain"}}
}

// jsonReply is a 200 JSON reply.
func jsonReply(v any) Reply {
	b, err := json.Marshal(v)
	if err != nil {
		return scriptError("agenttest: " + err.Error())
	}
	return Reply{Body: string(b), Header: map[string]string{"Content-Type": "application/json"}}
}

// sse collects server-sent events; named events carry an "event:" line, as Anthropic's and
// OpenAI Responses' streams do, unnamed ones only data (Chat Completions, Gemini).
type sse struct {
	b   strings.Builder
	err error
}

func (s *sse) event(name string, v any) {
	b, err := json.Marshal(v)
	if err != nil && s.err == nil {
		s.err = err
	}
	if name != "" {
		fmt.Fprintf(&s.b, "event: %s\n", name)
	}
	fmt.Fprintf(&s.b, "data: %s\n\n", b)
}

func (s *sse) raw(data string) { fmt.Fprintf(&s.b, "data: %s\n\n", data) }

func (s *sse) reply() Reply {
	if s.err != nil {
		return scriptError("agenttest: " + s.err.Error())
	}
	return Reply{Body: s.b.String(), Header: map[string]string{
		"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}}
}

// pieces splits s into up to n non-empty pieces at rune boundaries, as a stream delivers a
// text in several deltas; "" has no pieces.
func pieces(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		size := (len(s) + n - 1) / n
		for size < len(s) && !utf8.RuneStart(s[size]) {
			size++
		}
		out = append(out, s[:size])
		s = s[size:]
		n = max(n-1, 1)
	}
	return out
}

// argsObject is a call's arguments as the JSON object Anthropic and Gemini carry; "" is {}.
func argsObject(c Call) (json.RawMessage, error) {
	if strings.TrimSpace(c.Arguments) == "" {
		return json.RawMessage("{}"), nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(c.Arguments), &m); err != nil {
		return nil, fmt.Errorf("agenttest: arguments of call %q are not a JSON object: %w", c.Name, err)
	}
	return json.RawMessage(c.Arguments), nil
}

// countTokens estimates a request's input tokens for the token-counting endpoints: about
// four bytes a token, never zero.
func countTokens(body []byte) int64 { return int64(len(body))/4 + 1 }

// endpoint says how a provider server treats a request.
type endpoint int

const (
	unknownEndpoint endpoint = iota
	scriptedEndpoint
	directEndpoint // answered by the server itself, not recorded or counted
)

// route decides a request's endpoint; for a direct one it also gives the reply.
type route func(r *http.Request, body []byte) (endpoint, Reply)

// newRouted starts a server like NewFunc's that routes requests with rt. Direct answers
// (token counts, a WebSocket refusal) are kept out of Requests and Count so that a script's
// n counts model turns only.
func newRouted(t testing.TB, answer func(n int, r Request) Reply, rt route, opts []Option) *Server {
	s := &Server{t: t, answer: answer}
	for _, o := range opts {
		o(s)
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serveRouted(w, r, rt)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *Server) serveRouted(w http.ResponseWriter, r *http.Request, rt route) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	kind, rep := rt(r, body)
	if kind == directEndpoint {
		writeReply(w, rep)
		return
	}
	req := Request{Header: r.Header.Clone(), Path: r.URL.Path, Body: body}
	s.mu.Lock()
	n := s.n
	s.n++
	if !s.noRecord {
		s.reqs = append(s.reqs, req)
	}
	s.mu.Unlock()
	if kind != scriptedEndpoint {
		s.t.Errorf("agenttest: unexpected %s %s", r.Method, r.URL.String())
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	rep = s.answer(n, req)
	if rep.Block {
		<-r.Context().Done()
		return
	}
	writeReply(w, rep)
}

func writeReply(w http.ResponseWriter, rep Reply) {
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	status := rep.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, rep.Body)
}

// routes combines the routes of several protocols: the first that knows a request wins.
func routes(rts ...route) route {
	return func(r *http.Request, body []byte) (endpoint, Reply) {
		for _, rt := range rts {
			if kind, rep := rt(r, body); kind != unknownEndpoint {
				return kind, rep
			}
		}
		return unknownEndpoint, Reply{}
	}
}

// NewAny starts a server that speaks all four protocols at their usual paths, so that one
// scripted model (see Scripted) serves every kind of client. Its URL is the base URL of
// Anthropic and Gemini clients, URL + "/v1" (BaseURL) that of OpenAI clients.
func NewAny(t testing.TB, answer func(n int, r Request) Reply, opts ...Option) *Server {
	return newRouted(t, answer, routes(openAIRoute, anthropicRoute, geminiRoute), opts)
}
