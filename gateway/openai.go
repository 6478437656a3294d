package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// openAI is OpenAI's protocol family: Chat Completions (openai_chat.go) and the Responses API
// (openai_responses.go) that Codex speaks, at /v1/... or at the root (CLIs differ in whether
// their base URL carries the version), with the key as a Bearer token.
type openAI struct {
	// maxField is where a Chat Completion's max output goes when the client named none
	// (Config.MaxTokensField).
	maxField string
	// serviceTier is sent on every request when set; a client's own is dropped.
	serviceTier string
}

func (openAI) Name() string { return APIOpenAI }

func (openAI) Paths() string {
	return "POST /v1/chat/completions, /v1/responses, /v1/responses/compact and GET /v1/models"
}

// openAIRoutes are the paths served, without the optional /v1 prefix.
var openAIRoutes = map[string]Route{
	"/chat/completions":  {Op: "chat", Kind: Generate},
	"/responses":         {Op: "responses", Kind: Generate},
	"/responses/compact": {Op: "compact", Kind: Aside},
	"/models":            {Op: "models", Kind: Local},
}

func (openAI) Route(r *http.Request) (Route, bool) {
	p := r.URL.Path
	if rest, ok := strings.CutPrefix(p, "/v1/"); ok {
		p = "/" + rest
	}
	if rt, ok := openAIRoutes[p]; ok {
		return rt, true
	}
	if rest, ok := strings.CutPrefix(p, "/models/"); ok && rest != "" && !strings.ContainsAny(rest, "/:") {
		return Route{Op: "model", Kind: Local, Model: rest}, true
	}
	return Route{}, false
}

func (openAI) Token(r *http.Request) string {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return tok
}

func (o openAI) Parse(rt Route, body []byte) (Request, *Refusal) {
	if rt.Op == "chat" {
		return parseChat(body, o.maxField, o.serviceTier)
	}
	return parseResponses(body, rt.Op == "compact", o.serviceTier)
}

// openAIRequestHeaders are the only client headers sent upstream: no auth-ish header
// (Authorization, api-key, OpenAI-Organization, cookies, proxy auth) can ride along, and no
// Accept-Encoding, so that the transport decompresses and the usage can be read.
var openAIRequestHeaders = []string{"Content-Type", "Accept", "User-Agent"}

func (openAI) Upstream(base *url.URL, rt Route, _, key string, client http.Header) (string, http.Header) {
	u := *base
	u.Path += map[string]string{"chat": "/chat/completions", "responses": "/responses", "compact": "/responses/compact"}[rt.Op]
	h := forwardHeaders(client, openAIRequestHeaders)
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	return u.String(), h
}

// forwardHeaders copies the named client headers.
func forwardHeaders(client http.Header, names []string) http.Header {
	h := http.Header{}
	for _, name := range names {
		if v := client.Values(name); len(v) > 0 {
			h[http.CanonicalHeaderKey(name)] = slices.Clone(v)
		}
	}
	return h
}

func (openAI) ResponseHeaders() []string {
	return []string{"Content-Type", "Retry-After", "X-Request-Id",
		"X-Ratelimit-Limit-Requests", "X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Requests",
		"X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Requests", "X-Ratelimit-Reset-Tokens"}
}

// openAIUsage is the usage object of an answer or of a stream's last chunk, in Chat
// Completions' words or the Responses API's, with the cached part of the prompt.
type openAIUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	InputTokens         int64 `json:"input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	InputTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
}

func (u *openAIUsage) tokens() Tokens {
	t := Tokens{Prompt: u.PromptTokens + u.InputTokens, Completion: u.CompletionTokens + u.OutputTokens}
	if d := u.PromptTokensDetails; d != nil {
		t.CacheRead += d.CachedTokens
	}
	if d := u.InputTokensDetails; d != nil {
		t.CacheRead += d.CachedTokens
	}
	return t
}

func (openAI) Answer(rt Route, body []byte) (Tokens, bool, *Turn) {
	var meter struct {
		Usage *openAIUsage `json:"usage"`
	}
	_ = json.Unmarshal(body, &meter)
	var u Tokens
	if meter.Usage != nil {
		u = meter.Usage.tokens()
	}
	if rt.Op == "chat" {
		return u, meter.Usage != nil, chatAnswer(body)
	}
	return u, meter.Usage != nil, responsesAnswer(body)
}

func (openAI) Stream(rt Route, req Request) StreamReader {
	if rt.Op == "chat" {
		return &chatStream{req: req.(*chatRequest)}
	}
	return &responsesStream{}
}

// Local answers GET /v1/models with the configured model alone: CLIs list models at start
// (opencode, crush), and the job's owner chose the one they get.
func (openAI) Local(rt Route, model string) (int, []byte) {
	entry := map[string]any{"id": model, "object": "model", "created": 0, "owned_by": "skillfleet-gateway"}
	if rt.Op == "model" {
		if rt.Model != model {
			return http.StatusNotFound, openAI{}.Error(http.StatusNotFound, "model_not_found",
				"the model gateway serves only the configured model "+model)
		}
		return http.StatusOK, mustJSON(entry)
	}
	return http.StatusOK, mustJSON(map[string]any{"object": "list", "data": []any{entry}})
}

// Error is OpenAI's error format, which every OpenAI SDK and CLI shows.
func (openAI) Error(_ int, code, msg string) []byte {
	return mustJSON(map[string]any{"error": map[string]any{
		"message": msg, "type": "gateway_error", "code": code, "param": nil}})
}

// StreamError ends a stream in the form both APIs' clients read: the Responses API's error
// event (Codex reads type "error"), which Chat clients see as an error object.
func (openAI) StreamError(code, msg string) []byte {
	b := mustJSON(map[string]any{"type": "error", "code": code, "message": msg, "param": nil,
		"error": map[string]any{"message": msg, "type": "gateway_error", "code": code, "param": nil}})
	return append(append([]byte("event: error\ndata: "), b...), "\n\n"...)
}

// openAIHostedTools are hosted tool types: they run on the provider's side, where the
// sandbox's network policy does not reach. The search tools a CLI sends by default (Codex's
// web_search) are taken out of the request and named in the trajectory; the rest, an MCP
// server above all, refuse the request.
var (
	openAIRemovedTools = []string{"web_search", "web_search_preview", "web_search_preview_2025_03_11", "web_search_2025_08_26"}
	// clientTools are the tool types the agent runs itself, inside the sandbox: functions,
	// custom (free-form) tools such as Codex's apply_patch, and local_shell.
	openAIClientTools = []string{"function", "custom", "local_shell"}
)

// openAITools checks a tools list: the agent's own tools are kept, default hosted search
// tools removed (returned in removed), every other hosted tool refused.
func openAITools(name string, raw json.RawMessage) (kept json.RawMessage, removed []string, ref *Refusal) {
	var tools []json.RawMessage
	if json.Unmarshal(raw, &tools) != nil {
		return nil, nil, badRequest("%q must be an array of objects", name)
	}
	out := make([]json.RawMessage, 0, len(tools))
	for i, t := range tools {
		var tool struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(t, &tool) != nil {
			return nil, nil, badRequest("%s[%d] must be an object", name, i)
		}
		switch {
		case slices.Contains(openAIClientTools, tool.Type):
			out = append(out, t)
		case tool.Type == "namespace":
			// Codex groups a local MCP server's tools in a namespace: they run in the CLI,
			// provided every tool inside is one the agent runs itself.
			var ns struct {
				Tools json.RawMessage `json:"tools"`
			}
			_ = json.Unmarshal(t, &ns)
			if len(ns.Tools) > 0 {
				_, innerRemoved, ref := openAITools(fmt.Sprintf("%s[%d].tools", name, i), ns.Tools)
				if ref != nil {
					return nil, nil, ref
				}
				if len(innerRemoved) > 0 {
					return nil, nil, badRequest("%s[%d]: a namespace may hold only tools the agent runs itself", name, i)
				}
			}
			out = append(out, t)
		case slices.Contains(openAIRemovedTools, tool.Type):
			if !slices.Contains(removed, tool.Type) {
				removed = append(removed, tool.Type)
			}
		default:
			return nil, nil, badRequest("%s[%d] has type %q: only tools the agent runs itself (%s) are forwarded; hosted tools run outside the sandbox",
				name, i, tool.Type, strings.Join(openAIClientTools, ", "))
		}
	}
	return mustJSON(out), removed, nil
}

// openAIToolChoice accepts "none", "auto", "required" and a named tool the agent runs
// itself; a choice naming a hosted tool is refused like the tool.
func openAIToolChoice(name string, raw json.RawMessage) error {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s != "none" && s != "auto" && s != "required" {
			return fmt.Errorf("%q must be \"none\", \"auto\", \"required\" or a function", name)
		}
		return nil
	}
	var c struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &c) != nil || (!slices.Contains(openAIClientTools, c.Type) && c.Type != "allowed_tools") {
		return fmt.Errorf("%q of type %q: only tools the agent runs itself are forwarded", name, c.Type)
	}
	return nil
}

// openAIFetched says why a content object of a Chat or Responses conversation is refused:
// an image, file or audio the provider would fetch from a URL, a stored file, or a reference
// to a stored item.
func openAIFetched(obj map[string]any) string {
	if jsonIs(obj, "type", "item_reference") {
		return "an item_reference needs stored state, and the gateway sends store: false"
	}
	iu, _ := jsonField(obj, "image_url")
	switch iu := iu.(type) {
	case string:
		if isRemoteURL(iu) {
			return "an image by URL is fetched by the provider, outside the sandbox"
		}
	case map[string]any:
		if isRemoteURL(jsonString(iu, "url")) {
			return "an image by URL is fetched by the provider, outside the sandbox"
		}
	}
	if _, ok := jsonField(obj, "file_url"); ok {
		return "a file by URL is fetched by the provider, outside the sandbox"
	}
	if _, ok := jsonField(obj, "file_id"); ok {
		return "a file_id names a file stored with the provider, which outlives the job"
	}
	return ""
}

// openAICommon checks what both APIs' requests share: the tools (hosted search taken out, an
// emptied list dropped with its choice), content the provider would fetch in the conversation
// field conv, and it reads the model and stream flag.
func openAICommon(params map[string]json.RawMessage, conv string, model *string, stream *bool) (tools int, removed []string, ref *Refusal) {
	if raw, ok := params["tools"]; ok {
		var kept json.RawMessage
		if kept, removed, ref = openAITools("tools", raw); ref != nil {
			return 0, nil, ref
		}
		params["tools"] = kept
		var n []json.RawMessage
		_ = json.Unmarshal(kept, &n)
		if tools = len(n); tools == 0 {
			delete(params, "tools")
			delete(params, "tool_choice")
			delete(params, "parallel_tool_calls")
		}
	}
	if err := fetchedContent(params[conv], conv, openAIFetched); err != nil {
		return 0, nil, badRequest("%v", err)
	}
	if raw, ok := params["model"]; ok {
		_ = json.Unmarshal(raw, model)
	}
	if raw, ok := params["stream"]; ok {
		_ = json.Unmarshal(raw, stream)
	}
	return tools, removed, nil
}
