package agenttest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// NewGemini starts a scripted Gemini API server: POST /v1beta/models/{model}:generateContent
// and :streamGenerateContent?alt=sse are answered with answer(n, request), like NewFunc;
// :countTokens is answered by the server with an estimate and not counted. A stream request
// without alt=sse (a JSON-array stream, which no current client asks for) fails the test.
// Its URL is the base URL (GOOGLE_GEMINI_BASE_URL has no version path).
func NewGemini(t testing.TB, answer func(n int, r Request) Reply, opts ...Option) *Server {
	return newRouted(t, answer, geminiRoute, opts)
}

func geminiRoute(r *http.Request, body []byte) (endpoint, Reply) {
	p := r.URL.Path
	if r.Method != http.MethodPost || !strings.HasPrefix(p, "/v1beta/models/") {
		return unknownEndpoint, Reply{}
	}
	switch {
	case strings.HasSuffix(p, ":generateContent"):
		return scriptedEndpoint, Reply{}
	case strings.HasSuffix(p, ":streamGenerateContent"):
		if r.URL.Query().Get("alt") != "sse" {
			return unknownEndpoint, Reply{}
		}
		return scriptedEndpoint, Reply{}
	case strings.HasSuffix(p, ":countTokens"):
		return directEndpoint, jsonReply(map[string]any{"totalTokens": countTokens(body)})
	}
	return unknownEndpoint, Reply{}
}

// geminiStatus is the canonical status name Google's APIs give an HTTP status.
func geminiStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusNotImplemented:
		return "UNIMPLEMENTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	return "INTERNAL"
}

// GeminiFail is an error answer in Google's error format, e.g. 429 RESOURCE_EXHAUSTED or
// 503 UNAVAILABLE, with optional header pairs.
func GeminiFail(status int, headerPairs ...string) Reply {
	h := map[string]string{"Content-Type": "application/json; charset=UTF-8"}
	for i := 0; i+1 < len(headerPairs); i += 2 {
		h[headerPairs[i]] = headerPairs[i+1]
	}
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"code": status,
		"message": "scripted " + strconv.Itoa(status), "status": geminiStatus(status)}})
	return Reply{Status: status, Header: h, Body: string(body)}
}

// geminiSignature stands in for the thought signature Gemini puts on a turn's first function
// call, which clients send back unread.
const geminiSignature = "c2NyaXB0ZWQtdGhvdWdodA=="

// geminiUsage is u in Gemini's accounting: candidatesTokenCount leaves out the thoughts that
// thoughtsTokenCount counts, and cachedContentTokenCount is part of promptTokenCount.
func geminiUsage(u Tokens) map[string]any {
	m := map[string]any{
		"promptTokenCount":     u.Prompt,
		"candidatesTokenCount": u.Completion - u.Reasoning,
		"totalTokenCount":      u.Prompt + u.Completion,
	}
	if u.CacheRead > 0 {
		m["cachedContentTokenCount"] = u.CacheRead
	}
	if u.Reasoning > 0 {
		m["thoughtsTokenCount"] = u.Reasoning
	}
	return m
}

// geminiCallParts are t's function calls as parts; the first carries the thought signature.
func geminiCallParts(t Turn) ([]map[string]any, error) {
	var parts []map[string]any
	for i, c := range t.Calls {
		args, err := argsObject(c)
		if err != nil {
			return nil, err
		}
		fc := map[string]any{"name": c.Name, "args": args}
		if c.ID != "" {
			fc["id"] = c.ID
		}
		p := map[string]any{"functionCall": fc}
		if i == 0 {
			p["thoughtSignature"] = geminiSignature
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// geminiChunk is a GenerateContentResponse with one candidate.
func geminiChunk(parts []map[string]any, finish string, usage map[string]any) map[string]any {
	cand := map[string]any{"index": 0}
	if parts != nil {
		cand["content"] = map[string]any{"role": "model", "parts": parts}
	}
	if finish != "" {
		cand["finishReason"] = finish
	}
	if finish == "SAFETY" {
		cand["safetyRatings"] = []any{map[string]any{"category": "HARM_CATEGORY_DANGEROUS_CONTENT",
			"probability": "HIGH", "blocked": true}}
	}
	return map[string]any{"candidates": []any{cand}, "usageMetadata": usage,
		"modelVersion": scriptedModel, "responseId": "scripted-response"}
}

// GeminiTurn renders t as a Gemini generateContent answer: a GenerateContentResponse, or when
// stream is set an SSE stream of them, thoughts and text in several chunks, each with the
// prompt's usage, the last with the finish reason and the totals. A refusal is a SAFETY stop
// without content.
func GeminiTurn(t Turn, stream bool) Reply {
	calls, err := geminiCallParts(t)
	if err != nil {
		return scriptError(err.Error())
	}
	if t.Refusal {
		chunk := geminiChunk(nil, "SAFETY", geminiUsage(Tokens{Prompt: t.Usage.Prompt, CacheRead: t.Usage.CacheRead}))
		if !stream {
			return jsonReply(chunk)
		}
		var s sse
		s.event("", chunk)
		return s.reply()
	}
	if !stream {
		var parts []map[string]any
		if t.Thinking != "" {
			parts = append(parts, map[string]any{"text": t.Thinking, "thought": true})
		}
		if t.Text != "" {
			parts = append(parts, map[string]any{"text": t.Text})
		}
		parts = append(parts, calls...)
		if parts == nil {
			parts = []map[string]any{}
		}
		return jsonReply(geminiChunk(parts, "STOP", geminiUsage(t.Usage)))
	}
	var chunks [][]map[string]any
	for _, p := range pieces(t.Thinking, 2) {
		chunks = append(chunks, []map[string]any{{"text": p, "thought": true}})
	}
	for _, p := range pieces(t.Text, 3) {
		chunks = append(chunks, []map[string]any{{"text": p}})
	}
	if calls != nil {
		chunks = append(chunks, calls)
	}
	if chunks == nil {
		chunks = [][]map[string]any{{{"text": ""}}}
	}
	// Until the last chunk only the prompt is counted.
	partial := map[string]any{"promptTokenCount": t.Usage.Prompt, "totalTokenCount": t.Usage.Prompt}
	var s sse
	for i, parts := range chunks {
		if i == len(chunks)-1 {
			s.event("", geminiChunk(parts, "STOP", geminiUsage(t.Usage)))
		} else {
			s.event("", geminiChunk(parts, "", partial))
		}
	}
	return s.reply()
}
