package gateway

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// anthropic is Anthropic's Messages API, as Claude Code speaks it: POST /v1/messages (JSON or
// server-sent events, often with ?beta=true) and POST /v1/messages/count_tokens, the key in
// x-api-key or as a Bearer token (ANTHROPIC_AUTH_TOKEN). Its request allow-list is here, its
// stream reader in anthropic_stream.go.
type anthropic struct {
	// defaultMax is the max_tokens of a request that names none and gets none from the
	// gateway (no budget): the API requires one (0: DefaultMaxOutputTokens).
	defaultMax int64
}

func (anthropic) Name() string { return APIAnthropic }

func (anthropic) Paths() string {
	return "POST /v1/messages and /v1/messages/count_tokens, and GET /v1/models"
}

// The operations of the Messages API. A route's Op carries "?beta=true" when the client sent
// it (the SDKs' beta namespace), so that Upstream, which does not see the request's URL,
// keeps it.
const (
	anthropicMessages = "messages"
	anthropicCount    = "count_tokens"
	anthropicBetaQ    = "?beta=true"
)

func (anthropic) Route(r *http.Request) (Route, bool) {
	var rt Route
	switch r.URL.Path {
	case "/v1/messages":
		rt = Route{Op: anthropicMessages, Kind: Generate}
	case "/v1/messages/count_tokens":
		rt = Route{Op: anthropicCount, Kind: Count}
	case "/v1/models":
		return Route{Op: "models", Kind: Local}, true
	default:
		if id, ok := strings.CutPrefix(r.URL.Path, "/v1/models/"); ok && id != "" && !strings.Contains(id, "/") {
			return Route{Op: "model", Kind: Local, Model: id}, true
		}
		return Route{}, false
	}
	// Any other query parameter is dropped: the API defines none.
	if r.URL.Query().Get("beta") == "true" {
		rt.Op += anthropicBetaQ
	}
	return rt, true
}

// Token is the key as Anthropic's SDKs send it: x-api-key (ANTHROPIC_API_KEY), or a Bearer
// token (ANTHROPIC_AUTH_TOKEN).
func (anthropic) Token(r *http.Request) string {
	if k := r.Header.Get("X-Api-Key"); k != "" {
		return k
	}
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return tok
}

// anthropicVersion is sent when the client names none: the API requires one, and every SDK
// sends this one.
const anthropicVersion = "2023-06-01"

// anthropicRequestHeaders are the client headers sent upstream as they are; anthropic-version
// and anthropic-beta are sent checked. No auth-ish header rides along, none of Claude Code's
// own (x-app, X-Claude-Code-Session-Id, x-stainless-*,
// anthropic-dangerous-direct-browser-access), and no Accept-Encoding, so that the transport
// decompresses and the usage can be read.
var anthropicRequestHeaders = []string{"Content-Type", "Accept", "User-Agent"}

// anthropicBetas are the anthropic-beta features forwarded, by name without their date: they
// change how the model answers (fast mode, redacted thinking, effort), what a request may
// carry inline (deferred tool definitions and tool references: advanced-tool-use), or how its
// prompt is cached (extended cache TTLs), and nothing outside the sandbox; what they cost is
// metered as tokens like any other request. Every other beta is dropped from the header,
// unknown ones too, and named in the trajectory (Dropped): those that make the provider act
// for the sandbox (web search and fetch, code execution, MCP servers, skills and containers,
// the advisor tool), keep state that outlives the job (the Files API, agent memory), or need
// another credential (oauth: the gateway's key is an API key). A request that needs a dropped
// beta fails upstream with the API's own message. Reviewed against Claude Code 2.1's betas
// (testdata/cli/README.md) and the platform.claude.com docs of each, 2026-11-29.
var anthropicBetas = []string{
	"advanced-tool-use", // defer_loading, tool references, input examples; hosted tool types are still refused
	"claude-code",
	"computer-use", // a client tool: the CLI runs the actions itself
	"context-1m",
	"context-management",
	"effort",
	"extended-cache-ttl",
	"fast-mode", // speed: "fast"
	"fine-grained-tool-streaming",
	"interleaved-thinking",
	"mid-conversation-system",
	"model-context-window-exceeded",
	"output-128k",
	"output-300k",
	"pdfs",
	"prompt-caching", // prompt-caching-2024-07-31, prompt-caching-scope-2026-01-05
	"redact-thinking",
	"structured-outputs",
	"thinking-token-count",
	"token-counting",
	"token-efficient-tools",
}

// anthropicBetaAllowed says a beta value (name-YYYY-MM-DD) is forwarded.
func anthropicBetaAllowed(v string) bool {
	for _, name := range anthropicBetas {
		// What follows the name is a date, or a variant and a date (prompt-caching-scope-…).
		if rest, ok := strings.CutPrefix(v, name+"-"); ok && rest != "" {
			return true
		}
	}
	return false
}

// filterBetas splits the client's anthropic-beta values into those forwarded and those
// dropped, each in order, once each.
func filterBetas(values []string) (kept, dropped []string) {
	for _, v := range values {
		for b := range strings.SplitSeq(v, ",") {
			b = strings.TrimSpace(b)
			switch {
			case b == "" || slices.Contains(kept, b) || slices.Contains(dropped, b):
			case anthropicBetaAllowed(b):
				kept = append(kept, b)
			default:
				dropped = append(dropped, b)
			}
		}
	}
	return kept, dropped
}

// Dropped names the anthropic-beta values Upstream leaves out.
func (anthropic) Dropped(client http.Header) []string {
	_, dropped := filterBetas(client.Values("Anthropic-Beta"))
	for i, b := range dropped {
		dropped[i] = "anthropic-beta: " + b
	}
	return dropped
}

// Upstream is base (Anthropic's, without /v1; one that ends in /v1 is not doubled) plus the
// route's path, the key as x-api-key, and the client's allowed headers.
func (anthropic) Upstream(base *url.URL, rt Route, _, key string, client http.Header) (string, http.Header) {
	u := *base
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1") + "/v1/messages"
	op, beta := strings.CutSuffix(rt.Op, anthropicBetaQ)
	if op == anthropicCount {
		u.Path += "/count_tokens"
	}
	if beta {
		u.RawQuery = "beta=true"
	}
	h := forwardHeaders(client, anthropicRequestHeaders)
	h.Set("Anthropic-Version", anthropicVersion)
	if v := strings.TrimSpace(client.Get("Anthropic-Version")); v != "" {
		h.Set("Anthropic-Version", v)
	}
	if betas, _ := filterBetas(client.Values("Anthropic-Beta")); len(betas) > 0 {
		h.Set("Anthropic-Beta", strings.Join(betas, ","))
	}
	if key != "" {
		h.Set("X-Api-Key", key)
	}
	return u.String(), h
}

// ResponseHeaders are Anthropic's rate-limit and retry headers, which its SDKs act on.
func (anthropic) ResponseHeaders() []string {
	return []string{"Content-Type", "Retry-After", "Request-Id", "X-Should-Retry",
		"Anthropic-Ratelimit-Requests-Limit", "Anthropic-Ratelimit-Requests-Remaining", "Anthropic-Ratelimit-Requests-Reset",
		"Anthropic-Ratelimit-Tokens-Limit", "Anthropic-Ratelimit-Tokens-Remaining", "Anthropic-Ratelimit-Tokens-Reset",
		"Anthropic-Ratelimit-Input-Tokens-Limit", "Anthropic-Ratelimit-Input-Tokens-Remaining", "Anthropic-Ratelimit-Input-Tokens-Reset",
		"Anthropic-Ratelimit-Output-Tokens-Limit", "Anthropic-Ratelimit-Output-Tokens-Remaining", "Anthropic-Ratelimit-Output-Tokens-Reset"}
}

// anthropicFields are the Messages API fields the gateway forwards: those Claude Code 2.1
// sends (see testdata/cli) and the sampling parameters. metadata is reduced to user_id, and
// service_tier is dropped: the job's owner, not the CLI, chooses what the upstream bills.
// speed (fast mode), a top-level cache_control (automatic caching) and inference_geo (where
// the model runs) are forwarded: they are how the agent's own settings (/fast, the region its
// operator must keep to) reach the model, none reaches beyond the sandbox, and the tokens
// they spend are metered as any others. The upstream's price for them (fast mode and 1-hour
// cache writes cost more) is not the configured Price: Usage().Cost understates it.
var anthropicFields = map[string]fieldCheck{
	"model":              isString,
	"messages":           isArray,
	"system":             anthropicSystem,
	"max_tokens":         isMaxOutput,
	"metadata":           isObject,
	"stop_sequences":     anthropicStrings,
	"stream":             isBool,
	"temperature":        isNumber,
	"top_k":              isInt,
	"top_p":              isNumber,
	"tools":              isArray, // checked by anthropicTools
	"tool_choice":        anthropicToolChoice,
	"thinking":           anthropicThinking,
	"context_management": isObject,
	"output_config":      isObject,
	"speed":              anthropicSpeed,
	"cache_control":      anthropicCacheControl,
	"inference_geo":      isString,
}

// anthropicCountFields are count_tokens' fields: what shapes a prompt, nothing of an answer.
var anthropicCountFields = map[string]fieldCheck{
	"model":              isString,
	"messages":           isArray,
	"system":             anthropicSystem,
	"tools":              isArray,
	"tool_choice":        anthropicToolChoice,
	"thinking":           anthropicThinking,
	"context_management": isObject,
	"output_config":      isObject,
}

// refusedAnthropicFields name a reason for fields that reach beyond the sandbox.
var refusedAnthropicFields = map[string]string{
	"mcp_servers": "an MCP server is connected to by the provider, outside the sandbox; run the server in the sandbox as a client tool instead",
	"container":   "a container is state kept by the provider (code execution, skills), which outlives the job",
}

func anthropicStrings(name string, raw json.RawMessage) error {
	var ss []string
	if json.Unmarshal(raw, &ss) != nil {
		return fmt.Errorf("%q must be an array of strings", name)
	}
	return nil
}

// anthropicSpeed accepts the speeds the API defines; fast needs the fast-mode beta, which is
// forwarded.
func anthropicSpeed(name string, raw json.RawMessage) error {
	var s string
	if json.Unmarshal(raw, &s) != nil || (s != "standard" && s != "fast") {
		return fmt.Errorf("%q must be \"standard\" or \"fast\"", name)
	}
	return nil
}

// anthropicCacheControl accepts a cache breakpoint: an object naming its type (ephemeral),
// with or without a ttl.
func anthropicCacheControl(name string, raw json.RawMessage) error {
	var c struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &c) != nil || c.Type == "" {
		return fmt.Errorf("%q must be an object with a type", name)
	}
	return nil
}

// anthropicSystem accepts a string or an array of text blocks (with cache_control).
func anthropicSystem(name string, raw json.RawMessage) error {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return nil
	}
	var blocks []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return fmt.Errorf("%q must be a string or an array of text blocks", name)
	}
	for i, b := range blocks {
		if b.Type != "text" || b.Text == nil {
			return fmt.Errorf("%s[%d] must be a text block", name, i)
		}
	}
	return nil
}

// anthropicThinking accepts a thinking config whose budget is bounded.
func anthropicThinking(name string, raw json.RawMessage) error {
	var t map[string]json.RawMessage
	if json.Unmarshal(raw, &t) != nil {
		return fmt.Errorf("%q must be an object", name)
	}
	if b, ok := t["budget_tokens"]; ok {
		return isBoundedInt(name+".budget_tokens", b)
	}
	return nil
}

// anthropicToolChoice accepts auto, any, none and a named tool; one naming a hosted tool
// that Parse removed is refused there.
func anthropicToolChoice(name string, raw json.RawMessage) error {
	var c struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &c) != nil {
		return fmt.Errorf("%q must be an object", name)
	}
	switch c.Type {
	case "auto", "any", "none", "tool":
		return nil
	}
	return fmt.Errorf("%q of type %q: want auto, any, none or tool", name, c.Type)
}

// Anthropic's tool types are a family and a date (bash_20250124). The agent's own tools are
// kept: custom tools (no type, or "custom") and the Anthropic-defined tools the CLI runs
// itself. The provider's own tools that a CLI may offer by default (search and fetch on the
// web, code execution) are taken out of the request and named in the trajectory; every
// other type (MCP toolsets, tool search, the advisor, toolsets of later betas) refuses it.
var (
	anthropicClientTools  = []string{"bash", "text_editor", "computer", "memory"}
	anthropicRemovedTools = []string{"web_search", "web_fetch", "code_execution"}
)

// anthropicToolFamily is a versioned tool type's family ("" when the type is not one).
func anthropicToolFamily(typ string) string {
	i := strings.LastIndexByte(typ, '_')
	if i < 1 || len(typ)-i-1 != 8 {
		return ""
	}
	for _, c := range typ[i+1:] {
		if c < '0' || c > '9' {
			return ""
		}
	}
	return typ[:i]
}

// anthropicTools checks a tools list: kept tools, the types removed, and the names the
// removed tools had (a tool_choice must not name one).
func anthropicTools(raw json.RawMessage) (kept []json.RawMessage, removed, removedNames []string, ref *Refusal) {
	var tools []json.RawMessage
	if json.Unmarshal(raw, &tools) != nil {
		return nil, nil, nil, badRequest(`"tools" must be an array of objects`)
	}
	kept = make([]json.RawMessage, 0, len(tools))
	for i, t := range tools {
		var tool struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		if json.Unmarshal(t, &tool) != nil {
			return nil, nil, nil, badRequest("tools[%d] must be an object", i)
		}
		family := anthropicToolFamily(tool.Type)
		switch {
		case tool.Type == "" || tool.Type == "custom":
			if tool.Name == "" {
				return nil, nil, nil, badRequest("tools[%d] must have a name", i)
			}
			kept = append(kept, t)
		case slices.Contains(anthropicClientTools, family):
			kept = append(kept, t)
		case slices.Contains(anthropicRemovedTools, family):
			if !slices.Contains(removed, tool.Type) {
				removed = append(removed, tool.Type)
			}
			removedNames = append(removedNames, tool.Name)
		default:
			return nil, nil, nil, badRequest("tools[%d] has type %q: only tools the agent runs itself (custom tools, %s) are forwarded; the provider's tools run outside the sandbox",
				i, tool.Type, strings.Join(anthropicClientTools, "_*, ")+"_*")
		}
	}
	return kept, removed, removedNames, nil
}

// anthropicFetched says why a content object is refused: an image or document the provider
// would fetch from a URL, one stored with the Files API, or a file for a container. Inline
// sources (base64, text, content blocks) and search results are content the CLI sent.
func anthropicFetched(obj map[string]any) string {
	if jsonIs(obj, "type", "container_upload") {
		return "a container_upload puts a stored file into a container the provider keeps"
	}
	v, _ := jsonField(obj, "source")
	src, ok := v.(map[string]any)
	switch {
	case !ok:
	case jsonIs(src, "type", "url"):
		return "a source by URL is fetched by the provider, outside the sandbox"
	case jsonIs(src, "type", "file"):
		return "a file source names a file stored with the provider (Files API), which outlives the job"
	}
	return ""
}

// anthropicRequest is a parsed Messages (or count_tokens) request.
type anthropicRequest struct {
	requestInfo
	params     map[string]json.RawMessage
	count      bool
	defaultMax int64
}

func (a anthropic) Parse(rt Route, body []byte) (Request, *Refusal) {
	params, ref := parseObject(body)
	if ref != nil {
		return nil, ref
	}
	op, _ := strings.CutSuffix(rt.Op, anthropicBetaQ)
	p := &anthropicRequest{params: params, count: op == anthropicCount, defaultMax: cmp.Or(a.defaultMax, DefaultMaxOutputTokens)}
	fields, ignored := anthropicFields, []string{"service_tier"}
	if p.count {
		fields, ignored = anthropicCountFields, nil
	}
	if ref := checkFields(params, fields, refusedAnthropicFields, ignored, "messages"); ref != nil {
		return nil, ref
	}
	if raw, ok := params["tools"]; ok {
		kept, removed, names, ref := anthropicTools(raw)
		if ref != nil {
			return nil, ref
		}
		p.tools, p.removed = len(kept), removed
		params["tools"] = mustJSON(kept)
		if len(kept) == 0 && len(removed) > 0 {
			delete(params, "tools")
			delete(params, "tool_choice")
		}
		if raw, ok := params["tool_choice"]; ok {
			var c struct{ Name string }
			_ = json.Unmarshal(raw, &c)
			if c.Name != "" && slices.Contains(names, c.Name) {
				return nil, badRequest("%q names %q, a tool of the provider's that the gateway removes from requests", "tool_choice", c.Name)
			}
		}
	}
	for _, f := range []string{"system", "messages"} {
		if err := fetchedContent(params[f], f, anthropicFetched); err != nil {
			return nil, badRequest("%v", err)
		}
	}
	if raw, ok := params["model"]; ok {
		_ = json.Unmarshal(raw, &p.model)
	}
	if raw, ok := params["stream"]; ok {
		_ = json.Unmarshal(raw, &p.stream)
	}
	if raw, ok := params["max_tokens"]; ok {
		_ = json.Unmarshal(raw, &p.maxOutput)
	}
	return p, nil
}

// Build is the body sent upstream: the checked fields, the configured model, metadata
// reduced to user_id, and max_tokens, which the Messages API requires: maxOutput when the
// gateway reserved one (always under a budget), else the client's own, else the model's
// (defaultMax: configured, documented or the default). That last case is a request without
// a budget that names none (Session.reserve then sends 0 and meters an answer without usage
// at the same figure). A token count carries no max_tokens. A thinking budget_tokens is kept
// under the max_tokens the gateway set (see thinkingUnder).
func (p *anthropicRequest) Build(model string, maxOutput int64) ([]byte, error) {
	out := maps.Clone(p.params)
	out["model"] = mustJSON(model)
	delete(out, "service_tier")
	if p.count {
		return json.Marshal(out)
	}
	if raw, ok := out["metadata"]; ok {
		// user_id only: it ties a request to a user for abuse checks; whatever else a client
		// puts here the API does not define.
		var md struct {
			UserID *string `json:"user_id"`
		}
		delete(out, "metadata")
		if json.Unmarshal(raw, &md) == nil && md.UserID != nil {
			out["metadata"] = mustJSON(map[string]string{"user_id": *md.UserID})
		}
	}
	switch {
	case maxOutput > 0:
	case p.maxOutput > 0:
		// The client's own, kept as it is with its own thinking budget: with interleaved
		// thinking a budget may exceed max_tokens.
		return json.Marshal(out)
	default:
		maxOutput = p.defaultMax
	}
	out["max_tokens"] = mustJSON(maxOutput)
	if raw, ok := out["thinking"]; ok && (p.maxOutput == 0 || maxOutput < p.maxOutput) {
		// The gateway chose or lowered max_tokens: a thinking budget at or over it is
		// lowered with it, down to the API's minimum.
		var th map[string]json.RawMessage
		var budget int64
		if json.Unmarshal(raw, &th) == nil && json.Unmarshal(th["budget_tokens"], &budget) == nil {
			if b, ok := thinkingUnder(budget, maxOutput, anthropicMinThinking); ok {
				th["budget_tokens"] = mustJSON(b)
				out["thinking"] = mustJSON(th)
			}
		}
	}
	return json.Marshal(out)
}

// anthropicMaxTokens is the stop_reason of an answer cut at its max_tokens.
const anthropicMaxTokens = "max_tokens"

// anthropicMinThinking is the smallest thinking budget the API takes.
const anthropicMinThinking = 1024

// anthropicMessage is a message of a request's conversation.
type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// anthropicBlock is a content block, of a request or an answer.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

// anthropicContent reads a content value: a string (one text block) or an array of blocks,
// each with its raw JSON.
func anthropicContent(raw json.RawMessage) (blocks []anthropicBlock, raws []json.RawMessage, ok bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anthropicBlock{{Type: "text", Text: s}}, []json.RawMessage{raw}, true
	}
	if json.Unmarshal(raw, &raws) != nil {
		return nil, nil, false
	}
	blocks = make([]anthropicBlock, len(raws))
	for i, r := range raws {
		if json.Unmarshal(r, &blocks[i]) != nil {
			return nil, nil, false
		}
	}
	return blocks, raws, true
}

// anthropicText is the text of a content value (a tool result's, the system prompt): a
// string, or its text blocks joined by newlines.
func anthropicText(raw json.RawMessage) string {
	blocks, _, _ := anthropicContent(raw)
	var texts []string
	for _, b := range blocks {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// Conversation converts the system prompt and the messages. A user message's tool results
// become ToolResult messages, then its other blocks one User message; each carries as Raw
// its own part of the message (a tool_result block, the other blocks), so that the message
// is scanned for activations whole and once. An assistant message is one Agent message:
// text, thinking as reasoning, tool_use blocks as calls.
func (p *anthropicRequest) Conversation() []Message {
	var out []Message
	if raw, ok := p.params["system"]; ok {
		out = append(out, Message{Role: System, Text: anthropicText(raw), Raw: raw})
	}
	var msgs []json.RawMessage
	_ = json.Unmarshal(p.params["messages"], &msgs)
	for _, raw := range msgs {
		var m anthropicMessage
		if json.Unmarshal(raw, &m) != nil {
			out = append(out, Message{Raw: raw})
			continue
		}
		blocks, raws, ok := anthropicContent(m.Content)
		if !ok {
			out = append(out, Message{Raw: raw})
			continue
		}
		switch m.Role {
		case "user":
			out = append(out, anthropicUser(blocks, raws, raw)...)
		case "system":
			// The mid-conversation-system beta: a system message among the others.
			out = append(out, Message{Role: System, Text: anthropicText(m.Content), Raw: raw})
		case "assistant":
			out = append(out, anthropicAgent(blocks, raw))
		default:
			out = append(out, Message{Raw: raw})
		}
	}
	return out
}

// anthropicUser converts a user message's blocks: tool results first, then the rest.
func anthropicUser(blocks []anthropicBlock, raws []json.RawMessage, raw json.RawMessage) []Message {
	var out []Message
	var rest []json.RawMessage
	var texts []string
	for i, b := range blocks {
		if b.Type == "tool_result" {
			out = append(out, Message{Role: ToolResult, CallID: b.ToolUseID, Text: anthropicText(b.Content), Raw: raws[i]})
			continue
		}
		rest = append(rest, raws[i])
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	switch {
	case len(out) == 0:
		return []Message{{Role: User, Text: strings.Join(texts, "\n"), Raw: raw}}
	case len(rest) > 0:
		out = append(out, Message{Role: User, Text: strings.Join(texts, "\n"), Raw: mustJSON(rest)})
	}
	return out
}

// anthropicAgent converts an assistant message's blocks.
func anthropicAgent(blocks []anthropicBlock, raw json.RawMessage) Message {
	t := anthropicTurn("", blocks)
	return Message{Role: Agent, Text: t.Text, Reasoning: t.Reasoning, Calls: t.Calls, Raw: raw}
}

// anthropicTurn is what an answer's (or an assistant message's) blocks say: their text and
// thinking joined by newlines, their tool calls with their input objects.
func anthropicTurn(model string, blocks []anthropicBlock) *Turn {
	t := &Turn{Model: model}
	var texts, reasoning []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "thinking":
			reasoning = append(reasoning, b.Thinking)
		case "redacted_thinking":
			// Encrypted by the provider: there is no text to keep.
			reasoning = append(reasoning, "[redacted thinking]")
		case "tool_use":
			args := b.Input
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			t.Calls = append(t.Calls, Call{ID: b.ID, Name: b.Name, Args: args})
		}
	}
	t.Text = strings.Join(texts, "\n")
	t.Reasoning = strings.Join(reasoning, "\n")
	return t
}

// anthropicUsage is an answer's usage object (message_start's and message_delta's too):
// input_tokens leaves out the cache's parts, which are counted apart.
type anthropicUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

func (u anthropicUsage) tokens() Tokens {
	return Tokens{Prompt: u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
		Completion: u.OutputTokens, CacheRead: u.CacheReadInputTokens, CacheWrite: u.CacheCreationInputTokens}
}

// Answer reads a message answer: its usage and its turn. A token count ({"input_tokens": N})
// is billed by no provider and is not metered.
func (anthropic) Answer(rt Route, body []byte) (Tokens, bool, *Turn) {
	if op, _ := strings.CutSuffix(rt.Op, anthropicBetaQ); op == anthropicCount {
		return Tokens{}, false, nil
	}
	var a struct {
		Type       string           `json:"type"`
		Model      string           `json:"model"`
		Content    []anthropicBlock `json:"content"`
		StopReason string           `json:"stop_reason"`
		Usage      *anthropicUsage  `json:"usage"`
	}
	if json.Unmarshal(body, &a) != nil {
		return Tokens{}, false, nil
	}
	var u Tokens
	if a.Usage != nil {
		u = a.Usage.tokens()
	}
	if a.Type != "message" {
		return u, a.Usage != nil, nil
	}
	t := anthropicTurn(a.Model, a.Content)
	if a.StopReason == "refusal" {
		t.Stop = a.StopReason
	}
	t.atMaxOutput(a.StopReason == anthropicMaxTokens)
	return u, a.Usage != nil, t
}

func (anthropic) Stream(Route, Request) StreamReader { return &anthropicStream{} }

// Local answers GET /v1/models (and /v1/models/{id}) as Anthropic's Models API does, with
// the configured model alone: the one model a CLI can get here. The API's created_at is
// unknown to the gateway; the epoch says so rather than invent a date.
func (a anthropic) Local(rt Route, model string) (int, []byte) {
	entry := map[string]any{"type": "model", "id": model, "display_name": model, "created_at": "1970-01-01T00:00:00Z"}
	if rt.Op == "model" {
		if rt.Model != model {
			return http.StatusNotFound, a.Error(http.StatusNotFound, "model_not_found", "the model gateway serves only the configured model "+model)
		}
		return http.StatusOK, mustJSON(entry)
	}
	return http.StatusOK, mustJSON(map[string]any{"data": []any{entry}, "has_more": false, "first_id": model, "last_id": model})
}

// anthropicErrorType is the error type Anthropic's API gives a status, which its SDKs and
// Claude Code show and act on.
func anthropicErrorType(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusMethodNotAllowed, http.StatusUpgradeRequired:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

// Error is Anthropic's error shape; the gateway's own code rides along in the error object.
func (anthropic) Error(status int, code, msg string) []byte {
	return mustJSON(map[string]any{"type": "error", "error": map[string]any{
		"type": anthropicErrorType(status), "message": msg, "code": code}})
}

// StreamError is the API's own error event, which the SDKs turn into an error.
func (anthropic) StreamError(code, msg string) []byte {
	b := mustJSON(map[string]any{"type": "error", "error": map[string]any{
		"type": "api_error", "message": msg, "code": code}})
	return append(append([]byte("event: error\ndata: "), b...), "\n\n"...)
}
