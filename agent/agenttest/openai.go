package agenttest

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// NewOpenAI starts a scripted OpenAI server that, unlike NewFunc's, also serves the Responses
// API: POST /v1/chat/completions and POST /v1/responses are answered with answer(n, request).
// A WebSocket upgrade of /v1/responses (Codex tries one first) is refused with 426, which
// sends the client to plain HTTP, and is not counted. BaseURL is the base URL.
func NewOpenAI(t testing.TB, answer func(n int, r Request) Reply, opts ...Option) *Server {
	return newRouted(t, answer, openAIRoute, opts)
}

func openAIRoute(r *http.Request, _ []byte) (endpoint, Reply) {
	switch {
	case r.URL.Path == "/v1/responses" && strings.EqualFold(r.Header.Get("Upgrade"), "websocket"):
		return directEndpoint, Reply{Status: http.StatusUpgradeRequired, Body: "websocket not supported"}
	case r.Method != http.MethodPost:
		return unknownEndpoint, Reply{}
	case r.URL.Path == "/v1/chat/completions", r.URL.Path == "/v1/responses":
		return scriptedEndpoint, Reply{}
	}
	return unknownEndpoint, Reply{}
}

// chatUsage is u in Chat Completions' accounting, where cached and reasoning tokens are
// details of the prompt and completion counts.
func chatUsage(u Tokens) map[string]any {
	return map[string]any{
		"prompt_tokens": u.Prompt, "completion_tokens": u.Completion,
		"total_tokens":              u.Prompt + u.Completion,
		"prompt_tokens_details":     map[string]any{"cached_tokens": u.CacheRead},
		"completion_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning},
	}
}

func chatFinish(t Turn) string {
	if len(t.Calls) > 0 && !t.Refusal {
		return "tool_calls"
	}
	return "stop"
}

// refusalText is what a refusing model says when the turn scripts no text.
func refusalText(t Turn) string {
	if t.Text != "" {
		return t.Text
	}
	return "I can't help with that."
}

// OpenAITurn renders t as a Chat Completions answer: a chat.completion, or when stream is set
// chat.completion.chunk events ending with a usage chunk (as with stream_options
// include_usage) and [DONE]. Thinking goes in reasoning_content, the field vLLM, DeepSeek and
// other OpenAI-compatible servers use; a refusal in the message's refusal field.
func OpenAITurn(t Turn, stream bool) Reply {
	if !stream {
		msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
		switch {
		case t.Refusal:
			msg["refusal"] = refusalText(t)
		case t.Text != "":
			msg["content"] = t.Text
		}
		if t.Thinking != "" {
			msg["reasoning_content"] = t.Thinking
		}
		if len(t.Calls) > 0 && !t.Refusal {
			tcs := make([]map[string]any, len(t.Calls))
			for i, c := range t.Calls {
				tcs[i] = map[string]any{"id": callID(c, "call_scripted_", i), "type": "function",
					"function": map[string]any{"name": c.Name, "arguments": c.Arguments}}
			}
			msg["tool_calls"] = tcs
		}
		return jsonReply(map[string]any{"id": "chatcmpl-scripted", "object": "chat.completion",
			"created": 1, "model": scriptedModel, "usage": chatUsage(t.Usage),
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": chatFinish(t)}}})
	}
	var s sse
	chunk := func(delta map[string]any, finish any) {
		s.event("", map[string]any{"id": "chatcmpl-scripted", "object": "chat.completion.chunk",
			"created": 1, "model": scriptedModel,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	for _, p := range pieces(t.Thinking, 3) {
		chunk(map[string]any{"reasoning_content": p}, nil)
	}
	if t.Refusal {
		for _, p := range pieces(refusalText(t), 3) {
			chunk(map[string]any{"refusal": p}, nil)
		}
	} else {
		for _, p := range pieces(t.Text, 3) {
			chunk(map[string]any{"content": p}, nil)
		}
		for i, c := range t.Calls {
			// The first chunk of a call names it; its arguments follow in pieces.
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": callID(c, "call_scripted_", i),
				"type": "function", "function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil)
			for _, p := range pieces(c.Arguments, 3) {
				chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i,
					"function": map[string]any{"arguments": p}}}}, nil)
			}
		}
	}
	chunk(map[string]any{}, chatFinish(t))
	s.event("", map[string]any{"id": "chatcmpl-scripted", "object": "chat.completion.chunk",
		"created": 1, "model": scriptedModel, "choices": []any{}, "usage": chatUsage(t.Usage)})
	s.raw("[DONE]")
	return s.reply()
}

// responsesUsage is u in the Responses API's accounting.
func responsesUsage(u Tokens) map[string]any {
	return map[string]any{
		"input_tokens": u.Prompt, "output_tokens": u.Completion,
		"total_tokens":          u.Prompt + u.Completion,
		"input_tokens_details":  map[string]any{"cached_tokens": u.CacheRead},
		"output_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning},
	}
}

// responsesItems are t's output items, complete: reasoning (its summary), the message, and
// the function calls.
func responsesItems(t Turn) []map[string]any {
	var items []map[string]any
	if t.Thinking != "" {
		items = append(items, map[string]any{"type": "reasoning", "id": "rs_scripted",
			"summary": []any{map[string]any{"type": "summary_text", "text": t.Thinking}}})
	}
	var content map[string]any
	switch {
	case t.Refusal:
		content = map[string]any{"type": "refusal", "refusal": refusalText(t)}
	case t.Text != "":
		content = map[string]any{"type": "output_text", "text": t.Text, "annotations": []any{}, "logprobs": []any{}}
	}
	if content != nil {
		items = append(items, map[string]any{"type": "message", "id": "msg_scripted", "status": "completed",
			"role": "assistant", "content": []any{content}})
	}
	if t.Refusal {
		return items
	}
	for i, c := range t.Calls {
		items = append(items, map[string]any{"type": "function_call", "id": "fc_scripted_" + strconv.Itoa(i),
			"call_id": callID(c, "call_scripted_", i), "name": c.Name, "arguments": c.Arguments,
			"status": "completed"})
	}
	return items
}

// responseObject is a Response with the given status, output and usage (nil before the end).
func responseObject(status string, output []map[string]any, usage map[string]any) map[string]any {
	if output == nil {
		output = []map[string]any{}
	}
	return map[string]any{"id": "resp_scripted", "object": "response", "created_at": 1,
		"status": status, "model": scriptedModel, "output": output, "usage": usage,
		"error": nil, "incomplete_details": nil, "instructions": nil, "metadata": map[string]any{},
		"parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{},
		"temperature": 1, "top_p": 1, "text": map[string]any{"format": map[string]any{"type": "text"}}}
}

// ResponsesTurn renders t as a Responses API answer: a response object, or when stream is set
// the event stream Codex reads (response.created, per item output_item.added, its deltas and
// output_item.done, then response.completed with the whole response and its usage).
func ResponsesTurn(t Turn, stream bool) Reply {
	items := responsesItems(t)
	done := responseObject("completed", items, responsesUsage(t.Usage))
	if !stream {
		return jsonReply(done)
	}
	var s sse
	seq := 0
	emit := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		s.event(typ, fields)
	}
	emit("response.created", map[string]any{"response": responseObject("in_progress", nil, nil)})
	emit("response.in_progress", map[string]any{"response": responseObject("in_progress", nil, nil)})
	for i, item := range items {
		id := item["id"]
		at := func(m map[string]any) map[string]any {
			m["item_id"], m["output_index"] = id, i
			return m
		}
		switch item["type"] {
		case "reasoning":
			emit("response.output_item.added", map[string]any{"output_index": i,
				"item": map[string]any{"type": "reasoning", "id": id, "summary": []any{}}})
			emit("response.reasoning_summary_part.added", at(map[string]any{"summary_index": 0,
				"part": map[string]any{"type": "summary_text", "text": ""}}))
			for _, p := range pieces(t.Thinking, 3) {
				emit("response.reasoning_summary_text.delta", at(map[string]any{"summary_index": 0, "delta": p}))
			}
			emit("response.reasoning_summary_text.done", at(map[string]any{"summary_index": 0, "text": t.Thinking}))
			emit("response.reasoning_summary_part.done", at(map[string]any{"summary_index": 0,
				"part": map[string]any{"type": "summary_text", "text": t.Thinking}}))
		case "message":
			part := item["content"].([]any)[0].(map[string]any)
			emit("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{
				"type": "message", "id": id, "status": "in_progress", "role": "assistant", "content": []any{}}})
			if part["type"] == "refusal" {
				emit("response.content_part.added", at(map[string]any{"content_index": 0,
					"part": map[string]any{"type": "refusal", "refusal": ""}}))
				for _, p := range pieces(part["refusal"].(string), 3) {
					emit("response.refusal.delta", at(map[string]any{"content_index": 0, "delta": p}))
				}
				emit("response.refusal.done", at(map[string]any{"content_index": 0, "refusal": part["refusal"]}))
			} else {
				emit("response.content_part.added", at(map[string]any{"content_index": 0,
					"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}, "logprobs": []any{}}}))
				for _, p := range pieces(t.Text, 3) {
					emit("response.output_text.delta", at(map[string]any{"content_index": 0, "delta": p, "logprobs": []any{}}))
				}
				emit("response.output_text.done", at(map[string]any{"content_index": 0, "text": t.Text, "logprobs": []any{}}))
			}
			emit("response.content_part.done", at(map[string]any{"content_index": 0, "part": part}))
		case "function_call":
			args := item["arguments"].(string)
			emit("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{
				"type": "function_call", "id": id, "call_id": item["call_id"], "name": item["name"],
				"arguments": "", "status": "in_progress"}})
			for _, p := range pieces(args, 3) {
				emit("response.function_call_arguments.delta", at(map[string]any{"delta": p}))
			}
			emit("response.function_call_arguments.done", at(map[string]any{"name": item["name"], "arguments": args}))
		}
		emit("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	emit("response.completed", map[string]any{"response": done})
	return s.reply()
}
