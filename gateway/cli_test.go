package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// cliGolden is a request of a real agent CLI, reconstructed from its source at a named commit
// (testdata/cli/README.md says which and how).
type cliGolden struct {
	CLI     string            `json:"cli"`
	Version string            `json:"version"`
	Commit  string            `json:"commit"`
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`
}

// loadGolden reads testdata/cli/name.
func loadGolden(t testing.TB, name string) cliGolden {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "cli", name))
	if err != nil {
		t.Fatal(err)
	}
	var g cliGolden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(g.Commit) != 40 || g.Method == "" || g.Path == "" || len(g.Body) == 0 {
		t.Fatalf("%s: a golden names its commit, method, path and body", name)
	}
	return g
}

// captureUpstream records every request's path, headers and body, and answers with answer
// (a JSON body with usage).
type captureUpstream struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []captured
}

type captured struct {
	path   string
	header http.Header
	body   map[string]any
}

func newCaptureUpstream(t testing.TB, answer func(path string) (contentType, body string)) *captureUpstream {
	t.Helper()
	u := &captureUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		u.mu.Lock()
		u.reqs = append(u.reqs, captured{path: r.URL.RequestURI(), header: r.Header.Clone(), body: body})
		u.mu.Unlock()
		ct, out := answer(r.URL.Path)
		w.Header().Set("Content-Type", ct)
		_, _ = io.WriteString(w, out)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *captureUpstream) last(t *testing.T) captured {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.reqs) == 0 {
		t.Fatal("nothing reached the upstream")
	}
	return u.reqs[len(u.reqs)-1]
}

// replay sends a golden request through the gateway in session s, its token where the CLI
// puts its key.
func (f gatewayFixture) replay(t *testing.T, g cliGolden, s *Session) gwResponse {
	t.Helper()
	var hdr []string
	for k, v := range g.Headers {
		hdr = append(hdr, k, strings.ReplaceAll(v, "TOKEN", s.Token()))
	}
	return f.do(t, g.Method, g.Path, "", string(g.Body), hdr...)
}

// openAIAnswer answers every OpenAI route with usage, streamed when asked.
func openAIAnswer(path string) (string, string) {
	switch {
	case strings.HasSuffix(path, "/responses/compact"):
		// The compaction endpoint answers with output items; whether it reports usage is not
		// documented, so this one does not.
		return "application/json", `{"output":[{"type":"compaction","encrypted_content":"opaque"}]}`
	case strings.HasSuffix(path, "/responses"):
		return "text/event-stream", "event: response.completed\ndata: " +
			`{"type":"response.completed","response":{"model":"up","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}],"usage":{"input_tokens":40,"output_tokens":2,"input_tokens_details":{"cached_tokens":30}}}}` + "\n\n"
	}
	return "text/event-stream", `data: {"choices":[{"index":0,"delta":{"content":"done"}}]}` + "\n\n" +
		`data: {"choices":[],"usage":{"prompt_tokens":40,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":30}}}` + "\n\ndata: [DONE]\n\n"
}

// TestOpenAICLIGoldens replays what Codex (of 2025 and of now), opencode, crush and goose send,
// through the real handler: each is accepted, and what reaches the upstream is checked field
// by field: the configured model, the real key, store false on the Responses API, what
// current Codex always sends but no upstream needs dropped, its default web_search tool taken
// out and named in the trajectory.
func TestOpenAICLIGoldens(t *testing.T) {
	tests := []struct {
		file        string
		dropped     []string // body fields that must not reach the upstream
		kept        []string // body fields that must
		removedTool string   // a hosted tool taken out of the request
		tools       int      // tools that reach the upstream
	}{
		{file: "codex-2025.responses.json", dropped: []string{"service_tier", "client_metadata"},
			kept: []string{"instructions", "input", "tools", "reasoning", "include", "prompt_cache_key"}, tools: 3},
		{file: "codex-current.responses.json", dropped: []string{"service_tier", "client_metadata", "stream_options"},
			kept: []string{"instructions", "input", "tools", "reasoning", "include", "prompt_cache_key", "text"}, removedTool: "web_search", tools: 3},
		{file: "codex-current.compact.json", dropped: []string{"service_tier", "store", "stream"},
			kept: []string{"instructions", "input", "tools", "reasoning"}, tools: -1},
		{file: "opencode.chat.json", kept: []string{"messages", "tools", "tool_choice", "max_tokens"}, tools: -1},
		{file: "crush.chat.json", kept: []string{"messages", "tools", "tool_choice", "max_tokens"}, tools: -1},
		{file: "goose.chat.json", kept: []string{"messages", "tools", "temperature", "max_tokens"}, tools: -1},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			g := loadGolden(t, tt.file)
			up := newCaptureUpstream(t, openAIAnswer)
			f := serveGateway(t, up.URL+"/v1", func(c *Config) { c.Name = g.CLI })
			s, err := f.g.Open("job", Budget{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := f.replay(t, g, s)
			if r.Status != http.StatusOK {
				t.Fatalf("%s %s of %s %s (commit %s): %d %s", g.Method, g.Path, g.CLI, g.Version, g.Commit[:8], r.Status, r.Body)
			}
			got := up.last(t)
			if want := strings.TrimPrefix(g.Path, "/v1"); got.path != "/v1"+want {
				t.Errorf("upstream path %s, want /v1%s", got.path, want)
			}
			if got.header.Get("Authorization") != "Bearer "+realKey {
				t.Errorf("upstream Authorization %q, want the real key", got.header.Get("Authorization"))
			}
			for k, v := range got.header {
				if strings.Contains(strings.Join(v, ","), s.Token()) {
					t.Errorf("the session's token reached the upstream in %s", k)
				}
			}
			if got.body["model"] != "gw-model" {
				t.Errorf("model %v, want the configured gw-model", got.body["model"])
			}
			for _, k := range tt.dropped {
				if _, ok := got.body[k]; ok {
					t.Errorf("%q reached the upstream", k)
				}
			}
			for _, k := range tt.kept {
				if _, ok := got.body[k]; !ok {
					t.Errorf("%q did not reach the upstream", k)
				}
			}
			if strings.HasSuffix(g.Path, "/responses") && got.body["store"] != false {
				t.Errorf("store %v, want false", got.body["store"])
			}
			if tools, _ := got.body["tools"].([]any); tt.tools >= 0 && len(tools) != tt.tools {
				t.Errorf("%d tools reached the upstream, want %d", len(tools), tt.tools)
			}
			for _, tool := range asList(got.body["tools"]) {
				if typ := tool["type"]; typ != "function" && typ != "custom" {
					t.Errorf("a %v tool reached the upstream", typ)
				}
			}
			traj := s.Trajectory()
			removed, _ := traj.Extra[extraRemoved].([]string)
			if tt.removedTool != "" && (len(removed) != 1 || removed[0] != tt.removedTool) {
				t.Errorf("trajectory extra %v, want %s named as removed", traj.Extra, tt.removedTool)
			}
			u := s.Usage()
			if strings.HasSuffix(g.Path, "/compact") {
				// A compaction without usage is metered at its reservation, never at zero, and
				// is no turn.
				if u.Total() == 0 || s.Turns() != 0 {
					t.Errorf("compaction: usage %+v, turns %d; want its reservation metered and no turn", u, s.Turns())
				}
				return
			}
			if u.PromptTokens != 40 || u.CompletionTokens != 2 || u.CacheReadTokens != 30 || s.Turns() != 1 {
				t.Errorf("usage %+v, turns %d; want 40 prompt (30 from the cache) + 2, one turn", u, s.Turns())
			}
		})
	}
}

// asList reads a JSON array of objects.
func asList(v any) []map[string]any {
	var out []map[string]any
	l, _ := v.([]any)
	for _, e := range l {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// TestGatewayServiceTierIsTheOperators: a CLI's service_tier (Codex's fast mode bills at the
// priority rate) never reaches the upstream; the agent's config may pin one.
func TestGatewayServiceTierIsTheOperators(t *testing.T) {
	for _, tier := range []string{"", "flex"} {
		up := newCaptureUpstream(t, openAIAnswer)
		f := serveGateway(t, up.URL+"/v1", func(c *Config) { c.ServiceTier = tier })
		s, err := f.g.Open("job", Budget{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/v1/responses", "/v1/chat/completions"} {
			body := `{"input":"hi","stream":true,"service_tier":"priority"}`
			if strings.HasSuffix(path, "completions") {
				body = `{"messages":[{"role":"user","content":"hi"}],"stream":true,"service_tier":"priority"}`
			}
			if r := f.do(t, http.MethodPost, path, s.Token(), body); r.Status != http.StatusOK {
				t.Fatalf("%s: %d %s", path, r.Status, r.Body)
			}
			got, ok := up.last(t).body["service_tier"]
			if tier == "" && ok || tier != "" && got != tier {
				t.Errorf("config tier %q, %s: upstream service_tier %v (sent: %v)", tier, path, got, ok)
			}
		}
	}
}

// TestGatewayRefusesSmuggledKeys: the review's duplicate-key attack. A tool whose "type"
// appears twice (or once more in another case, which encoding/json folds onto the same
// struct field) showed the allow-list one type and the upstream another; such bodies are
// refused before any field is read.
func TestGatewayRefusesSmuggledKeys(t *testing.T) {
	up := newCaptureUpstream(t, openAIAnswer)
	f := serveGateway(t, up.URL+"/v1", nil)
	s, err := f.g.Open("job", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"duplicate type":         `{"input":"hi","tools":[{"type":"mcp","server_url":"https://x","type":"function","name":"f"}]}`,
		"duplicate in case":      `{"input":"hi","tools":[{"type":"mcp","server_url":"https://x","TYPE":"function","name":"f"}]}`,
		"escaped duplicate":      `{"input":"hi","tools":[{"typ\u0065":"mcp","server_url":"https://x","type":"function","name":"f"}]}`,
		"duplicate model":        `{"input":"hi","model":"a","model":"b"}`,
		"nested too deep":        `{"input":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`,
		"trailing second object": `{"input":"hi"}{"input":"again"}`,
	} {
		t.Run(name, func(t *testing.T) {
			r := f.do(t, http.MethodPost, "/v1/responses", s.Token(), body)
			var e struct {
				Error struct{ Code, Message string }
			}
			_ = json.Unmarshal([]byte(r.Body), &e)
			if r.Status != http.StatusBadRequest || e.Error.Code != "invalid_json" {
				t.Errorf("got %d %s, want 400 invalid_json", r.Status, r.Body)
			}
		})
	}
	if len(up.reqs) != 0 {
		t.Errorf("%d smuggled requests reached the upstream", len(up.reqs))
	}
}

// TestGatewayRoutesTheConfiguredProtocolFirst: /v1/models/{id} is OpenAI's model lookup and,
// with a method after the id, Gemini's generateContent under the v1 prefix; each agent gets
// its own protocol's meaning.
func TestGatewayRoutesTheConfiguredProtocolFirst(t *testing.T) {
	up := newCaptureUpstream(t, func(string) (string, string) {
		return "application/json", `{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":1,"totalTokenCount":6}}`
	})
	f := serveGateway(t, up.URL, func(c *Config) { c.API = APIGemini })
	s, err := f.g.Open("job", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := f.do(t, http.MethodPost, "/v1/models/gemini-x:generateContent", "", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, "x-goog-api-key", s.Token())
	if r.Status != http.StatusOK || up.last(t).path != "/v1beta/models/gw-model:generateContent" {
		t.Errorf("gemini under /v1: %d %s, upstream %s", r.Status, r.Body, up.last(t).path)
	}
	o := serveGateway(t, up.URL+"/v1", nil)
	so, err := o.g.Open("job", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := o.do(t, http.MethodGet, "/v1/models/gw-model", so.Token(), ""); r.Status != http.StatusOK || !strings.Contains(r.Body, `"id":"gw-model"`) {
		t.Errorf("openai model lookup: %d %s", r.Status, r.Body)
	}
}
