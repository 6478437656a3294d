package agenttest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
)

// NewAnthropic starts a scripted Anthropic Messages server: POST /v1/messages (a query such
// as Claude Code's ?beta=true is ignored) is answered with answer(n, request), like NewFunc;
// POST /v1/messages/count_tokens is answered by the server with an estimate and not counted.
// Its URL is the base URL (ANTHROPIC_BASE_URL has no /v1).
func NewAnthropic(t testing.TB, answer func(n int, r Request) Reply, opts ...Option) *Server {
	return newRouted(t, answer, anthropicRoute, opts)
}

func anthropicRoute(r *http.Request, body []byte) (endpoint, Reply) {
	if r.Method != http.MethodPost {
		return unknownEndpoint, Reply{}
	}
	switch r.URL.Path {
	case "/v1/messages":
		return scriptedEndpoint, Reply{}
	case "/v1/messages/count_tokens":
		return directEndpoint, jsonReply(map[string]any{"input_tokens": countTokens(body)})
	}
	return unknownEndpoint, Reply{}
}

// StatusOverloaded is the status Anthropic answers with when it is overloaded; net/http has
// no name for it.
const StatusOverloaded = 529

// anthropicErrorType is the error type Anthropic's API gives a status.
func anthropicErrorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case StatusOverloaded:
		return "overloaded_error"
	}
	return "api_error"
}

// AnthropicFail is an error answer in Anthropic's error format, e.g. 529 overloaded_error or
// 429 rate_limit_error, with optional header pairs. A 429 carries retry-after: 1 unless the
// pairs set one (the API always sends it; "retry-after-ms" makes a client wait less).
func AnthropicFail(status int, headerPairs ...string) Reply {
	h := map[string]string{"Content-Type": "application/json", "request-id": "req_scripted"}
	if status == http.StatusTooManyRequests {
		h["retry-after"] = "1"
	}
	for i := 0; i+1 < len(headerPairs); i += 2 {
		h[headerPairs[i]] = headerPairs[i+1]
	}
	typ := anthropicErrorType(status)
	body, _ := json.Marshal(map[string]any{"type": "error", "request_id": "req_scripted",
		"error": map[string]any{"type": typ, "message": "scripted " + strconv.Itoa(status)}})
	return Reply{Status: status, Header: h, Body: string(body)}
}

// anthropicUsage is t's usage in Anthropic's accounting, where input_tokens leaves out
// the cached tokens that cache_read_input_tokens and cache_creation_input_tokens count.
func anthropicUsage(u Tokens, output int64) map[string]any {
	return map[string]any{
		"input_tokens":                max(u.Prompt-u.CacheRead-u.CacheWrite, 0),
		"cache_creation_input_tokens": u.CacheWrite,
		"cache_read_input_tokens":     u.CacheRead,
		"output_tokens":               output,
	}
}

// anthropicSignature stands in for the signature a thinking block carries; clients send it
// back unread.
const anthropicSignature = "c2NyaXB0ZWQtdGhpbmtpbmc="

// anthropicBlocks are t's content blocks, complete, in the order the API sends them:
// thinking, text, tool uses.
func anthropicBlocks(t Turn) ([]map[string]any, error) {
	var blocks []map[string]any
	if t.Thinking != "" {
		blocks = append(blocks, map[string]any{"type": "thinking", "thinking": t.Thinking,
			"signature": anthropicSignature})
	}
	if t.Text != "" {
		blocks = append(blocks, map[string]any{"type": "text", "text": t.Text})
	}
	for i, c := range t.Calls {
		args, err := argsObject(c)
		if err != nil {
			return nil, err
		}
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": callID(c, "toolu_scripted_", i),
			"name": c.Name, "input": args})
	}
	return blocks, nil
}

func anthropicStop(t Turn) string {
	switch {
	case t.Refusal:
		return "refusal"
	case len(t.Calls) > 0:
		return "tool_use"
	}
	return "end_turn"
}

func callID(c Call, prefix string, i int) string {
	if c.ID != "" {
		return c.ID
	}
	return prefix + strconv.Itoa(i)
}

// AnthropicTurn renders t as an Anthropic Messages answer: a message object, or when stream
// is set the event stream (message_start, content_block_start/delta/stop per block,
// message_delta, message_stop).
func AnthropicTurn(t Turn, stream bool) Reply {
	blocks, err := anthropicBlocks(t)
	if err != nil {
		return scriptError(err.Error())
	}
	if !stream {
		if blocks == nil {
			blocks = []map[string]any{}
		}
		return jsonReply(map[string]any{"id": "msg_scripted", "type": "message", "role": "assistant",
			"model": scriptedModel, "content": blocks, "stop_reason": anthropicStop(t),
			"stop_sequence": nil, "usage": anthropicUsage(t.Usage, t.Usage.Completion)})
	}
	var s sse
	// The prompt's tokens arrive at the start, with the one output token generated so far.
	s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_scripted", "type": "message", "role": "assistant", "model": scriptedModel,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": anthropicUsage(t.Usage, 1)}})
	s.event("ping", map[string]any{"type": "ping"})
	for i, b := range blocks {
		start := map[string]any{}
		var deltas []map[string]any
		switch b["type"] {
		case "thinking":
			start = map[string]any{"type": "thinking", "thinking": "", "signature": ""}
			for _, p := range pieces(t.Thinking, 3) {
				deltas = append(deltas, map[string]any{"type": "thinking_delta", "thinking": p})
			}
			deltas = append(deltas, map[string]any{"type": "signature_delta", "signature": anthropicSignature})
		case "text":
			start = map[string]any{"type": "text", "text": ""}
			for _, p := range pieces(t.Text, 3) {
				deltas = append(deltas, map[string]any{"type": "text_delta", "text": p})
			}
		case "tool_use":
			start = map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}
			// The API opens a tool's input with an empty piece, then sends the JSON in parts.
			deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": ""})
			for _, p := range pieces(string(b["input"].(json.RawMessage)), 3) {
				deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": p})
			}
		}
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": start})
		for _, d := range deltas {
			s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d})
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	// message_delta's output count is the cumulative total, not an increment.
	s.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": anthropicStop(t), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": t.Usage.Completion}})
	s.event("message_stop", map[string]any{"type": "message_stop"})
	return s.reply()
}
