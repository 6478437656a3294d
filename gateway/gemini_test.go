package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genai"

	"github.com/skillfleet/skillfleet/activation"
	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/atif"
)

// geminiSeen is one request the fake Gemini API received.
type geminiSeen struct {
	Path, Query string
	Header      http.Header
	Body        []byte
}

// params decodes the body.
func (s geminiSeen) params(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(s.Body, &m); err != nil {
		t.Fatalf("upstream body %s: %v", s.Body, err)
	}
	return m
}

// geminiReply is the fake's answer: a JSON body, or server-sent events when sse is set.
type geminiReply struct {
	status int
	header map[string]string
	body   string
	sse    bool
}

// geminiUpstream is a fake Gemini API that checks requests as generativelanguage.googleapis.com
// does (the key in x-goog-api-key, the method in the path, alt=sse on a stream) and answers
// generateContent and streamGenerateContent from a script, countTokens with a count.
type geminiUpstream struct {
	*httptest.Server
	mu   sync.Mutex
	seen []geminiSeen
}

func newGeminiUpstream(t *testing.T, answer func(n int, r geminiSeen) geminiReply) *geminiUpstream {
	t.Helper()
	u := &geminiUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen := geminiSeen{Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: b}
		u.mu.Lock()
		n := len(u.seen)
		u.seen = append(u.seen, seen)
		u.mu.Unlock()
		fail := func(status int, msg string) {
			w.Header().Set("Content-Type", "application/json; charset=UTF-8")
			w.WriteHeader(status)
			_, _ = w.Write(gemini{}.Error(status, "upstream", msg))
		}
		if r.Header.Get("X-Goog-Api-Key") != realKey {
			fail(http.StatusBadRequest, "API key not valid. Please pass a valid API key.")
			return
		}
		_, method, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1beta/models/"), ":")
		if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1beta/models/") || !ok {
			fail(http.StatusNotFound, "no such method")
			return
		}
		var rep geminiReply
		switch method {
		case "countTokens":
			rep = geminiReply{body: `{"totalTokens": 321}`}
		case "streamGenerateContent":
			if r.URL.RawQuery != "alt=sse" {
				fail(http.StatusBadRequest, "want alt=sse")
				return
			}
			rep = answer(n, seen)
		case "generateContent":
			rep = answer(n, seen)
		default:
			fail(http.StatusNotFound, "no such method")
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		if rep.sse {
			w.Header().Set("Content-Type", "text/event-stream")
		}
		for k, v := range rep.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(max(rep.status, http.StatusOK))
		_, _ = io.WriteString(w, rep.body)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *geminiUpstream) requests() []geminiSeen {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.seen)
}

// geminiChunk is a GenerateContentResponse with one candidate of the given parts.
func geminiChunk(parts []map[string]any, finish string, usage map[string]any) map[string]any {
	cand := map[string]any{"index": 0, "content": map[string]any{"role": "model", "parts": parts}}
	if finish != "" {
		cand["finishReason"] = finish
	}
	r := map[string]any{"candidates": []any{cand}, "modelVersion": "gemini-upstream-001", "responseId": "resp-1"}
	if usage != nil {
		r["usageMetadata"] = usage
	}
	return r
}

// geminiAnswer renders chunks as one JSON answer (their parts merged, the last finish reason
// and usage) or, when stream is set, as Google's SSE (CRLF-separated events).
func geminiAnswer(stream bool, chunks ...map[string]any) geminiReply {
	if stream {
		var b strings.Builder
		for _, c := range chunks {
			fmt.Fprintf(&b, "data: %s\r\n\r\n", mustJSON(c))
		}
		return geminiReply{body: b.String(), sse: true}
	}
	var parts []any
	last := chunks[len(chunks)-1]
	for _, c := range chunks {
		for _, p := range c["candidates"].([]any)[0].(map[string]any)["content"].(map[string]any)["parts"].([]map[string]any) {
			parts = append(parts, p)
		}
	}
	merged := maps.Clone(last)
	cand := map[string]any{"index": 0, "content": map[string]any{"role": "model", "parts": parts}}
	if f, ok := last["candidates"].([]any)[0].(map[string]any)["finishReason"]; ok {
		cand["finishReason"] = f
	}
	merged["candidates"] = []any{cand}
	return geminiReply{body: string(mustJSON(merged))}
}

func text(s string) map[string]any    { return map[string]any{"text": s} }
func thought(s string) map[string]any { return map[string]any{"text": s, "thought": true} }

// geminiFixture is a gateway configured for a Gemini upstream.
func geminiFixture(t *testing.T, answer func(n int, r geminiSeen) geminiReply) (gatewayFixture, *geminiUpstream) {
	t.Helper()
	up := newGeminiUpstream(t, answer)
	f := serveGateway(t, up.URL, func(c *Config) {
		c.API = APIGemini
		c.Price = agent.Price{PromptPerMTok: 1e6, CompletionPerMTok: 2e6, CacheReadPerMTok: 0.25e6}
	})
	return f, up
}

const skillCatalog = "<available_skills><skill><name>release-notes</name><description>Writes release notes.</description></skill></available_skills>"

// TestGeminiSDKConversation drives the gateway with Google's Go SDK through a two-turn,
// tool-using conversation, streamed and not: the first answer thinks and calls activate_skill
// (without an id, as Gemini's calls often come), the CLI sends the skill's body back in a
// functionResponse, the second answer ends the task. The usage is metered exactly (cached
// tokens priced apart, thinking billed as output, tool-use prompt tokens as prompt), the
// trajectory holds both turns with their calls, results, reasoning and tokens, the skill is
// activated at turn 2, and the upstream saw the real key and the configured model, never the
// token.
func TestGeminiSDKConversation(t *testing.T) {
	skillOutput := "---\nname: release-notes\ndescription: Writes release notes.\n---\n" + fixtureBody
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			f, up := geminiFixture(t, func(n int, _ geminiSeen) geminiReply {
				if n == 0 {
					return geminiAnswer(stream,
						geminiChunk([]map[string]any{thought("I should read ")}, "", map[string]any{"promptTokenCount": 120, "totalTokenCount": 120}),
						geminiChunk([]map[string]any{thought("the skill.")}, "", map[string]any{"promptTokenCount": 120, "totalTokenCount": 120}),
						geminiChunk([]map[string]any{{"functionCall": map[string]any{"name": "activate_skill", "args": map[string]any{"name": "release-notes"}},
							"thoughtSignature": "c2lnbmF0dXJl"}}, "STOP",
							map[string]any{"promptTokenCount": 120, "cachedContentTokenCount": 40, "candidatesTokenCount": 10, "thoughtsTokenCount": 6, "totalTokenCount": 136}))
				}
				return geminiAnswer(stream,
					geminiChunk([]map[string]any{text("Release notes ")}, "", map[string]any{"promptTokenCount": 400, "totalTokenCount": 400}),
					geminiChunk([]map[string]any{text("written to CHANGELOG.md.")}, "STOP",
						map[string]any{"promptTokenCount": 400, "cachedContentTokenCount": 100, "toolUsePromptTokenCount": 5, "candidatesTokenCount": 20, "totalTokenCount": 425}))
			})
			s, err := f.g.Open("job", Budget{MaxTokens: 100_000}, activation.New([]activation.Skill{{Name: "release-notes", Body: fixtureBody}}))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			client, err := genai.NewClient(ctx, &genai.ClientConfig{Backend: genai.BackendGeminiAPI, APIKey: s.Token(),
				HTTPClient: f.client, HTTPOptions: genai.HTTPOptions{BaseURL: "http://gateway/"}})
			if err != nil {
				t.Fatal(err)
			}
			cfg := &genai.GenerateContentConfig{
				SystemInstruction: genai.NewContentFromText(skillCatalog, genai.RoleUser),
				Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{
					{Name: "activate_skill", Description: "Activates a skill.", ParametersJsonSchema: map[string]any{
						"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []any{"name"}}},
					{Name: "run_shell_command", Description: "Runs a command.", ParametersJsonSchema: map[string]any{
						"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}}}},
				}}},
				ThinkingConfig: &genai.ThinkingConfig{IncludeThoughts: true, ThinkingBudget: genai.Ptr[int32](1024)},
				Temperature:    genai.Ptr[float32](1),
			}
			// generate sends one turn and returns the answer's text, thoughts and calls as the SDK
			// read them.
			generate := func(contents []*genai.Content) (txt, thoughts string, calls []*genai.FunctionCall) {
				t.Helper()
				var resps []*genai.GenerateContentResponse
				if stream {
					for r, err := range client.Models.GenerateContentStream(ctx, "gemini-2.5-pro", contents, cfg) {
						if err != nil {
							t.Fatalf("stream: %v", err)
						}
						resps = append(resps, r)
					}
					if len(resps) < 2 {
						t.Errorf("the SDK read %d chunks, want each the upstream sent", len(resps))
					}
				} else {
					r, err := client.Models.GenerateContent(ctx, "gemini-2.5-pro", contents, cfg)
					if err != nil {
						t.Fatal(err)
					}
					resps = append(resps, r)
				}
				for _, r := range resps {
					for _, p := range r.Candidates[0].Content.Parts {
						switch {
						case p.FunctionCall != nil:
							calls = append(calls, p.FunctionCall)
						case p.Thought:
							thoughts += p.Text
						default:
							txt += p.Text
						}
					}
				}
				return txt, thoughts, calls
			}

			user := genai.NewContentFromText("Write the release notes.", genai.RoleUser)
			_, thoughts, calls := generate([]*genai.Content{user})
			if thoughts != "I should read the skill." || len(calls) != 1 || calls[0].Name != "activate_skill" || calls[0].Args["name"] != "release-notes" || calls[0].ID != "" {
				t.Fatalf("first answer: thoughts %q, calls %+v", thoughts, calls)
			}
			if got := s.Activations(); len(got) != 0 {
				t.Fatalf("activated by the catalog alone: %v", got)
			}
			model := &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
				{Text: thoughts, Thought: true},
				{FunctionCall: calls[0], ThoughtSignature: []byte("signature")},
			}}
			result := genai.NewContentFromFunctionResponse("activate_skill", map[string]any{"output": skillOutput}, genai.RoleUser)
			txt, _, _ := generate([]*genai.Content{user, model, result})
			if txt != "Release notes written to CHANGELOG.md." {
				t.Fatalf("second answer %q", txt)
			}

			// Metered: prompt 120 + (400 + 5 tool-use), 140 of it cached; output 10 + 6 thinking + 20.
			want := agent.Usage{PromptTokens: 525, CompletionTokens: 36, CacheReadTokens: 140}
			want.Cost = float64(525-140) + 140*0.25 + 36*2
			if got := s.Usage(); got != want {
				t.Errorf("usage %+v, want %+v", got, want)
			}
			if s.Requests() != 2 || s.Turns() != 2 {
				t.Errorf("%d requests, %d turns; want 2 and 2", s.Requests(), s.Turns())
			}
			if got, want := s.Activations(), []activation.Activation{{Skill: "release-notes", Turn: 2}}; !slices.Equal(got, want) {
				t.Errorf("activations %v, want %v", got, want)
			}

			reqs := up.requests()
			if len(reqs) != 2 {
				t.Fatalf("upstream got %d requests, want 2", len(reqs))
			}
			for i, r := range reqs {
				wantPath, wantQuery := "/v1beta/models/gw-model:generateContent", ""
				if stream {
					wantPath, wantQuery = "/v1beta/models/gw-model:streamGenerateContent", "alt=sse"
				}
				if r.Path != wantPath || r.Query != wantQuery {
					t.Errorf("request %d: upstream %s?%s, want %s?%s", i+1, r.Path, r.Query, wantPath, wantQuery)
				}
				if !strings.HasPrefix(r.Header.Get("X-Goog-Api-Client"), "google-genai-sdk/") {
					t.Errorf("request %d: x-goog-api-client %q not forwarded", i+1, r.Header.Get("X-Goog-Api-Client"))
				}
				if strings.Contains(fmt.Sprint(r.Header)+r.Query+string(r.Body), s.Token()) {
					t.Errorf("request %d: the job token reached the upstream", i+1)
				}
				p := r.params(t)
				gc, _ := p["generationConfig"].(map[string]any)
				tc, _ := gc["thinkingConfig"].(map[string]any)
				if _, ok := p["model"]; ok || gc["maxOutputTokens"] != float64(DefaultMaxOutputTokens) || gc["temperature"] != 1.0 || tc["thinkingBudget"] != 1024.0 || tc["includeThoughts"] != true {
					t.Errorf("request %d: upstream body %s: want no model, maxOutputTokens %d (the default of a model the table does not know), the SDK's generationConfig", i+1, r.Body, DefaultMaxOutputTokens)
				}
			}
			if n := len(reqs[1].params(t)["contents"].([]any)); n != 3 {
				t.Errorf("second request: %d contents upstream, want 3", n)
			}

			tr := s.Trajectory()
			if len(tr.Steps) != 4 {
				t.Fatalf("trajectory has %d steps, want system, user and two agent steps: %+v", len(tr.Steps), tr.Steps)
			}
			sys, usr, call, last := tr.Steps[0], tr.Steps[1], tr.Steps[2], tr.Steps[3]
			if sys.Source != atif.SourceSystem || sys.Message != skillCatalog || usr.Source != atif.SourceUser || usr.Message != "Write the release notes." {
				t.Errorf("first steps %+v, %+v", sys, usr)
			}
			// The call had no id: a synthetic one, and the response matched to it by name.
			if call.Source != atif.SourceAgent || call.ReasoningContent != "I should read the skill." || len(call.ToolCalls) != 1 ||
				call.ToolCalls[0].ToolCallID != "fc-1-1" || call.ToolCalls[0].FunctionName != "activate_skill" ||
				string(call.ToolCalls[0].Arguments) != `{"name":"release-notes"}` {
				t.Errorf("call step %+v", call)
			}
			if o := call.Observation; o == nil || len(o.Results) != 1 || o.Results[0].SourceCallID != "fc-1-1" || o.Results[0].Content != skillOutput {
				t.Errorf("call step's observation %+v, want the skill's output for fc-1-1", o)
			}
			if m := call.Metrics; m == nil || m.PromptTokens != 120 || m.CompletionTokens != 16 || m.CachedTokens != 40 || m.CostUSD != 80+10+32 {
				t.Errorf("first turn's metrics %+v", m)
			}
			if last.Source != atif.SourceAgent || last.Message != "Release notes written to CHANGELOG.md." || last.ModelName != "gemini-upstream-001" ||
				(last.Extra["streamed"] == true) != stream {
				t.Errorf("last step %+v", last)
			}
			if m := last.Metrics; m == nil || m.PromptTokens != 405 || m.CompletionTokens != 20 || m.CachedTokens != 100 {
				t.Errorf("second turn's metrics %+v", m)
			}
			if tr.Agent.Extra["api"] != "gemini" || !s.ToolCallsComplete() {
				t.Errorf("trajectory agent %+v, complete %v", tr.Agent, s.ToolCallsComplete())
			}
		})
	}
}

// TestGeminiCLIGoldenRequests replays Gemini CLI 0.56's requests (testdata/cli) through the
// gateway: each is accepted, and what reaches the upstream is the CLI's request with the real
// key, the configured model in the path, the budget's max output, and nothing else.
func TestGeminiCLIGoldenRequests(t *testing.T) {
	files, err := filepath.Glob("testdata/cli/gemini-cli-0.56.*.json")
	if err != nil || len(files) != 2 {
		t.Fatalf("golden files %v (%v), want the stream and the count", files, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var golden struct {
				Method, Path string
				Headers      map[string]string
				Body         json.RawMessage
			}
			if err := json.Unmarshal(raw, &golden); err != nil {
				t.Fatal(err)
			}
			f, up := geminiFixture(t, func(int, geminiSeen) geminiReply {
				return geminiAnswer(true,
					geminiChunk([]map[string]any{text("TestParse fails.")}, "STOP",
						map[string]any{"promptTokenCount": 900, "candidatesTokenCount": 7, "totalTokenCount": 907}))
			})
			s, err := f.g.Open("job", Budget{MaxTokens: 1_000_000}, nil)
			if err != nil {
				t.Fatal(err)
			}
			req, err := http.NewRequest(golden.Method, "http://gateway"+golden.Path, strings.NewReader(string(golden.Body)))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range golden.Headers {
				req.Header.Set(k, strings.ReplaceAll(v, "TOKEN", s.Token()))
			}
			resp, err := f.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			reqs := up.requests()
			if len(reqs) != 1 {
				t.Fatalf("upstream got %d requests", len(reqs))
			}
			r := reqs[0]
			count := strings.Contains(golden.Path, ":countTokens")
			wantPath, wantQuery := "/v1beta/models/gw-model:streamGenerateContent", "alt=sse"
			if count {
				wantPath, wantQuery = "/v1beta/models/gw-model:countTokens", ""
			}
			if r.Path != wantPath || r.Query != wantQuery {
				t.Errorf("upstream %s?%s, want %s?%s", r.Path, r.Query, wantPath, wantQuery)
			}
			wantHeaders := map[string]string{
				"X-Goog-Api-Key": realKey, "Content-Type": "application/json",
				"User-Agent": golden.Headers["User-Agent"], "X-Goog-Api-Client": golden.Headers["x-goog-api-client"],
				"X-Gemini-Api-Privileged-User-Id": "", "Authorization": "",
			}
			for h, want := range wantHeaders {
				if got := r.Header.Get(h); got != want {
					t.Errorf("upstream header %s %q, want %q", h, got, want)
				}
			}
			var sent, want map[string]any
			if err := json.Unmarshal(r.Body, &sent); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(golden.Body, &want); err != nil {
				t.Fatal(err)
			}
			if gc, ok := want["generationConfig"].(map[string]any); ok {
				// The request named none: the default of a model the table does not know (the
				// CLI's thinkingBudget of 8192 stays, under it).
				gc["maxOutputTokens"] = float64(DefaultMaxOutputTokens)
			}
			if got, want := slices.Sorted(maps.Keys(sent)), slices.Sorted(maps.Keys(want)); !slices.Equal(got, want) {
				t.Errorf("upstream fields %v, want %v", got, want)
			}
			for k, v := range want {
				if !reflect.DeepEqual(sent[k], v) {
					t.Errorf("upstream %s:\n%s\nwant\n%s", k, mustJSON(sent[k]), mustJSON(v))
				}
			}
			if count {
				if string(body) != `{"totalTokens": 321}` || s.Usage().Total() != 0 || s.Turns() != 0 || s.Requests() != 1 {
					t.Errorf("count: %s, usage %+v, %d turns, %d requests; want the count passed on, unmetered, no turn", body, s.Usage(), s.Turns(), s.Requests())
				}
				return
			}
			if u := s.Usage(); u.PromptTokens != 900 || u.CompletionTokens != 7 || s.Turns() != 1 {
				t.Errorf("usage %+v, %d turns", u, s.Turns())
			}
			// The CLI's own call ids are kept, and its function's output is the result's text.
			tr := s.Trajectory()
			i := slices.IndexFunc(tr.Steps, func(st atif.Step) bool { return len(st.ToolCalls) > 0 })
			if i < 0 {
				t.Fatalf("no step with the CLI's call: %+v", tr.Steps)
			}
			st := tr.Steps[i]
			if st.ToolCalls[0].ToolCallID != "run_shell_command-1790000000000-0" || st.Observation == nil ||
				!strings.HasPrefix(st.Observation.Results[0].Content, "Output: --- FAIL: TestParse") || st.Message != "I'll run the tests." {
				t.Errorf("call step %+v", st)
			}
			if last := tr.Steps[len(tr.Steps)-1]; last.Message != "TestParse fails." {
				t.Errorf("last step %+v", last)
			}
		})
	}
}

// geminiError is Google's error shape.
type geminiError struct {
	Error struct {
		Code    int
		Message string
		Status  string
		Details []struct{ Reason string }
	}
}

// TestGeminiRefusals: content the provider would fetch, stored state, hosted tools other than
// search, fields spelled twice, unbounded numbers, odd paths and wrong keys are refused in
// Google's error shape, and never reach the upstream.
func TestGeminiRefusals(t *testing.T) {
	const user = `{"role":"user","parts":[{"text":"hi"}]}`
	gen, count := "/v1beta/models/gemini-2.5-pro:generateContent", "/v1beta/models/gemini-2.5-pro:countTokens"
	tests := []struct {
		name, path, body string
		status           int
		wantInMessage    string
	}{
		{"fileData by URI", gen, `{"contents":[{"role":"user","parts":[{"fileData":{"mimeType":"application/pdf","fileUri":"https://evil.example/a.pdf"}}]}]}`,
			400, "contents[0].parts[0].fileData: a file by URI is fetched by the provider"},
		{"file_data by URI", gen, `{"contents":[{"role":"user","parts":[{"text":"see"},{"file_data":{"mime_type":"image/png","file_uri":"https://generativelanguage.googleapis.com/v1beta/files/abc"}}]}]}`,
			400, "contents[0].parts[1].fileData: a file by URI"},
		{"FileData by URI", gen, `{"contents":[{"role":"user","parts":[{"FileData":{"fileUri":"https://evil.example/a.pdf"}}]}]}`,
			400, "contents[0].parts[0].FileData: a file by URI is fetched by the provider"},
		{"FILE_DATA by URI", gen, `{"contents":[{"role":"user","parts":[{"FILE_DATA":{"file_uri":"https://evil.example/a.pdf"}}]}]}`,
			400, "contents[0].parts[0].FILE_DATA: a file by URI is fetched by the provider"},
		{"fileData in the system instruction", gen, `{"contents":[` + user + `],"system_instruction":{"parts":[{"file_data":{"file_uri":"gs://b/o"}}]}}`,
			400, "systemInstruction.parts[0].fileData"},
		{"fileData in a function response", gen, `{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"f","response":{},"parts":[{"fileData":{"fileUri":"https://x"}}]}}]}]}`,
			400, "contents[0].parts[0].functionResponse.parts[0].fileData"},
		{"fileData in a count", count, `{"generateContentRequest":{"contents":[{"parts":[{"fileData":{"fileUri":"https://x"}}]}]}}`,
			400, "generateContentRequest.contents[0].parts[0].fileData"},
		{"cachedContent", gen, `{"contents":[` + user + `],"cachedContent":"cachedContents/abc"}`,
			400, `field "cachedContent" is not forwarded: a cached content is state stored with the provider`},
		{"cached_content", gen, `{"contents":[` + user + `],"cached_content":"cachedContents/abc"}`,
			400, `field "cachedContent" is not forwarded`},
		{"both spellings of generationConfig", gen, `{"contents":[` + user + `],"generationConfig":{"maxOutputTokens":10},"generation_config":{"maxOutputTokens":1000000}}`,
			400, `generationConfig: "generationConfig" and "generation_config" name the same field`},
		{"both spellings of maxOutputTokens", gen, `{"contents":[` + user + `],"generationConfig":{"maxOutputTokens":10,"max_output_tokens":1000000}}`,
			400, `generationConfig.maxOutputTokens: "maxOutputTokens" and "max_output_tokens" name the same field`},
		{"both spellings of functionDeclarations", gen, `{"contents":[` + user + `],"tools":[{"functionDeclarations":[{"name":"f"}],"function_declarations":[{"name":"g"}]}]}`,
			400, `"functionDeclarations" and "function_declarations" name the same field`},
		{"snake_case code_execution tool", gen, `{"contents":[` + user + `],"tools":[{"function_declarations":[{"name":"f"}]},{"code_execution":{}}]}`,
			400, "tools[1].codeExecution is not forwarded: only functionDeclarations"},
		{"max output overflow", gen, `{"contents":[` + user + `],"generationConfig":{"maxOutputTokens":9223372036854775807}}`,
			400, `"maxOutputTokens" must be an integer from 1 to 16777216`},
		{"snake max output overflow", gen, `{"contents":[` + user + `],"generation_config":{"max_output_tokens":9223372036854775807}}`,
			400, `in "generationConfig": "maxOutputTokens" must be an integer from 1`},
		{"candidateCount 2", gen, `{"contents":[` + user + `],"generationConfig":{"candidateCount":2}}`,
			400, `"candidateCount" must be 1`},
		{"image output", gen, `{"contents":[` + user + `],"generationConfig":{"responseModalities":["TEXT","IMAGE"]}}`,
			400, `"responseModalities" value "IMAGE" is not forwarded`},
		{"thinking budget overflow", gen, `{"contents":[` + user + `],"generationConfig":{"thinking_config":{"thinking_budget":9223372036854775807}}}`,
			400, `"thinkingBudget" must be an integer from -1`},
		{"speech config", gen, `{"contents":[` + user + `],"generationConfig":{"speechConfig":{}}}`,
			400, `field "speechConfig" is not forwarded`},
		{"unknown field", gen, `{"contents":[` + user + `],"store":true}`,
			400, `field "store" is not forwarded (allowed: contents, generationConfig, safetySettings, systemInstruction, toolConfig, tools)`},
		{"no contents", gen, `{"generationConfig":{}}`, 400, `field "contents" is required`},
		{"count with both", count, `{"contents":[` + user + `],"generateContentRequest":{"contents":[` + user + `]}}`,
			400, `exclude each other`},
		{"count of cached content", count, `{"generate_content_request":{"contents":[` + user + `],"cached_content":"cachedContents/x"}}`,
			400, `in "generateContentRequest": field "cachedContent" is not forwarded`},
		{"stream as a JSON array", "/v1beta/models/gemini-2.5-pro:streamGenerateContent", `{"contents":[` + user + `]}`,
			400, "add ?alt=sse"},
		{"dots for a model", "/v1beta/models/..:generateContent", `{"contents":[]}`, 404, "the model gateway serves only"},
		{"escaped slash in the model", "/v1beta/models/a%2Fb:generateContent", `{"contents":[]}`, 404, "the model gateway serves only"},
		{"model with a slash", "/v1beta/models/tuned/x:generateContent", `{"contents":[]}`, 404, "the model gateway serves only"},
		{"odd model", "/v1beta/models/gemini@001:generateContent", `{"contents":[]}`, 404, "the model gateway serves only"},
		{"no model", "/v1beta/models/:generateContent", `{"contents":[]}`, 404, "the model gateway serves only"},
		{"other method", "/v1beta/models/gemini-2.5-pro:embedContent", `{"contents":[]}`, 404, "the model gateway serves only"},
		{"cached contents API", "/v1beta/cachedContents", `{}`, 404, "the model gateway serves only"},
	}
	for _, tool := range []string{"googleMaps", "computerUse", "fileSearch", "enterpriseWebSearch", "retrieval", "mcpServers", "google_maps"} {
		tests = append(tests, struct {
			name, path, body string
			status           int
			wantInMessage    string
		}{"hosted tool " + tool, gen, `{"contents":[` + user + `],"tools":[{"functionDeclarations":[{"name":"f"}]},{"` + tool + `":{}}]}`,
			400, fmt.Sprintf("tools[1].%s is not forwarded", lowerCamel(tool))})
	}
	f, up := geminiFixture(t, func(int, geminiSeen) geminiReply {
		t.Error("a refused request reached the upstream")
		return geminiReply{status: 500}
	})
	s, err := f.g.Open("job", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, r gwResponse, status int, wantInMessage string) {
		t.Helper()
		var e geminiError
		if err := json.Unmarshal([]byte(r.Body), &e); err != nil {
			t.Fatalf("%d %q: not Google's error shape: %v", r.Status, r.Body, err)
		}
		if r.Status != status || e.Error.Code != status || e.Error.Status != geminiStatus(status) || !strings.Contains(e.Error.Message, wantInMessage) {
			t.Errorf("got %d %s, want %d %s with %q", r.Status, r.Body, status, geminiStatus(status), wantInMessage)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, f.do(t, http.MethodPost, tt.path, s.Token(), tt.body), tt.status, tt.wantInMessage)
		})
	}
	body := `{"contents":[` + user + `]}`
	t.Run("wrong key", func(t *testing.T) {
		r := f.do(t, http.MethodPost, gen, "", body, "x-goog-api-key", strings.Repeat("ab", 32))
		check(t, r, http.StatusUnauthorized, "unknown or expired gateway token")
		if r.Status == http.StatusUnauthorized && !strings.Contains(r.Body, `"reason":"INVALID_TOKEN"`) {
			t.Errorf("401 without the gateway's reason: %s", r.Body)
		}
	})
	t.Run("the real key in the query", func(t *testing.T) {
		check(t, f.do(t, http.MethodPost, gen+"?key="+realKey, "", body), http.StatusUnauthorized, "unknown or expired gateway token")
	})
	t.Run("GET", func(t *testing.T) {
		check(t, f.do(t, http.MethodGet, gen, s.Token(), ""), http.StatusMethodNotAllowed, "the model gateway serves only")
	})
	if n := len(up.requests()); n != 0 {
		t.Errorf("refused requests reached the upstream %d times", n)
	}
	if s.Requests() != 0 || s.Usage().Total() != 0 {
		t.Errorf("refused requests were counted: %d, %+v", s.Requests(), s.Usage())
	}
}

// TestGeminiTokenPlaces: the token is accepted where Google's clients put a key (the
// x-goog-api-key header, the key query parameter, a Bearer token), and the upstream gets the
// real key in its header and no query but alt=sse on a stream: never the client's ?key=.
func TestGeminiTokenPlaces(t *testing.T) {
	f, up := geminiFixture(t, func(n int, r geminiSeen) geminiReply {
		return geminiAnswer(strings.Contains(r.Path, ":stream"), geminiChunk([]map[string]any{text("ok")}, "STOP",
			map[string]any{"promptTokenCount": 3, "candidatesTokenCount": 1}))
	})
	s, err := f.g.Open("job", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	tests := []struct {
		name, path string
		headers    []string
		wantPath   string
		wantQuery  string
	}{
		{"header", "/v1beta/models/gemini-2.5-flash:generateContent", []string{"x-goog-api-key", s.Token()}, "/v1beta/models/gw-model:generateContent", ""},
		{"empty header beside a bearer", "/v1beta/models/gemini-2.5-flash:generateContent", []string{"x-goog-api-key", "", "Authorization", "Bearer " + s.Token()}, "/v1beta/models/gw-model:generateContent", ""},
		{"query", "/v1beta/models/gemini-2.5-flash:generateContent?key=" + s.Token(), nil, "/v1beta/models/gw-model:generateContent", ""},
		{"query on a stream", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?key=" + s.Token() + "&alt=sse&foo=bar", nil, "/v1beta/models/gw-model:streamGenerateContent", "alt=sse"},
		{"bearer on a stream", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", []string{"Authorization", "Bearer " + s.Token()}, "/v1beta/models/gw-model:streamGenerateContent", "alt=sse"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do(t, http.MethodPost, tt.path, "", body, tt.headers...)
			if r.Status != http.StatusOK || !strings.Contains(r.Body, `"text":"ok"`) {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			seen := up.requests()[i]
			if seen.Path != tt.wantPath || seen.Query != tt.wantQuery || seen.Header.Get("X-Goog-Api-Key") != realKey || seen.Header.Get("Authorization") != "" {
				t.Errorf("upstream %s?%s with %v", seen.Path, seen.Query, seen.Header)
			}
			if strings.Contains(fmt.Sprint(seen.Header)+seen.Query+string(seen.Body), s.Token()) {
				t.Errorf("the job token reached the upstream")
			}
		})
	}
}

// TestGeminiRemovesHostedSearchTools: the hosted search and fetch tools a CLI may send for its
// web tools are taken out (tool entries left empty dropped), named in the trajectory, and the
// function declarations kept.
func TestGeminiRemovesHostedSearchTools(t *testing.T) {
	f, up := geminiFixture(t, func(int, geminiSeen) geminiReply {
		return geminiAnswer(false, geminiChunk([]map[string]any{text("ok")}, "STOP", map[string]any{"promptTokenCount": 3, "candidatesTokenCount": 1}))
	})
	s, err := f.g.Open("job", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],
		"tools":[{"functionDeclarations":[{"name":"read_file"}]},{"googleSearch":{}},{"url_context":{}},
			{"function_declarations":[{"name":"write_file","parameters_json_schema":{"type":"object","properties":{"file_path":{"type":"string"}}}}],"google_search_retrieval":{}}],
		"tool_config":{"function_calling_config":{"mode":"AUTO"}}}`
	r := f.do(t, http.MethodPost, "/v1beta/models/gemini-2.5-pro:generateContent", s.Token(), body)
	if r.Status != http.StatusOK {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	// Spelled as checked: lowerCamelCase, the schema's own names untouched.
	want := `[{"functionDeclarations":[{"name":"read_file"}]},{"functionDeclarations":[{"name":"write_file","parametersJsonSchema":{"type":"object","properties":{"file_path":{"type":"string"}}}}]}]`
	p := up.requests()[0].params(t)
	if got := string(mustJSON(p["tools"])); got != string(mustJSON(decodeJSON(t, want))) {
		t.Errorf("upstream tools %s, want %s", got, want)
	}
	if got := string(mustJSON(p["toolConfig"])); got != `{"functionCallingConfig":{"mode":"AUTO"}}` {
		t.Errorf("upstream toolConfig %s", got)
	}
	if got, want := s.Trajectory().Extra[extraRemoved], []string{"googleSearch", "urlContext", "googleSearchRetrieval"}; !reflect.DeepEqual(got, want) {
		t.Errorf("removed_hosted_tools %v, want %v", got, want)
	}

	// Search alone: no tool left, and no tool config for none.
	r = f.do(t, http.MethodPost, "/v1beta/models/gemini-2.5-pro:generateContent", s.Token(),
		`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"googleSearch":{}}],"toolConfig":{"functionCallingConfig":{"mode":"ANY"}}}`)
	if r.Status != http.StatusOK {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if p := up.requests()[1].params(t); p["tools"] != nil || p["toolConfig"] != nil {
		t.Errorf("upstream body %v: want no tools and no tool config", p)
	}
}

func decodeJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestGeminiAnswersThatAreNotTurns: a stream without usage is refused with Google's error
// event and metered at its reservation; a 429 RESOURCE_EXHAUSTED is passed on with its
// Retry-After and is not a turn; a safety stop is recorded on the last step.
func TestGeminiAnswersThatAreNotTurns(t *testing.T) {
	const body = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"functionDeclarations":[{"name":"f"}]}]}`
	stream := "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
	gen := "/v1beta/models/gemini-2.5-pro:generateContent"

	// Google ends its events with CRLFs, other servers with LFs: the error event reads right
	// after either.
	for _, eol := range []string{"\r\n\r\n", "\n\n"} {
		t.Run(fmt.Sprintf("stream without usage, events ending %q", eol), func(t *testing.T) { streamWithoutUsage(t, body, eol) })
	}

	t.Run("rate limited", func(t *testing.T) {
		f, _ := geminiFixture(t, func(n int, _ geminiSeen) geminiReply {
			if n == 0 {
				return geminiReply{status: http.StatusTooManyRequests, header: map[string]string{"Retry-After": "7"},
					body: `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`}
			}
			return geminiAnswer(false, geminiChunk([]map[string]any{text("ok")}, "STOP", map[string]any{"promptTokenCount": 3, "candidatesTokenCount": 1}))
		})
		s, err := f.g.Open("job", Budget{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := f.do(t, http.MethodPost, gen, s.Token(), body)
		var e geminiError
		if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "7" || json.Unmarshal([]byte(r.Body), &e) != nil || e.Error.Status != "RESOURCE_EXHAUSTED" {
			t.Fatalf("got %d %v %s: want the 429 passed on with its Retry-After", r.Status, r.Header, r.Body)
		}
		if s.Turns() != 0 || s.Requests() != 1 || s.Usage().Total() != 0 {
			t.Errorf("%d turns, %d requests, usage %+v: want no turn, one request, nothing metered", s.Turns(), s.Requests(), s.Usage())
		}
		if tr := s.Trajectory(); len(tr.Steps) != 1 || tr.Steps[0].Source != atif.SourceUser {
			t.Errorf("trajectory %+v: want the user's message and no answer", tr.Steps)
		}
		if r := f.do(t, http.MethodPost, gen, s.Token(), body); r.Status != http.StatusOK || s.Turns() != 1 {
			t.Errorf("retry: %d, %d turns", r.Status, s.Turns())
		}
	})

	for _, tt := range []struct {
		name   string
		path   string
		answer geminiReply
		want   string
	}{
		{"safety stop in a stream", stream, geminiAnswer(true,
			geminiChunk([]map[string]any{text("I can")}, "", map[string]any{"promptTokenCount": 9}),
			geminiChunk([]map[string]any{}, "SAFETY", map[string]any{"promptTokenCount": 9, "candidatesTokenCount": 2})), "SAFETY"},
		{"safety stop", gen, geminiAnswer(false,
			geminiChunk([]map[string]any{}, "SAFETY", map[string]any{"promptTokenCount": 9, "candidatesTokenCount": 2})), "SAFETY"},
		{"blocked prompt", gen, geminiReply{body: `{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":9,"totalTokenCount":9},"modelVersion":"m"}`}, "PROHIBITED_CONTENT"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, _ := geminiFixture(t, func(int, geminiSeen) geminiReply { return tt.answer })
			s, err := f.g.Open("job", Budget{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r := f.do(t, http.MethodPost, tt.path, s.Token(), body); r.Status != http.StatusOK {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			steps := s.Trajectory().Steps
			if last := steps[len(steps)-1]; last.Source != atif.SourceAgent || last.Extra[extraStop] != tt.want || last.Metrics == nil || last.Metrics.PromptTokens != 9 {
				t.Errorf("last step %+v: want the stop reason %s", last, tt.want)
			}
		})
	}
}

// TestGeminiConversation: calls without ids get synthetic ones and their responses are matched
// by name, in order; ids the client sent are kept; snake_case parts read as camelCase ones;
// thoughts are reasoning; a content that is not one is unreadable.
func TestGeminiConversation(t *testing.T) {
	body := `{"system_instruction":{"parts":[{"text":"Be brief."},{"text":"Use tools."}]},"contents":[
		{"role":"user","parts":[{"text":"list and read"}]},
		{"role":"model","parts":[{"text":"thinking","thought":true},{"text":"Looking."},
			{"function_call":{"name":"ls","args":{"dir":"."}}},{"functionCall":{"name":"ls","args":{"dir":"/"}}},{"functionCall":{"id":"r1","name":"read"}}]},
		{"role":"user","parts":[{"functionResponse":{"id":"r1","name":"read","response":{"content":"file body"}}},
			{"function_response":{"name":"ls","response":{"output":"a b"}}},{"functionResponse":{"name":"ls","response":{"files":["x"]}}},{"text":"and now?"}]},
		7]}`
	req, ref := gemini{}.Parse(Route{Op: "generateContent", Kind: Generate, Model: "m"}, []byte(body))
	if ref != nil {
		t.Fatal(ref)
	}
	got := req.Conversation()
	type msg struct {
		Role                   Role
		Text, Reasoning        string
		Calls                  string
		CallID, CallName, Raw0 string
	}
	var gotm []msg
	for _, m := range got {
		calls := ""
		for _, c := range m.Calls {
			calls += fmt.Sprintf("%s:%s%s ", c.ID, c.Name, c.Args)
		}
		raw := ""
		if len(m.Raw) > 0 {
			raw = string(m.Raw[:1])
		}
		gotm = append(gotm, msg{m.Role, m.Text, m.Reasoning, calls, m.CallID, m.CallName, raw})
	}
	want := []msg{
		{Role: System, Text: "Be brief.\nUse tools.", Raw0: "{"},
		{Role: User, Text: "list and read", Raw0: "{"},
		{Role: Agent, Text: "Looking.", Reasoning: "thinking", Calls: `fc-1-2:ls{"dir":"."} fc-1-3:ls{"dir":"/"} r1:read{} `, Raw0: "{"},
		{Role: User, Text: "and now?", Raw0: "["},
		{Role: ToolResult, Text: "file body", CallID: "r1", CallName: "read", Raw0: "{"},
		{Role: ToolResult, Text: "a b", CallID: "fc-1-2", CallName: "ls", Raw0: "{"},
		{Role: ToolResult, Text: `{"files":["x"]}`, CallID: "fc-1-3", CallName: "ls", Raw0: "{"},
		{Role: Unreadable, Raw0: "7"},
	}
	if !reflect.DeepEqual(gotm, want) {
		t.Errorf("conversation\n%+v\nwant\n%+v", gotm, want)
	}
	if req.Tools() != 0 || req.MaxOutput() != 0 || req.Model() != "m" || req.Stream() {
		t.Errorf("tools %d, max output %d, model %q, stream %v", req.Tools(), req.MaxOutput(), req.Model(), req.Stream())
	}
}

// TestGeminiBuild: the upstream body is spelled in lowerCamelCase, labels and model dropped,
// the max output set (generationConfig created when absent); a countTokens'
// generateContentRequest names the configured model, as the API requires.
func TestGeminiBuild(t *testing.T) {
	tests := []struct {
		name      string
		rt        Route
		body      string
		maxOutput int64
		want      string
	}{
		{"max output into a new generationConfig", Route{Op: "generateContent", Kind: Generate},
			`{"model":"models/x","labels":{"k":"v"},"contents":[{"parts":[{"text":"hi","thought_signature":"c2ln"}]}],"safety_settings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}]}`, 100,
			`{"contents":[{"parts":[{"text":"hi","thoughtSignature":"c2ln"}]}],"generationConfig":{"maxOutputTokens":100},"safetySettings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}]}`},
		{"the client's max output replaced by the reserved one", Route{Op: "generateContent", Kind: Generate},
			`{"contents":[],"generation_config":{"max_output_tokens":50,"thinking_config":{"thinking_budget":-1},"stop_sequences":["END"]}}`, 50,
			`{"contents":[],"generationConfig":{"maxOutputTokens":50,"stopSequences":["END"],"thinkingConfig":{"thinkingBudget":-1}}}`},
		{"no budget, no max output", Route{Op: "generateContent", Kind: Generate},
			`{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":{"snake_arg":1}}}]}]}`, 0,
			`{"contents":[{"parts":[{"functionCall":{"args":{"snake_arg":1},"name":"f"}}],"role":"model"}]}`},
		{"count of contents", Route{Op: "countTokens", Kind: Count},
			`{"contents":[{"parts":[{"text":"hi"}]}]}`, 0,
			`{"contents":[{"parts":[{"text":"hi"}]}]}`},
		{"count of a request", Route{Op: "countTokens", Kind: Count},
			`{"generate_content_request":{"model":"models/gemini-2.5-pro","contents":[{"parts":[{"text":"hi"}]}],"tools":[{"googleSearch":{}}]}}`, 0,
			`{"generateContentRequest":{"contents":[{"parts":[{"text":"hi"}]}],"model":"models/gw-model"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, ref := gemini{}.Parse(tt.rt, []byte(tt.body))
			if ref != nil {
				t.Fatal(ref)
			}
			got, err := req.Build("gw-model", tt.maxOutput)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("built %s\nwant  %s", got, tt.want)
			}
		})
	}
}

// TestGeminiUsage: usage from usageMetadata (tool-use prompt tokens are prompt, thoughts are
// output, the cached part is within the prompt); a stream's last usage counts, not their sum;
// a count is not metered.
func TestGeminiUsage(t *testing.T) {
	gen := Route{Op: "generateContent", Kind: Generate}
	u, ok, turn := gemini{}.Answer(gen, []byte(`{"candidates":[{"content":{"parts":[{"text":"hm","thought":true},{"text":"Hi"},{"functionCall":{"id":"c1","name":"f","args":{"a":1}}}]},"finishReason":"STOP"}],
		"usageMetadata":{"promptTokenCount":100,"cachedContentTokenCount":60,"toolUsePromptTokenCount":7,"candidatesTokenCount":5,"thoughtsTokenCount":11,"totalTokenCount":123},"modelVersion":"gemini-2.5-pro-001"}`))
	if !ok || u != (Tokens{Prompt: 107, Completion: 16, CacheRead: 60}) {
		t.Errorf("usage %+v %v", u, ok)
	}
	if turn == nil || turn.Text != "Hi" || turn.Reasoning != "hm" || turn.Model != "gemini-2.5-pro-001" || turn.Stop != "" ||
		len(turn.Calls) != 1 || turn.Calls[0].ID != "c1" || turn.Calls[0].Name != "f" || string(turn.Calls[0].Args) != `{"a":1}` {
		t.Errorf("turn %+v", turn)
	}
	if _, ok, turn := (gemini{}).Answer(Route{Op: "countTokens", Kind: Count}, []byte(`{"totalTokens":31}`)); ok || turn != nil {
		t.Errorf("a count was metered (%v) or a turn (%+v)", ok, turn)
	}
	if _, ok, _ := (gemini{}).Answer(gen, []byte(`{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}`)); ok {
		t.Error("an error answer reported usage")
	}

	sr := gemini{}.Stream(Route{Op: "streamGenerateContent", Kind: Generate, Stream: true}, nil)
	for _, ev := range []string{
		`{"candidates":[{"content":{"parts":[{"text":"Hel"}]}}],"usageMetadata":{"promptTokenCount":50,"totalTokenCount":50}}`,
		`{"candidates":[{"content":{"parts":[{"text":"lo"},{"functionCall":{"name":"g"}}]}}],"usageMetadata":{"promptTokenCount":50,"candidatesTokenCount":3,"totalTokenCount":53}}`,
		`{"candidates":[{"content":{"parts":[{"text":""}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":50,"candidatesTokenCount":4,"thoughtsTokenCount":2,"totalTokenCount":56},"modelVersion":"v"}`,
	} {
		if sr.Event("", []byte(ev)) {
			t.Errorf("event dropped: %s", ev)
		}
	}
	if u, ok := sr.Usage(); !ok || u != (Tokens{Prompt: 50, Completion: 6}) {
		t.Errorf("stream usage %+v %v, want the last chunk's", u, ok)
	}
	if turn := sr.Turn(false); turn.Text != "Hello" || turn.Model != "v" || !turn.Streamed || len(turn.Calls) != 1 || string(turn.Calls[0].Args) != "{}" || sr.End() != nil {
		t.Errorf("stream turn %+v", turn)
	}
}

// TestGeminiRoutes: the paths served, with either version prefix, and the upstream URL built
// from the configured model, escaped.
func TestGeminiRoutes(t *testing.T) {
	for _, tt := range []struct {
		path string
		ok   bool
		want Route
	}{
		{"/v1beta/models/gemini-2.5-pro:generateContent", true, Route{Op: "generateContent", Kind: Generate, Model: "gemini-2.5-pro"}},
		{"/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", true, Route{Op: "streamGenerateContent", Kind: Generate, Stream: true, Model: "gemini-2.5-pro"}},
		{"/v1beta/models/gemini-2.5-pro:streamGenerateContent", true, Route{Op: geminiArrayStream, Kind: Generate, Stream: true, Model: "gemini-2.5-pro"}},
		{"/v1/models/gemini-2.0-flash-001:countTokens", true, Route{Op: "countTokens", Kind: Count, Model: "gemini-2.0-flash-001"}},
		{"/v1beta/models/gemini:generateContent:x", false, Route{}},
		{"/v1beta/models/.:generateContent", false, Route{}},
		{"/v1beta/models/-x:generateContent", false, Route{}},
		{"/v1beta/models/" + strings.Repeat("a", 129) + ":generateContent", false, Route{}},
		{"/v1beta2/models/gemini:generateContent", false, Route{}},
		{"/v1/chat/completions", false, Route{}},
		{"/v1beta/models", true, Route{Op: "models", Kind: Local}},
		{"/v1/models", true, Route{Op: "models", Kind: Local}},
		{"/v1beta/models/gemini-2.5-pro", true, Route{Op: "model", Kind: Local, Model: "gemini-2.5-pro"}},
		{"/v1beta/models/..", false, Route{}},
		{"/v1beta/models/a/b", false, Route{}},
	} {
		r := httptest.NewRequest(http.MethodPost, tt.path, nil)
		if rt, ok := (gemini{}).Route(r); ok != tt.ok || rt != tt.want {
			t.Errorf("%s: %+v %v, want %+v %v", tt.path, rt, ok, tt.want, tt.ok)
		}
	}
	for _, tt := range []struct {
		base, model string
		rt          Route
		want        string
	}{
		{"https://generativelanguage.googleapis.com", "gemini-2.5-pro", Route{Op: "streamGenerateContent", Stream: true},
			"https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"},
		{"https://proxy.example/gemini/v1beta", "gemini-2.5-pro", Route{Op: "countTokens"},
			"https://proxy.example/gemini/v1beta/models/gemini-2.5-pro:countTokens"},
		{"http://10.0.0.1:8080", "my model/v2", Route{Op: "generateContent"},
			"http://10.0.0.1:8080/v1beta/models/my%20model%2Fv2:generateContent"},
	} {
		base, err := url.Parse(tt.base)
		if err != nil {
			t.Fatal(err)
		}
		got, h := gemini{}.Upstream(base, tt.rt, tt.model, realKey, http.Header{"X-Goog-Api-Key": {"tok"}, "Cookie": {"c"}, "User-Agent": {"ua"}})
		if got != tt.want || h.Get("X-Goog-Api-Key") != realKey || h.Get("Cookie") != "" || h.Get("User-Agent") != "ua" {
			t.Errorf("upstream %s %v, want %s with the real key and the user agent only", got, h, tt.want)
		}
	}
}

// streamWithoutUsage checks that a stream without usage, its events ending in eol, is ended
// with Google's error event and metered at its reservation.
func streamWithoutUsage(t *testing.T, body, eol string) {
	f, _ := geminiFixture(t, func(int, geminiSeen) geminiReply {
		r := geminiAnswer(true, geminiChunk([]map[string]any{text("unmetered")}, "STOP", nil))
		r.body = strings.ReplaceAll(r.body, "\r\n\r\n", eol)
		return r
	})
	stream := "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
	s, err := f.g.Open("job", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := f.do(t, http.MethodPost, stream, s.Token(), body)
	events := strings.Split(strings.TrimSpace(strings.ReplaceAll(r.Body, "\r\n", "\n")), "\n\n")
	var e geminiError
	if r.Status != http.StatusOK || len(events) != 2 || !strings.Contains(events[0], "unmetered") ||
		json.Unmarshal([]byte(strings.TrimPrefix(events[1], "data: ")), &e) != nil || e.Error.Status != "UNAVAILABLE" || e.Error.Details[0].Reason != "UPSTREAM_NO_USAGE" {
		t.Fatalf("got %d %q: want the chunk, then Google's error event", r.Status, r.Body)
	}
	// Metered at its reservation: the body's estimate and the configured max output.
	want := agent.Usage{PromptTokens: int64((len(body) + 3) / 4), CompletionTokens: DefaultMaxOutputTokens}
	want.Cost = float64(want.PromptTokens) + 2*float64(want.CompletionTokens)
	if u := s.Usage(); u != want || s.Turns() != 0 {
		t.Errorf("usage %+v, %d turns; want %+v and no turn", u, s.Turns(), want)
	}

	// Google's SDK reads the chunk, then raises the error event as an API error.
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{Backend: genai.BackendGeminiAPI, APIKey: s.Token(),
		HTTPClient: f.client, HTTPOptions: genai.HTTPOptions{BaseURL: "http://gateway/"}})
	if err != nil {
		t.Fatal(err)
	}
	var chunks int
	var apiErr genai.APIError
	for r, err := range client.Models.GenerateContentStream(context.Background(), "gemini-2.5-pro", genai.Text("hi"), nil) {
		if err != nil {
			if !errors.As(err, &apiErr) {
				t.Fatalf("stream error %v: not an API error", err)
			}
			break
		}
		if r.Text() == "unmetered" {
			chunks++
		}
	}
	if chunks != 1 || apiErr.Code != http.StatusBadGateway || apiErr.Status != "UNAVAILABLE" || !strings.Contains(apiErr.Message, "reported no token usage") {
		t.Errorf("the SDK read %d chunks, then %+v; want the chunk, then a 502 UNAVAILABLE", chunks, apiErr)
	}
}
