// Package agenttest is an in-process OpenAI-compatible Chat Completions server that answers
// from a script, for tests and benchmarks of the model client, the built-in agent and the
// judge. It never reaches a real model.
package agenttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
)

// Request is what the server received.
type Request struct {
	Header http.Header
	Path   string
	Body   []byte
}

// Params decodes the request body into a generic map.
func (r Request) Params() map[string]any {
	var m map[string]any
	_ = json.Unmarshal(r.Body, &m)
	return m
}

// Messages are the request's messages, decoded generically.
func (r Request) Messages() []map[string]any {
	raw, _ := r.Params()["messages"].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, m := range raw {
		if mm, ok := m.(map[string]any); ok {
			out = append(out, mm)
		}
	}
	return out
}

// Reply is one scripted answer.
type Reply struct {
	Status int               // 0 = 200
	Header map[string]string // extra response headers
	Body   string            // raw body; see Text, ToolCalls and Fail for the usual ones
	// Block holds the answer until the client gives up (its context ends).
	Block bool
}

// Call is one tool call of a scripted assistant message.
type Call struct {
	ID, Name, Arguments string
}

// Text is a 200 answer with an assistant message without tool calls.
func Text(content string, promptTokens, completionTokens int64) Reply {
	msg := map[string]any{"role": "assistant", "content": content}
	return completion(msg, "stop", promptTokens, completionTokens)
}

// ToolCalls is a 200 answer with an assistant message that calls tools.
func ToolCalls(promptTokens, completionTokens int64, calls ...Call) Reply {
	tcs := make([]map[string]any, len(calls))
	for i, c := range calls {
		tcs[i] = map[string]any{"id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": c.Arguments}}
	}
	msg := map[string]any{"role": "assistant", "content": nil, "tool_calls": tcs}
	return completion(msg, "tool_calls", promptTokens, completionTokens)
}

func completion(msg map[string]any, finish string, prompt, compl int64) Reply {
	body, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion", "created": 1, "model": "test-model",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage": map[string]any{"prompt_tokens": prompt, "completion_tokens": compl,
			"total_tokens": prompt + compl},
	})
	return Reply{Body: string(body), Header: map[string]string{"Content-Type": "application/json"}}
}

// Fail is an error answer in OpenAI's error format, with optional header pairs.
func Fail(status int, headerPairs ...string) Reply {
	h := map[string]string{"Content-Type": "application/json"}
	for i := 0; i+1 < len(headerPairs); i += 2 {
		h[headerPairs[i]] = headerPairs[i+1]
	}
	body, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": "scripted " + strconv.Itoa(status), "type": "test", "code": nil, "param": nil}})
	return Reply{Status: status, Header: h, Body: string(body)}
}

// Server is a scripted Chat Completions server. Its URL plus "/v1" is a base URL.
type Server struct {
	*httptest.Server
	t      testing.TB
	answer func(n int, r Request) Reply

	mu       sync.Mutex
	reqs     []Request
	n        int
	noRecord bool
}

// Option configures a Server.
type Option func(*Server)

// NoRecord keeps the server from recording requests (Requests stays empty, Count still
// counts), so that a benchmark's memory does not grow with b.N.
func NoRecord() Option { return func(s *Server) { s.noRecord = true } }

// NewFunc starts a server that answers the n-th request (0-based) with answer(n, request).
// answer may be called concurrently.
func NewFunc(t testing.TB, answer func(n int, r Request) Reply, opts ...Option) *Server {
	s := &Server{t: t, answer: answer}
	for _, o := range opts {
		o(s)
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// NewScript starts a server that answers the n-th request with replies[n]; a request beyond
// the script fails the test and gets a 400 (which the client does not retry).
func NewScript(t testing.TB, replies ...Reply) *Server {
	return NewFunc(t, func(n int, _ Request) Reply {
		if n >= len(replies) {
			t.Errorf("agenttest: unscripted request %d (script has %d)", n+1, len(replies))
			return Fail(http.StatusBadRequest)
		}
		return replies[n]
	})
}

// BaseURL is the base URL to configure the client with.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Requests are the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Count is how many requests were received.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
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
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		s.t.Errorf("agenttest: unexpected %s %s", r.Method, r.URL.Path)
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	rep := s.answer(n, req)
	if rep.Block {
		<-r.Context().Done()
		return
	}
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

// String describes the server for failure messages.
func (s *Server) String() string {
	return fmt.Sprintf("agenttest server %s (%d requests)", s.URL, s.Count())
}
