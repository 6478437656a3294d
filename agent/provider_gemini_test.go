// The Gemini provider is tested from outside the package, as its users see it: through
// agent.Client, the built-in agent and the judge (which imports agent, so an internal test
// could not use it).
package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/agent/agenttest"
	"github.com/skillfleet/skillfleet/judge"
	"google.golang.org/genai"
)

// geminiNow is the clock of the test clients (Retry-After dates are relative to it).
var geminiNow = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// geminiWaits records the Client's retry waits and returns at once.
type geminiWaits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *geminiWaits) sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.d = append(w.d, d)
	return ctx.Err()
}

func (w *geminiWaits) got() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.d)
}

// geminiPrice prices cache reads apart, so that a cost shows whether cached tokens were seen.
var geminiPrice = agent.Price{PromptPerMTok: 2, CompletionPerMTok: 8, CacheReadPerMTok: 0.5}

func newGeminiClient(t *testing.T, srv *agenttest.Server, edit func(*agent.Endpoint)) (*agent.Client, *geminiWaits) {
	t.Helper()
	ep := agent.Endpoint{Name: "gemini", API: agent.APIGemini, BaseURL: srv.URL, APIKey: "gm-configured",
		Model: "agent-model", Price: geminiPrice}
	if edit != nil {
		edit(&ep)
	}
	w := &geminiWaits{}
	c, err := agent.NewClient(ep, agent.ClientDeps{Sleep: w.sleep, Now: func() time.Time { return geminiNow }})
	if err != nil {
		t.Fatal(err)
	}
	return c, w
}

// geminiSandbox answers the built-in agent's tools from a file map and a command map.
type geminiSandbox struct {
	files    map[string]string
	commands map[string]string // bash -c command → stdout
}

func (s *geminiSandbox) Exec(_ context.Context, cmd []string, _ []byte, _ string, _ time.Duration) (agent.ExecResult, error) {
	switch {
	case len(cmd) == 3 && cmd[0] == "cat" && cmd[1] == "--":
		if c, ok := s.files[cmd[2]]; ok {
			return agent.ExecResult{Stdout: []byte(c)}, nil
		}
		return agent.ExecResult{ExitCode: 1, Stderr: []byte("no such file")}, nil
	case len(cmd) == 3 && cmd[0] == "bash" && cmd[1] == "-c":
		if out, ok := s.commands[cmd[2]]; ok {
			return agent.ExecResult{Stdout: []byte(out)}, nil
		}
		return agent.ExecResult{ExitCode: 127, Stderr: []byte("command not found")}, nil
	}
	return agent.ExecResult{ExitCode: 2}, nil
}

// geminiJSON decodes JSON text, or re-encodes a value, into the generic form for comparison.
func geminiJSON(t *testing.T, v any) any {
	t.Helper()
	b, ok := v.([]byte)
	if s, isString := v.(string); isString {
		b, ok = []byte(s), true
	}
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return out
}

func geminiJSONText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func geminiSameCost(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

const (
	geminiSkillPath = "/skills/env-selector/SKILL.md"
	geminiSkill     = "---\nname: env-selector\ndescription: Selects deployment environment.\n---\nAnswer with the environment name in capitals."
	// geminiSignature is the thought signature agenttest puts on a turn's first function call.
	geminiSignature = "c2NyaXB0ZWQtdGhvdWdodA=="
)

// TestGeminiBuiltInToolConversation: a three-turn tool-using run of the built-in agent on a
// Gemini endpoint. Calls without ids get ids the results are matched by; each run of tool
// results goes back in one user content, a result by its call's name (and id when the model
// gave one); the model's own content, thought signature included, is replayed; thoughts are the
// trajectory's reasoning; every turn has its tokens, cached ones included, and their cost.
func TestGeminiBuiltInToolConversation(t *testing.T) {
	turns := []agenttest.Turn{
		{Thinking: "The catalog has a skill for this.", Calls: []agenttest.Call{
			{Name: "read_file", Arguments: `{"path":"` + geminiSkillPath + `"}`},
			{Name: "bash", Arguments: `{"command":"echo DEV"}`},
		}, Usage: agenttest.Tokens{Prompt: 1000, CacheRead: 400, Completion: 50, Reasoning: 20}},
		{Text: "Checking the branch.", Calls: []agenttest.Call{{ID: "fc-7", Name: "bash", Arguments: `{"command":"git status"}`}},
			Usage: agenttest.Tokens{Prompt: 2000, CacheRead: 1500, Completion: 30}},
		{Thinking: "All done.", Text: "Selected DEV", Usage: agenttest.Tokens{Prompt: 2500, CacheRead: 2000, Completion: 15, Reasoning: 5}},
	}
	srv := agenttest.NewGemini(t, agenttest.Scripted(func(n int, c agenttest.Conv) (agenttest.Turn, *agenttest.Reply) {
		if n >= len(turns) {
			t.Errorf("unscripted request %d", n+1)
			return agenttest.Turn{}, agenttest.FailFor(c, http.StatusBadRequest)
		}
		return turns[n], nil
	}))
	c, _ := newGeminiClient(t, srv, nil)
	sb := &geminiSandbox{files: map[string]string{geminiSkillPath: geminiSkill},
		commands: map[string]string{"echo DEV": "DEV\n", "git status": "On branch main\n"}}
	catalog := []agent.SkillRef{{Name: "env-selector", Description: "Selects deployment environment.", Location: geminiSkillPath}}
	out, tr, err := agent.NewBuiltIn(c, nil).Run(context.Background(), sb, agent.Request{Input: "Select the DEV environment", Catalog: catalog})
	if err != nil {
		t.Fatal(err)
	}
	if out != "Selected DEV" || tr.Stop != "final" || tr.Turns != 3 || !reflect.DeepEqual(tr.Activated, []string{"env-selector"}) {
		t.Errorf("output %q, stop %q, turns %d, activated %v", out, tr.Stop, tr.Turns, tr.Activated)
	}

	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("requests = %d, want 3", len(reqs))
	}
	for i, r := range reqs {
		if r.Path != "/v1beta/models/agent-model:generateContent" {
			t.Errorf("request %d path = %q", i, r.Path)
		}
	}
	bashOut := "exit_code: 0\nstdout:\nDEV\n"
	gitOut := "exit_code: 0\nstdout:\nOn branch main\n"
	user := map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Select the DEV environment"}}}
	model1 := map[string]any{"role": "model", "parts": []any{
		map[string]any{"text": "The catalog has a skill for this.", "thought": true},
		map[string]any{"functionCall": map[string]any{"name": "read_file", "args": map[string]any{"path": geminiSkillPath}},
			"thoughtSignature": geminiSignature},
		map[string]any{"functionCall": map[string]any{"name": "bash", "args": map[string]any{"command": "echo DEV"}}},
	}}
	// The calls came without ids: so do their results.
	results1 := map[string]any{"role": "user", "parts": []any{
		map[string]any{"functionResponse": map[string]any{"name": "read_file", "response": map[string]any{"output": geminiSkill}}},
		map[string]any{"functionResponse": map[string]any{"name": "bash", "response": map[string]any{"output": bashOut}}},
	}}
	model2 := map[string]any{"role": "model", "parts": []any{
		map[string]any{"text": "Checking the branch."},
		map[string]any{"functionCall": map[string]any{"id": "fc-7", "name": "bash", "args": map[string]any{"command": "git status"}},
			"thoughtSignature": geminiSignature},
	}}
	results2 := map[string]any{"role": "user", "parts": []any{
		map[string]any{"functionResponse": map[string]any{"id": "fc-7", "name": "bash", "response": map[string]any{"output": gitOut}}},
	}}
	wantContents := [][]any{
		{user},
		{user, model1, results1},
		{user, model1, results1, model2, results2},
	}
	for i, r := range reqs {
		got := r.Params()["contents"]
		if want := geminiJSON(t, wantContents[i]); !reflect.DeepEqual(got, want) {
			t.Errorf("request %d contents:\n got %s\nwant %s", i, geminiJSONText(t, got), geminiJSONText(t, want))
		}
	}
	p := reqs[0].Params()
	if sys := agenttest.ParseConv(reqs[0]).System; !strings.Contains(sys, "<name>env-selector</name>") {
		t.Errorf("systemInstruction = %q", sys)
	}
	var names []string
	var bashParams any
	tools, _ := p["tools"].([]any)
	if len(tools) != 1 {
		t.Fatalf("tools = %s, want one Tool", geminiJSONText(t, p["tools"]))
	}
	for _, fd := range tools[0].(map[string]any)["functionDeclarations"].([]any) {
		fd := fd.(map[string]any)
		names = append(names, fd["name"].(string))
		if fd["name"] == "bash" {
			bashParams = fd["parametersJsonSchema"]
		}
		if _, ok := fd["parameters"]; ok {
			t.Errorf("%s has OpenAPI parameters; want parametersJsonSchema", fd["name"])
		}
	}
	if !reflect.DeepEqual(names, []string{"bash", "read_file", "write_file"}) {
		t.Errorf("function declarations = %v", names)
	}
	if m, _ := bashParams.(map[string]any); m["type"] != "object" || !reflect.DeepEqual(m["required"], []any{"command"}) {
		t.Errorf("bash parametersJsonSchema = %s", geminiJSONText(t, bashParams))
	}

	traj := tr.Trajectory
	if err := traj.Validate(); err != nil {
		t.Fatalf("invalid trajectory: %v", err)
	}
	if len(traj.Steps) != 5 {
		t.Fatalf("steps = %d, want 5 (system, user, three turns)", len(traj.Steps))
	}
	type stepView struct {
		Reasoning, Message string
		CallIDs, Results   []string
		Prompt, Cached     int64
		Completion         int64
		Cost               float64
	}
	want := []stepView{
		// 600 plain prompt tokens at 2/M, 400 cached at 0.5/M, 50 completion tokens at 8/M.
		{Reasoning: "The catalog has a skill for this.", CallIDs: []string{"call-1", "call-2"},
			Results: []string{geminiSkill, bashOut}, Prompt: 1000, Cached: 400, Completion: 50, Cost: 0.0012 + 0.0002 + 0.0004},
		{Message: "Checking the branch.", CallIDs: []string{"fc-7"}, Results: []string{gitOut},
			Prompt: 2000, Cached: 1500, Completion: 30, Cost: 0.001 + 0.00075 + 0.00024},
		{Reasoning: "All done.", Message: "Selected DEV", Prompt: 2500, Cached: 2000, Completion: 15, Cost: 0.001 + 0.001 + 0.00012},
	}
	var total float64
	for i, w := range want {
		s := traj.Steps[2+i]
		got := stepView{Reasoning: s.ReasoningContent, Message: s.Message}
		for _, tc := range s.ToolCalls {
			got.CallIDs = append(got.CallIDs, tc.ToolCallID)
		}
		if s.Observation != nil {
			for _, r := range s.Observation.Results {
				got.Results = append(got.Results, r.Content)
			}
		}
		if m := s.Metrics; m != nil {
			got.Prompt, got.Cached, got.Completion, got.Cost = m.PromptTokens, m.CachedTokens, m.CompletionTokens, m.CostUSD
		}
		if !geminiSameCost(got.Cost, w.Cost) {
			t.Errorf("turn %d cost = %v, want %v", i+1, got.Cost, w.Cost)
		}
		got.Cost = w.Cost
		if !reflect.DeepEqual(got, w) {
			t.Errorf("turn %d = %+v, want %+v", i+1, got, w)
		}
		total += w.Cost
	}
	wantUsage := agent.Usage{PromptTokens: 5500, CacheReadTokens: 3900, CompletionTokens: 95, Cost: total}
	if u := tr.Usage; !geminiSameCost(u.Cost, wantUsage.Cost) || u.PromptTokens != 5500 || u.CacheReadTokens != 3900 ||
		u.CompletionTokens != 95 || u.CacheWriteTokens != 0 {
		t.Errorf("usage = %+v, want %+v", u, wantUsage)
	}
}

// TestGeminiRequest: what a Conversation becomes: the system instruction, the turns (another
// provider's assistant message in neutral form, consecutive tool results in one content),
// temperature, max output tokens and a response schema.
func TestGeminiRequest(t *testing.T) {
	temp := 0.25
	schema := map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}},
		"required": []string{"ok"}, "additionalProperties": false}
	tests := []struct {
		name string
		conv agent.Conversation
		// want are the request's fields (JSON); a field not named must be absent.
		want map[string]string
	}{
		{"plain", agent.Conversation{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}},
			map[string]string{"contents": `[{"role":"user","parts":[{"text":"hi"}]}]`, "generationConfig": `{}`}},
		{"neutral history", agent.Conversation{System: "Be brief.", MaxOutput: 512, Temperature: &temp, Messages: []agent.Message{
			{Role: agent.RoleUser, Text: "list and count"},
			{Role: agent.RoleAssistant, Text: "Two calls.", Calls: []agent.ToolCallRequest{
				{ID: "a1", Name: "bash", Arguments: `{"command":"ls"}`}, {ID: "a2", Name: "bash", Arguments: ""},
				{ID: "a3", Name: "bash", Arguments: `{"command":`}},
				Replay: "another provider's form"},
			{Role: agent.RoleTool, CallID: "a1", CallName: "bash", Text: "x.txt"},
			{Role: agent.RoleTool, CallID: "a2", CallName: "bash", Text: "2"},
			{Role: agent.RoleTool, CallID: "a3", CallName: "bash", Text: "bad arguments"},
			{Role: agent.RoleUser, Text: "and now?"},
		}}, map[string]string{
			"systemInstruction": `{"role":"user","parts":[{"text":"Be brief."}]}`,
			"generationConfig":  `{"temperature":0.25,"maxOutputTokens":512}`,
			"contents": `[{"role":"user","parts":[{"text":"list and count"}]},
				{"role":"model","parts":[{"text":"Two calls."},
					{"functionCall":{"id":"a1","name":"bash","args":{"command":"ls"}}},
					{"functionCall":{"id":"a2","name":"bash"}},
					{"functionCall":{"id":"a3","name":"bash","args":{"_raw":"{\"command\":"}}}]},
				{"role":"user","parts":[
					{"functionResponse":{"id":"a1","name":"bash","response":{"output":"x.txt"}}},
					{"functionResponse":{"id":"a2","name":"bash","response":{"output":"2"}}},
					{"functionResponse":{"id":"a3","name":"bash","response":{"output":"bad arguments"}}}]},
				{"role":"user","parts":[{"text":"and now?"}]}]`,
		}},
		{"schema", agent.Conversation{Schema: &agent.Schema{Name: "verdict", Schema: schema},
			Messages: []agent.Message{{Role: agent.RoleUser, Text: "judge"}}}, map[string]string{
			"contents": `[{"role":"user","parts":[{"text":"judge"}]}]`,
			"generationConfig": `{"responseMimeType":"application/json","responseJsonSchema":{"type":"object",
				"properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false}}`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := agenttest.NewGemini(t, func(int, agenttest.Request) agenttest.Reply {
				return agenttest.GeminiTurn(agenttest.Turn{Text: "ok"}, false)
			})
			c, _ := newGeminiClient(t, srv, nil)
			if _, _, err := c.Converse(context.Background(), tt.conv); err != nil {
				t.Fatal(err)
			}
			got := srv.Requests()[0].Params()
			for k, v := range got {
				w, ok := tt.want[k]
				if !ok {
					t.Errorf("unexpected field %s = %s", k, geminiJSONText(t, v))
					continue
				}
				if want := geminiJSON(t, w); !reflect.DeepEqual(v, want) {
					t.Errorf("%s:\n got %s\nwant %s", k, geminiJSONText(t, v), geminiJSONText(t, want))
				}
			}
			for k := range tt.want {
				if _, ok := got[k]; !ok {
					t.Errorf("field %s missing", k)
				}
			}
		})
	}
}

// geminiBody is a 200 generateContent answer with the given JSON body.
func geminiBody(body string) agenttest.Reply {
	return agenttest.Reply{Body: body, Header: map[string]string{"Content-Type": "application/json"}}
}

// TestGeminiAnswers: how generateContent answers become Answers and Usage: finish reasons,
// thoughts, calls, a blocked prompt, token accounting, and an answer without candidates.
func TestGeminiAnswers(t *testing.T) {
	const usage = `"usageMetadata":{"promptTokenCount":100,"toolUsePromptTokenCount":7,"cachedContentTokenCount":60,
		"candidatesTokenCount":20,"thoughtsTokenCount":5,"totalTokenCount":132}`
	// 47 plain prompt tokens at 2/M, 60 cached at 0.5/M, 25 completion tokens at 8/M.
	wantUsage := agent.Usage{PromptTokens: 107, CacheReadTokens: 60, CompletionTokens: 25, Cost: 0.000094 + 0.00003 + 0.0002}
	candidate := func(finish, parts string) string {
		return `{"candidates":[{"index":0,"finishReason":"` + finish + `","content":{"role":"model","parts":[` + parts + `]}}],
			"modelVersion":"gemini-2.5-pro-001",` + usage + `}`
	}
	tests := []struct {
		name    string
		body    string
		want    agent.Answer // Replay is checked apart
		replay  bool
		wantErr error
	}{
		{"text and thoughts", candidate("STOP", `{"text":"Let me think. ","thought":true},{"text":"Hmm.","thought":true},{"text":"Hello, "},{"text":"world."}`),
			agent.Answer{Model: "gemini-2.5-pro-001", Text: "Hello, world.", Reasoning: "Let me think. Hmm.", Stop: agent.StopEnd, StopDetail: "STOP"}, true, nil},
		{"calls", candidate("STOP", `{"functionCall":{"name":"bash","args":{"command":"ls -l"}},"thoughtSignature":"`+geminiSignature+`"},
			{"functionCall":{"id":"given","name":"read_file","args":{"path":"a"}}},{"functionCall":{"name":"noop"}}`),
			agent.Answer{Model: "gemini-2.5-pro-001", Calls: []agent.ToolCallRequest{
				{ID: "call-1", Name: "bash", Arguments: `{"command":"ls -l"}`},
				{ID: "given", Name: "read_file", Arguments: `{"path":"a"}`},
				{ID: "call-3", Name: "noop", Arguments: `{}`}}, Stop: agent.StopToolUse, StopDetail: "STOP"}, true, nil},
		{"max tokens", candidate("MAX_TOKENS", `{"text":"cut"}`),
			agent.Answer{Model: "gemini-2.5-pro-001", Text: "cut", Stop: agent.StopMaxTokens, StopDetail: "MAX_TOKENS"}, true, nil},
		{"safety", `{"candidates":[{"finishReason":"SAFETY"}],"modelVersion":"m",` + usage + `}`,
			agent.Answer{Model: "m", Stop: agent.StopSafety, StopDetail: "SAFETY"}, false, nil},
		{"recitation", candidate("RECITATION", `{"text":"quoted"}`),
			agent.Answer{Model: "gemini-2.5-pro-001", Text: "quoted", Stop: agent.StopSafety, StopDetail: "RECITATION"}, true, nil},
		{"prohibited content", candidate("PROHIBITED_CONTENT", `{"text":""}`),
			agent.Answer{Model: "gemini-2.5-pro-001", Stop: agent.StopSafety, StopDetail: "PROHIBITED_CONTENT"}, true, nil},
		{"blocklist", candidate("BLOCKLIST", `{"text":"x"}`),
			agent.Answer{Model: "gemini-2.5-pro-001", Text: "x", Stop: agent.StopSafety, StopDetail: "BLOCKLIST"}, true, nil},
		{"spii", candidate("SPII", `{"text":"x"}`),
			agent.Answer{Model: "gemini-2.5-pro-001", Text: "x", Stop: agent.StopSafety, StopDetail: "SPII"}, true, nil},
		{"image safety", candidate("IMAGE_SAFETY", `{"text":"x"}`),
			agent.Answer{Model: "gemini-2.5-pro-001", Text: "x", Stop: agent.StopSafety, StopDetail: "IMAGE_SAFETY"}, true, nil},
		{"malformed function call", candidate("MALFORMED_FUNCTION_CALL", `{"text":"x"}`),
			agent.Answer{Model: "gemini-2.5-pro-001", Text: "x", Stop: agent.StopOther, StopDetail: "MALFORMED_FUNCTION_CALL"}, true, nil},
		{"prompt blocked", `{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"modelVersion":"m",` + usage + `}`,
			agent.Answer{Model: "m", Stop: agent.StopSafety, StopDetail: "PROHIBITED_CONTENT"}, false, nil},
		{"no candidates", `{"modelVersion":"m",` + usage + `}`, agent.Answer{}, false, agent.ErrMalformedResponse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := agenttest.NewGemini(t, func(int, agenttest.Request) agenttest.Reply { return geminiBody(tt.body) })
			c, w := newGeminiClient(t, srv, nil)
			ans, u, err := c.Converse(context.Background(), agent.Conversation{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}})
			if !geminiSameCost(u.Cost, wantUsage.Cost) {
				t.Errorf("cost = %v, want %v", u.Cost, wantUsage.Cost)
			}
			u.Cost = wantUsage.Cost
			if u != wantUsage {
				t.Errorf("usage = %+v, want %+v", u, wantUsage)
			}
			if srv.Count() != 1 || len(w.got()) != 0 {
				t.Errorf("requests %d, waits %v: want one attempt", srv.Count(), w.got())
			}
			if tt.wantErr != nil {
				var e *agent.Error
				if !errors.Is(err, tt.wantErr) || !errors.As(err, &e) || e.StatusCode != http.StatusOK || ans != nil {
					t.Fatalf("answer %+v, err %v; want an *Error wrapping %v", ans, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := ans.Replay.(*genai.Content); ok != tt.replay {
				t.Errorf("replay %T, want the candidate's content: %v", ans.Replay, tt.replay)
			}
			got := *ans
			got.Replay = nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("answer:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestGeminiRetries: 429 RESOURCE_EXHAUSTED and 503 UNAVAILABLE are retried by the Client
// after what Retry-After says (or a backoff), until an answer; other errors are not retried,
// and the error carries the API's message.
func TestGeminiRetries(t *testing.T) {
	retryAt := geminiNow.Add(4 * time.Second).Format(http.TimeFormat)
	tests := []struct {
		name      string
		fails     []agenttest.Reply
		wantWaits []time.Duration // nil: a backoff each, checked for its range
		nWaits    int
		wantErr   int // the *Error's status; 0: the answer comes
		wantMsg   string
	}{
		{"429 with Retry-After seconds", []agenttest.Reply{
			agenttest.GeminiFail(http.StatusTooManyRequests, "Retry-After", "3"),
			agenttest.GeminiFail(http.StatusTooManyRequests, "Retry-After", "1.5")},
			[]time.Duration{3 * time.Second, 1500 * time.Millisecond}, 2, 0, ""},
		{"503 with a Retry-After date", []agenttest.Reply{agenttest.GeminiFail(http.StatusServiceUnavailable, "Retry-After", retryAt)},
			[]time.Duration{4 * time.Second}, 1, 0, ""},
		{"503 without Retry-After", []agenttest.Reply{agenttest.GeminiFail(http.StatusServiceUnavailable)}, nil, 1, 0, ""},
		{"408 and 409", []agenttest.Reply{agenttest.GeminiFail(http.StatusRequestTimeout, "Retry-After", "1"),
			agenttest.GeminiFail(http.StatusConflict, "Retry-After", "2")}, []time.Duration{time.Second, 2 * time.Second}, 2, 0, ""},
		{"400 is not retried", []agenttest.Reply{agenttest.GeminiFail(http.StatusBadRequest, "Retry-After", "1")},
			nil, 0, http.StatusBadRequest, `model endpoint "gemini": HTTP 400 Bad Request: scripted 400 (1 attempt)`},
		{"403 is not retried", []agenttest.Reply{agenttest.GeminiFail(http.StatusForbidden)},
			nil, 0, http.StatusForbidden, `model endpoint "gemini": HTTP 403 Forbidden: scripted 403 (1 attempt)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := agenttest.NewGemini(t, func(n int, _ agenttest.Request) agenttest.Reply {
				if n < len(tt.fails) {
					return tt.fails[n]
				}
				return agenttest.GeminiTurn(agenttest.Turn{Text: "answer", Usage: agenttest.Tokens{Prompt: 10, Completion: 2}}, false)
			})
			c, w := newGeminiClient(t, srv, nil)
			ans, _, err := c.Converse(context.Background(), agent.Conversation{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}})
			if tt.wantErr != 0 {
				var e *agent.Error
				if !errors.As(err, &e) || e.StatusCode != tt.wantErr || e.Attempts != 1 || err.Error() != tt.wantMsg {
					t.Errorf("err = %v, want %q", err, tt.wantMsg)
				}
				if srv.Count() != 1 || len(w.got()) != 0 {
					t.Errorf("requests %d, waits %v: want one attempt", srv.Count(), w.got())
				}
				return
			}
			if err != nil || ans.Text != "answer" {
				t.Fatalf("answer %+v, err %v", ans, err)
			}
			if srv.Count() != len(tt.fails)+1 {
				t.Errorf("requests = %d, want %d", srv.Count(), len(tt.fails)+1)
			}
			got := w.got()
			if tt.wantWaits != nil {
				if !reflect.DeepEqual(got, tt.wantWaits) {
					t.Errorf("waits = %v, want %v", got, tt.wantWaits)
				}
				return
			}
			// The first backoff is between half and all of 500ms.
			if len(got) != tt.nWaits || got[0] < 250*time.Millisecond || got[0] > 500*time.Millisecond {
				t.Errorf("waits = %v, want %d backoff in [250ms, 500ms]", got, tt.nWaits)
			}
		})
	}
}

// TestGeminiConcurrentCallsKeepTheirResponses: each call's Retry-After is its own, however
// many calls share the client.
func TestGeminiConcurrentCallsKeepTheirResponses(t *testing.T) {
	const calls = 8
	var mu sync.Mutex
	failed := map[string]bool{}
	srv := agenttest.NewGemini(t, agenttest.Scripted(func(_ int, c agenttest.Conv) (agenttest.Turn, *agenttest.Reply) {
		mu.Lock()
		defer mu.Unlock()
		if !failed[c.Input] {
			failed[c.Input] = true
			return agenttest.Turn{}, agenttest.FailFor(c, http.StatusTooManyRequests, "Retry-After", c.Input)
		}
		return agenttest.Turn{Text: "answer to " + c.Input}, nil
	}))
	c, w := newGeminiClient(t, srv, nil)
	var wg sync.WaitGroup
	errs := make([]error, calls)
	for i := range calls {
		wg.Go(func() {
			in := strconv.Itoa(i + 1)
			ans, _, err := c.Converse(context.Background(), agent.Conversation{Messages: []agent.Message{{Role: agent.RoleUser, Text: in}}})
			if err == nil && ans.Text != "answer to "+in {
				err = fmt.Errorf("answer %q to %s", ans.Text, in)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	got := w.got()
	slices.Sort(got)
	var want []time.Duration
	for i := range calls {
		want = append(want, time.Duration(i+1)*time.Second)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("waits = %v, want one of each of %v", got, want)
	}
}

// TestGeminiSafetyStopIsRefused: a SAFETY stop, or a blocked prompt, ends the built-in agent's
// run with ErrModelRefused and never an output.
func TestGeminiSafetyStopIsRefused(t *testing.T) {
	tests := []struct {
		name  string
		reply agenttest.Reply
	}{
		{"safety stop", agenttest.GeminiTurn(agenttest.Turn{Refusal: true, Usage: agenttest.Tokens{Prompt: 40}}, false)},
		{"safety stop with text", geminiBody(`{"candidates":[{"finishReason":"SAFETY","content":{"role":"model","parts":[{"text":"DEV"}]}}],
			"usageMetadata":{"promptTokenCount":40,"candidatesTokenCount":1}}`)},
		{"blocked prompt", geminiBody(`{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":40}}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := agenttest.NewGemini(t, func(int, agenttest.Request) agenttest.Reply { return tt.reply })
			c, _ := newGeminiClient(t, srv, nil)
			out, tr, err := agent.NewBuiltIn(c, nil).Run(context.Background(), &geminiSandbox{}, agent.Request{Input: "Select DEV"})
			if !errors.Is(err, agent.ErrModelRefused) || out != "" || tr.Stop != "error" || tr.Turns != 1 {
				t.Errorf("Run = %q, stop %q, turns %d, err %v; want ErrModelRefused and no output", out, tr.Stop, tr.Turns, err)
			}
			if err != nil && !strings.Contains(err.Error(), `safety "SAFETY"`) {
				t.Errorf("err = %v, want the stop reason", err)
			}
			if tr.Usage.PromptTokens != 40 {
				t.Errorf("usage = %+v, want the refused turn's tokens", tr.Usage)
			}
		})
	}
}

// TestGeminiJudge: the judge on a Gemini endpoint asks for its verdict with a response schema
// and reads the JSON text; an answer that is not the schema's JSON is an errored result.
func TestGeminiJudge(t *testing.T) {
	tests := []struct {
		name                string
		text                string
		wantPassed, errored bool
		wantMsg             string
	}{
		{"passed", `{"passed": true, "evidence": "It asks to confirm PROD."}`, true, false,
			"judge (model judge-model, skillfleet-judge/1): passed — It asks to confirm PROD."},
		{"failed", `{"passed": false, "evidence": "It deploys at once."}`, false, false,
			"judge (model judge-model, skillfleet-judge/1): failed — It deploys at once."},
		{"not JSON", "Yes, it passes.", false, true, "judge answered outside the schema: not JSON"},
		{"outside the schema", `{"passed": true, "evidence": "x", "score": 1}`, false, true, `unexpected field "score"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := agenttest.NewGemini(t, func(int, agenttest.Request) agenttest.Reply {
				return agenttest.GeminiTurn(agenttest.Turn{Text: tt.text, Usage: agenttest.Tokens{Prompt: 200, Completion: 20}}, false)
			})
			c, _ := newGeminiClient(t, srv, func(ep *agent.Endpoint) { ep.Name, ep.Model = "judge", "endpoint-model" })
			j, err := judge.New(judge.Config{Model: "judge-model"}, judge.Deps{Client: c})
			if err != nil {
				t.Fatal(err)
			}
			res, u, err := j.Evaluate(context.Background(), "Asks for confirmation before deploying to PROD", "Deploy to PROD", "Please confirm PROD.", 1)
			if err != nil {
				t.Fatal(err)
			}
			if res.Passed != tt.wantPassed || res.Errored != tt.errored || !strings.Contains(res.Message, tt.wantMsg) {
				t.Errorf("result = %+v, want passed %v, errored %v, message with %q", res, tt.wantPassed, tt.errored, tt.wantMsg)
			}
			if u.PromptTokens != 200 || u.CompletionTokens != 20 {
				t.Errorf("usage = %+v", u)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 || reqs[0].Path != "/v1beta/models/judge-model:generateContent" {
				t.Fatalf("requests = %v", reqs)
			}
			gc, _ := reqs[0].Params()["generationConfig"].(map[string]any)
			wantSchema := geminiJSON(t, `{"type":"object","properties":{"passed":{"type":"boolean"},"evidence":{"type":"string"}},
				"required":["passed","evidence"],"additionalProperties":false}`)
			if gc["responseMimeType"] != "application/json" || !reflect.DeepEqual(gc["responseJsonSchema"], wantSchema) ||
				gc["temperature"] != 0.0 {
				t.Errorf("generationConfig = %s", geminiJSONText(t, gc))
			}
		})
	}
}

// TestGeminiIgnoresTheEnvironment: genai's environment variables (keys, base URL, Vertex AI,
// Cloud project) change nothing: the request goes to the configured server with the configured
// key, or with no key when none is configured.
func TestGeminiIgnoresTheEnvironment(t *testing.T) {
	for k, v := range map[string]string{
		"GOOGLE_GEMINI_BASE_URL":         "http://127.0.0.1:9/bogus",
		"GOOGLE_VERTEX_BASE_URL":         "http://127.0.0.1:9/vertex",
		"GOOGLE_GENAI_USE_VERTEXAI":      "true",
		"GOOGLE_GENAI_USE_ENTERPRISE":    "true",
		"GOOGLE_CLOUD_PROJECT":           "env-project",
		"GOOGLE_CLOUD_LOCATION":          "env-location",
		"GOOGLE_CLOUD_REGION":            "env-region",
		"GOOGLE_APPLICATION_CREDENTIALS": "/nonexistent/credentials.json",
	} {
		t.Setenv(k, v)
	}
	// One key variable at a time: with both set genai logs a warning about them.
	for _, envKey := range []string{"GOOGLE_API_KEY", "GEMINI_API_KEY"} {
		for _, key := range []string{"gm-configured", ""} {
			t.Run(envKey+" key "+strconv.Quote(key), func(t *testing.T) {
				t.Setenv(envKey, "env-key")
				srv := agenttest.NewGemini(t, func(int, agenttest.Request) agenttest.Reply {
					return agenttest.GeminiTurn(agenttest.Turn{Text: "here"}, false)
				})
				c, _ := newGeminiClient(t, srv, func(ep *agent.Endpoint) { ep.APIKey = key })
				ans, _, err := c.Converse(context.Background(), agent.Conversation{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}})
				if err != nil || ans.Text != "here" {
					t.Fatalf("answer %+v, err %v", ans, err)
				}
				reqs := srv.Requests()
				if len(reqs) != 1 || reqs[0].Path != "/v1beta/models/agent-model:generateContent" {
					t.Fatalf("the configured server got %v, want one generateContent of the endpoint's model", reqs)
				}
				h := reqs[0].Header
				if got := h.Values("X-Goog-Api-Key"); !reflect.DeepEqual(got, geminiKeyHeader(key)) {
					t.Errorf("x-goog-api-key = %q, want %q", got, geminiKeyHeader(key))
				}
				if got := h.Get("Authorization"); got != "" {
					t.Errorf("Authorization = %q", got)
				}
				for name, vs := range h {
					for _, v := range vs {
						if strings.Contains(v, "env-") {
							t.Errorf("header %s = %q comes from the environment", name, v)
						}
					}
				}
			})
		}
	}
}

func geminiKeyHeader(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
