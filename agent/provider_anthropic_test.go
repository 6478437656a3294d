package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/agent/agenttest"
	"github.com/skillfleet/skillfleet/assert"
	"github.com/skillfleet/skillfleet/atif"
	"github.com/skillfleet/skillfleet/judge"
)

// These tests drive the Anthropic provider from the outside, through agent.Client, the
// built-in agent and the judge (hence package agent_test: judge imports agent), against the
// scripted Anthropic Messages server.

const (
	anthropicKey   = "sk-ant-configured"
	anthropicModel = "claude-test"
	// anthropicSignature is the signature agenttest gives a thinking block.
	anthropicSignature = "c2NyaXB0ZWQtdGhpbmtpbmc="
)

// anthropicPrice has cache prices apart from the prompt price, as Anthropic's are.
var anthropicPrice = agent.Price{PromptPerMTok: 3, CompletionPerMTok: 15, CacheReadPerMTok: 0.3, CacheWritePerMTok: 3.75}

// anthropicWaits records the anthropicWaits a Client asks for and returns at once.
type anthropicWaits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *anthropicWaits) sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.d = append(w.d, d)
	return ctx.Err()
}

func (w *anthropicWaits) got() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.d...)
}

func newAnthropicClient(t *testing.T, baseURL string, edit func(*agent.Endpoint)) (*agent.Client, *anthropicWaits) {
	t.Helper()
	ep := agent.Endpoint{Name: "claude", API: agent.APIAnthropic, BaseURL: baseURL, APIKey: anthropicKey,
		Model: anthropicModel, Price: anthropicPrice}
	if edit != nil {
		edit(&ep)
	}
	w := &anthropicWaits{}
	c, err := agent.NewClient(ep, agent.ClientDeps{Sleep: w.sleep,
		Now: func() time.Time { return time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	return c, w
}

// anthropicSandbox answers cat -- PATH from files and bash -c CMD from commands.
type anthropicSandbox struct {
	mu       sync.Mutex
	ran      [][]string
	files    map[string]string
	commands map[string]string
}

func (s *anthropicSandbox) Exec(_ context.Context, cmd []string, _ []byte, _ string, _ time.Duration) (agent.ExecResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ran = append(s.ran, append([]string(nil), cmd...))
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

func (s *anthropicSandbox) commandsRun() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]string(nil), s.ran...)
}

const anthropicSkill = "---\nname: env-selector\ndescription: Selects the environment.\n---\nAnswer with the environment name in capitals."

func newAnthropicSandbox() *anthropicSandbox {
	return &anthropicSandbox{
		files:    map[string]string{"/skills/env-selector/SKILL.md": anthropicSkill},
		commands: map[string]string{"echo DEV": "DEV\n"},
	}
}

// body is a request's JSON body, decoded generically.
func anthropicBody(t *testing.T, r agenttest.Request) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, r.Body)
	}
	return m
}

// anthropicSameJSON compares a decoded value with the JSON text it should be.
func anthropicSameJSON(t *testing.T, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad want: %v", what, err)
	}
	if !reflect.DeepEqual(got, w) {
		g, _ := json.Marshal(got)
		t.Errorf("%s =\n%s\nwant\n%s", what, g, want)
	}
}

func anthropicNear(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// TestAnthropicBuiltInRunsAToolUsingConversation: a two-turn run with thinking and two
// parallel tool calls. The model gets the results as tool_result blocks of one user message,
// paired by id, after its own message replayed with the thinking signature; the trajectory
// keeps the thinking as reasoning and each turn's tokens and cost at the cache prices.
func TestAnthropicBuiltInRunsAToolUsingConversation(t *testing.T) {
	srv := agenttest.NewAnthropic(t, agenttest.Scripted(func(n int, c agenttest.Conv) (agenttest.Turn, *agenttest.Reply) {
		if n == 0 {
			return agenttest.Turn{Thinking: "The skill says how; run the command too.", Text: "Let me check.",
				Calls: []agenttest.Call{
					{ID: "toolu_bash", Name: "bash", Arguments: `{"command":"echo DEV"}`},
					{ID: "toolu_read", Name: "read_file", Arguments: `{"path":"/skills/env-selector/SKILL.md"}`},
				},
				Usage: agenttest.Tokens{Prompt: 1200, Completion: 40, CacheWrite: 1000}}, nil
		}
		return agenttest.Turn{Thinking: "Both say DEV.", Text: "Selected DEV",
			Usage: agenttest.Tokens{Prompt: 1300, Completion: 10, CacheRead: 1000}}, nil
	}))
	c, _ := newAnthropicClient(t, srv.URL, nil)
	sb := newAnthropicSandbox()
	out, tr, err := agent.NewBuiltIn(c, nil).Run(context.Background(), sb, agent.Request{Input: "Select the DEV environment",
		Catalog: []agent.SkillRef{{Name: "env-selector", Description: "Selects the environment.", Location: "/skills/env-selector/SKILL.md"}}})
	if err != nil {
		t.Fatal(err)
	}
	if out != "Selected DEV" || tr.Stop != "final" || tr.Turns != 2 {
		t.Errorf("output %q, stop %q, turns %d", out, tr.Stop, tr.Turns)
	}
	if want := [][]string{{"bash", "-c", "echo DEV"}, {"cat", "--", "/skills/env-selector/SKILL.md"}}; !reflect.DeepEqual(sb.commandsRun(), want) {
		t.Errorf("sandbox ran %q, want %q", sb.commandsRun(), want)
	}
	if !reflect.DeepEqual(tr.Activated, []string{"env-selector"}) {
		t.Errorf("activated %v", tr.Activated)
	}

	// Turn 1: 200 plain prompt tokens at 3, 1000 written to the cache at 3.75, 40 out at 15.
	// Turn 2: 300 plain at 3, 1000 read from the cache at 0.3, 10 out at 15.
	cost1 := (200*3 + 1000*3.75 + 40*15) / 1e6
	cost2 := (300*3 + 1000*0.3 + 10*15) / 1e6
	u := tr.Usage
	if u.PromptTokens != 2500 || u.CompletionTokens != 50 || u.CacheReadTokens != 1000 || u.CacheWriteTokens != 1000 || !anthropicNear(u.Cost, cost1+cost2) {
		t.Errorf("usage %+v, want 2500 prompt, 50 completion, 1000 cache read, 1000 cache write, cost %v", u, cost1+cost2)
	}

	traj := tr.Trajectory
	if err := traj.Validate(); err != nil {
		t.Fatalf("invalid trajectory: %v", err)
	}
	if len(traj.Steps) != 4 {
		t.Fatalf("%d steps, want 4: %+v", len(traj.Steps), traj.Steps)
	}
	steps := []struct {
		message, reasoning string
		calls              []string
		metrics            atif.Metrics
	}{
		{"Let me check.", "The skill says how; run the command too.", []string{"toolu_bash", "toolu_read"},
			atif.Metrics{PromptTokens: 1200, CompletionTokens: 40, CachedTokens: 0, CostUSD: cost1}},
		{"Selected DEV", "Both say DEV.", nil,
			atif.Metrics{PromptTokens: 1300, CompletionTokens: 10, CachedTokens: 1000, CostUSD: cost2}},
	}
	for i, want := range steps {
		s := traj.Steps[2+i]
		var ids []string
		for _, tc := range s.ToolCalls {
			ids = append(ids, tc.ToolCallID)
		}
		m := s.Metrics
		if s.Source != atif.SourceAgent || s.Message != want.message || s.ReasoningContent != want.reasoning ||
			!reflect.DeepEqual(ids, want.calls) || m == nil || m.PromptTokens != want.metrics.PromptTokens ||
			m.CompletionTokens != want.metrics.CompletionTokens || m.CachedTokens != want.metrics.CachedTokens ||
			!anthropicNear(m.CostUSD, want.metrics.CostUSD) || s.ModelName != "test-model" {
			t.Errorf("turn %d: %+v (metrics %+v), want %+v", i+1, s, m, want)
		}
	}
	if r := traj.Steps[2].Observation.Results; len(r) != 2 || r[0].SourceCallID != "toolu_bash" ||
		r[0].Content != "exit_code: 0\nstdout:\nDEV\n" || r[1].SourceCallID != "toolu_read" || r[1].Content != anthropicSkill {
		t.Errorf("results %+v", r)
	}

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for i, r := range reqs {
		if r.Path != "/v1/messages" || r.Header.Get("X-Api-Key") != anthropicKey || r.Header.Get("Authorization") != "" ||
			r.Header.Get("Anthropic-Version") != "2023-06-01" {
			t.Errorf("request %d: path %s, x-api-key %q, authorization %q, anthropic-version %q", i, r.Path,
				r.Header.Get("X-Api-Key"), r.Header.Get("Authorization"), r.Header.Get("Anthropic-Version"))
		}
		b := anthropicBody(t, r)
		if b["model"] != anthropicModel || b["max_tokens"] != float64(agent.DefaultMaxOutput) {
			t.Errorf("request %d: model %v, max_tokens %v", i, b["model"], b["max_tokens"])
		}
		if _, ok := b["temperature"]; ok {
			t.Errorf("request %d sends a temperature the conversation has not", i)
		}
		// The system prompt (the skill catalog) is one cacheable text block.
		sys, _ := json.Marshal(traj.Steps[0].Message)
		anthropicSameJSON(t, "system", b["system"], `[{"type":"text","text":`+string(sys)+`,"cache_control":{"type":"ephemeral"}}]`)
		tools, _ := b["tools"].([]any)
		if len(tools) != 3 {
			t.Fatalf("tools %v", b["tools"])
		}
		anthropicSameJSON(t, "bash tool", tools[0], `{"name":"bash",
			"description":"Run a command with bash -c in the sandbox and return its exit code, stdout and stderr.",
			"input_schema":{"type":"object","properties":{"command":{"type":"string","description":"The command to run."}},
				"required":["command"],"additionalProperties":false}}`)
	}
	bodyOut, _ := json.Marshal("exit_code: 0\nstdout:\nDEV\n")
	skill, _ := json.Marshal(anthropicSkill)
	anthropicSameJSON(t, "second request's messages", anthropicBody(t, reqs[1])["messages"], `[
		{"role":"user","content":[{"type":"text","text":"Select the DEV environment"}]},
		{"role":"assistant","content":[
			{"type":"thinking","thinking":"The skill says how; run the command too.","signature":"`+anthropicSignature+`"},
			{"type":"text","text":"Let me check."},
			{"type":"tool_use","id":"toolu_bash","name":"bash","input":{"command":"echo DEV"}},
			{"type":"tool_use","id":"toolu_read","name":"read_file","input":{"path":"/skills/env-selector/SKILL.md"}}]},
		{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"toolu_bash","content":[{"type":"text","text":`+string(bodyOut)+`}]},
			{"type":"tool_result","tool_use_id":"toolu_read","content":[{"type":"text","text":`+string(skill)+`}]}]}]`)
	if got := agenttest.ParseConv(reqs[1]).ToolResults; !reflect.DeepEqual(got, []string{"exit_code: 0\nstdout:\nDEV\n", anthropicSkill}) {
		t.Errorf("tool results the model saw: %q", got)
	}
}

// TestAnthropicRequest: how a conversation becomes a Messages request.
func TestAnthropicRequest(t *testing.T) {
	temp := 0.7
	tests := []struct {
		name string
		// base is appended to the server's URL.
		base string
		conv agent.Conversation
		// want are the body's fields, as JSON; absent lists fields that must not be sent.
		want   map[string]string
		absent []string
	}{
		{name: "user text only", conv: agent.Conversation{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}},
			want: map[string]string{
				"model":      `"claude-test"`,
				"max_tokens": `8192`,
				"messages":   `[{"role":"user","content":[{"type":"text","text":"hi"}]}]`,
			}, absent: []string{"system", "tools", "tool_choice", "temperature"}},
		{name: "base URL with /v1", base: "/v1/", conv: agent.Conversation{Model: "claude-other", MaxOutput: 100,
			Temperature: &temp, Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}},
			want: map[string]string{"model": `"claude-other"`, "max_tokens": `100`, "temperature": `0.7`}},
		{name: "another provider's assistant message", conv: agent.Conversation{Messages: []agent.Message{
			{Role: agent.RoleUser, Text: "go"},
			{Role: agent.RoleAssistant, Text: "Running both.", Replay: "not an Anthropic message", Calls: []agent.ToolCallRequest{
				{ID: "call_1", Name: "bash", Arguments: `{"command": "ls"}`},
				{ID: "call_2", Name: "bash", Arguments: ``},
				{ID: "call_3", Name: "bash", Arguments: `{"command":`},
			}},
			{Role: agent.RoleTool, CallID: "call_1", CallName: "bash", Text: "a\n"},
			{Role: agent.RoleTool, CallID: "call_2", CallName: "bash", Text: ""},
			{Role: agent.RoleTool, CallID: "call_3", CallName: "bash", Text: "error: not a JSON object"},
			{Role: agent.RoleUser, Text: "and then?"},
		}}, want: map[string]string{"messages": `[
			{"role":"user","content":[{"type":"text","text":"go"}]},
			{"role":"assistant","content":[
				{"type":"text","text":"Running both."},
				{"type":"tool_use","id":"call_1","name":"bash","input":{"command":"ls"}},
				{"type":"tool_use","id":"call_2","name":"bash","input":{}},
				{"type":"tool_use","id":"call_3","name":"bash","input":{"_raw":"{\"command\":"}}]},
			{"role":"user","content":[
				{"type":"tool_result","tool_use_id":"call_1","content":[{"type":"text","text":"a\n"}]},
				{"type":"tool_result","tool_use_id":"call_2"},
				{"type":"tool_result","tool_use_id":"call_3","content":[{"type":"text","text":"error: not a JSON object"}]},
				{"type":"text","text":"and then?"}]}]`}},
		{name: "schema is a forced tool call", conv: agent.Conversation{System: "Judge.",
			Messages: []agent.Message{{Role: agent.RoleUser, Text: "verdict?"}},
			Tools:    []agent.ToolSpec{{Name: "lookup", Parameters: map[string]any{"type": "object", "properties": map[string]any{}}}},
			Schema: &agent.Schema{Name: "verdict", Description: "The verdict.", Schema: map[string]any{
				"type": "object", "properties": map[string]any{"passed": map[string]any{"type": "boolean"}},
				"required": []any{"passed"}, "additionalProperties": false}}},
			want: map[string]string{
				"system": `[{"type":"text","text":"Judge.","cache_control":{"type":"ephemeral"}}]`,
				"tools": `[{"name":"lookup","input_schema":{"type":"object","properties":{}}},
					{"name":"verdict","description":"The verdict.","input_schema":{"type":"object",
						"properties":{"passed":{"type":"boolean"}},"required":["passed"],"additionalProperties":false}}]`,
				"tool_choice": `{"type":"tool","name":"verdict"}`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := agenttest.NewAnthropic(t, agenttest.Scripted(func(int, agenttest.Conv) (agenttest.Turn, *agenttest.Reply) {
				return agenttest.Turn{Text: "ok", Usage: agenttest.Tokens{Prompt: 1, Completion: 1}}, nil
			}))
			c, _ := newAnthropicClient(t, srv.URL+tt.base, nil)
			if _, _, err := c.Converse(context.Background(), tt.conv); err != nil {
				t.Fatal(err)
			}
			r := srv.Requests()[0]
			if r.Path != "/v1/messages" {
				t.Errorf("path %s", r.Path)
			}
			b := anthropicBody(t, r)
			for k, want := range tt.want {
				anthropicSameJSON(t, k, b[k], want)
			}
			for _, k := range tt.absent {
				if v, ok := b[k]; ok {
					t.Errorf("%s sent: %v", k, v)
				}
			}
		})
	}
}

// anthropicMessage is a Messages answer with the given content blocks, stop reason and usage.
func anthropicMessage(t *testing.T, content []map[string]any, stop string, usage map[string]any) agenttest.Reply {
	t.Helper()
	b, err := json.Marshal(map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-answered",
		"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
	if err != nil {
		t.Fatal(err)
	}
	return agenttest.Reply{Body: string(b), Header: map[string]string{"Content-Type": "application/json"}}
}

// TestAnthropicAnswer: how a Messages answer becomes an Answer and a Usage.
func TestAnthropicAnswer(t *testing.T) {
	text := func(s string) map[string]any { return map[string]any{"type": "text", "text": s} }
	usage := map[string]any{"input_tokens": 100, "cache_creation_input_tokens": 20, "cache_read_input_tokens": 300, "output_tokens": 50}
	schema := &agent.Schema{Name: "verdict", Schema: map[string]any{"type": "object"}}
	tests := []struct {
		name    string
		content []map[string]any
		stop    string
		schema  *agent.Schema
		want    agent.Answer
	}{
		{"end turn", []map[string]any{text("Hello, "), text("world.")}, "end_turn", nil,
			agent.Answer{Text: "Hello, world.", Stop: agent.StopEnd, StopDetail: "end_turn"}},
		{"stop sequence", []map[string]any{text("cut")}, "stop_sequence", nil,
			agent.Answer{Text: "cut", Stop: agent.StopEnd, StopDetail: "stop_sequence"}},
		{"max tokens", []map[string]any{text("and so")}, "max_tokens", nil,
			agent.Answer{Text: "and so", Stop: agent.StopMaxTokens, StopDetail: "max_tokens"}},
		{"refusal", []map[string]any{text("I can't.")}, "refusal", nil,
			agent.Answer{Text: "I can't.", Stop: agent.StopRefusal, StopDetail: "refusal"}},
		{"pause turn", nil, "pause_turn", nil,
			agent.Answer{Stop: agent.StopOther, StopDetail: "pause_turn"}},
		{"thinking and tool use", []map[string]any{
			{"type": "thinking", "thinking": "First this.", "signature": "sig1"},
			{"type": "redacted_thinking", "data": "opaque"},
			{"type": "thinking", "thinking": "Then that.", "signature": "sig2"},
			{"type": "tool_use", "id": "toolu_1", "name": "bash", "input": map[string]any{"command": "ls -l"}},
			{"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": map[string]any{}},
		}, "tool_use", nil, agent.Answer{Reasoning: "First this.\n[redacted thinking]\nThen that.", Calls: []agent.ToolCallRequest{
			{ID: "toolu_1", Name: "bash", Arguments: `{"command":"ls -l"}`}, {ID: "toolu_2", Name: "read_file", Arguments: `{}`}},
			Stop: agent.StopToolUse, StopDetail: "tool_use"}},
		{"forced tool call", []map[string]any{
			{"type": "tool_use", "id": "toolu_v", "name": "verdict", "input": map[string]any{"passed": true, "evidence": "a b"}},
		}, "tool_use", schema, agent.Answer{Text: `{"evidence":"a b","passed":true}`, Stop: agent.StopEnd, StopDetail: "tool_use"}},
		{"structured answer without the tool call", []map[string]any{text("No.")}, "end_turn", schema,
			agent.Answer{Text: "No.", Stop: agent.StopEnd, StopDetail: "end_turn"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			content := tt.content
			if content == nil {
				content = []map[string]any{}
			}
			srv := agenttest.NewAnthropic(t, func(int, agenttest.Request) agenttest.Reply {
				return anthropicMessage(t, content, tt.stop, usage)
			})
			c, _ := newAnthropicClient(t, srv.URL, nil)
			ans, u, err := c.Converse(context.Background(), agent.Conversation{Schema: tt.schema,
				Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}})
			if err != nil {
				t.Fatal(err)
			}
			if ans.Replay == nil {
				t.Errorf("no replay")
			}
			got := *ans
			got.Replay = nil
			want := tt.want
			want.Model = "claude-answered"
			if !reflect.DeepEqual(got, want) {
				t.Errorf("answer\n%+v, want\n%+v", got, want)
			}
			// Prompt tokens are all the input, cached or not.
			if want := (agent.Usage{PromptTokens: 420, CompletionTokens: 50, CacheReadTokens: 300, CacheWriteTokens: 20,
				Cost: anthropicPrice.CostOf(agent.Usage{PromptTokens: 420, CompletionTokens: 50, CacheReadTokens: 300, CacheWriteTokens: 20})}); u != want {
				t.Errorf("usage %+v, want %+v", u, want)
			}
			if !anthropicNear(u.Cost, (100*3+20*3.75+300*0.3+50*15)/1e6) {
				t.Errorf("cost %v", u.Cost)
			}
		})
	}
}

// TestAnthropicRetries: 429 and 529 overloaded_error are retried after the wait the server
// asks for, a 5xx too; a 400 is not; the error carries the API's message.
func TestAnthropicRetries(t *testing.T) {
	tests := []struct {
		name      string
		fails     []agenttest.Reply
		wantWaits []time.Duration
		// wantStatus is the Client's error status; 0 means the answer gets through.
		wantStatus int
		wantMsg    string
	}{
		{name: "429 with retry-after", fails: []agenttest.Reply{agenttest.AnthropicFail(http.StatusTooManyRequests)},
			wantWaits: []time.Duration{time.Second}},
		{name: "429 with retry-after-ms", fails: []agenttest.Reply{agenttest.AnthropicFail(http.StatusTooManyRequests, "retry-after-ms", "250")},
			wantWaits: []time.Duration{250 * time.Millisecond}},
		{name: "529 overloaded", fails: []agenttest.Reply{
			agenttest.AnthropicFail(agenttest.StatusOverloaded, "retry-after", "2"),
			agenttest.AnthropicFail(agenttest.StatusOverloaded, "retry-after", "3")},
			wantWaits: []time.Duration{2 * time.Second, 3 * time.Second}},
		{name: "503 then 429", fails: []agenttest.Reply{
			agenttest.AnthropicFail(http.StatusServiceUnavailable, "retry-after", "4"),
			agenttest.AnthropicFail(http.StatusTooManyRequests, "retry-after", "5")},
			wantWaits: []time.Duration{4 * time.Second, 5 * time.Second}},
		{name: "529 until the retries run out", fails: []agenttest.Reply{
			agenttest.AnthropicFail(agenttest.StatusOverloaded, "retry-after", "1"),
			agenttest.AnthropicFail(agenttest.StatusOverloaded, "retry-after", "1"),
			agenttest.AnthropicFail(agenttest.StatusOverloaded, "retry-after", "1")},
			wantWaits: []time.Duration{time.Second, time.Second}, wantStatus: agenttest.StatusOverloaded, wantMsg: "scripted 529"},
		{name: "400 is not retried", fails: []agenttest.Reply{agenttest.AnthropicFail(http.StatusBadRequest)},
			wantStatus: http.StatusBadRequest, wantMsg: "scripted 400"},
		{name: "401 is not retried", fails: []agenttest.Reply{agenttest.AnthropicFail(http.StatusUnauthorized)},
			wantStatus: http.StatusUnauthorized, wantMsg: "scripted 401"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := agenttest.NewAnthropic(t, agenttest.Scripted(func(n int, _ agenttest.Conv) (agenttest.Turn, *agenttest.Reply) {
				if n < len(tt.fails) {
					return agenttest.Turn{}, &tt.fails[n]
				}
				return agenttest.Turn{Text: "at last", Usage: agenttest.Tokens{Prompt: 10, Completion: 2}}, nil
			}))
			c, w := newAnthropicClient(t, srv.URL, func(ep *agent.Endpoint) { ep.MaxRetries = 2 })
			ans, u, err := c.Converse(context.Background(), agent.Conversation{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}})
			if got := w.got(); !reflect.DeepEqual(got, tt.wantWaits) {
				t.Errorf("anthropicWaits %v, want %v", got, tt.wantWaits)
			}
			wantRequests := len(tt.wantWaits) + 1
			if srv.Count() != wantRequests {
				t.Errorf("%d requests, want %d", srv.Count(), wantRequests)
			}
			if tt.wantStatus == 0 {
				if err != nil || ans.Text != "at last" || u.PromptTokens != 10 || u.CompletionTokens != 2 {
					t.Errorf("answer %+v, usage %+v, err %v", ans, u, err)
				}
				return
			}
			var e *agent.Error
			if !errors.As(err, &e) {
				t.Fatalf("err %v, want an *agent.Error", err)
			}
			if e.StatusCode != tt.wantStatus || e.Message != tt.wantMsg || e.Attempts != wantRequests || ans != nil || u != (agent.Usage{}) {
				t.Errorf("error %+v, answer %v, usage %+v", e, ans, u)
			}
		})
	}
}

// TestAnthropicRefusalErrorsTheRun: a refusal is never an output, whatever text comes with
// it, at the first turn or after tool calls.
func TestAnthropicRefusalErrorsTheRun(t *testing.T) {
	refusal := agenttest.Turn{Text: "I can't help with that.", Refusal: true, Usage: agenttest.Tokens{Prompt: 5, Completion: 3}}
	tests := []struct {
		name      string
		turns     []agenttest.Turn
		wantTurns int
		wantRuns  int
	}{
		{"first turn", []agenttest.Turn{refusal}, 1, 0},
		{"after a tool call", []agenttest.Turn{{Calls: []agenttest.Call{{ID: "toolu_1", Name: "bash", Arguments: `{"command":"echo DEV"}`}},
			Usage: agenttest.Tokens{Prompt: 5, Completion: 3}}, refusal}, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := agenttest.NewAnthropic(t, agenttest.Scripted(func(n int, _ agenttest.Conv) (agenttest.Turn, *agenttest.Reply) {
				return tt.turns[min(n, len(tt.turns)-1)], nil
			}))
			c, _ := newAnthropicClient(t, srv.URL, nil)
			sb := newAnthropicSandbox()
			out, tr, err := agent.NewBuiltIn(c, nil).Run(context.Background(), sb, agent.Request{Input: "do something bad"})
			if !errors.Is(err, agent.ErrModelRefused) {
				t.Fatalf("err %v, want ErrModelRefused", err)
			}
			if !strings.Contains(err.Error(), `refusal "refusal"`) {
				t.Errorf("err %q does not name the stop reason", err)
			}
			if out != "" || tr.Stop != "error" || tr.Turns != tt.wantTurns || len(sb.commandsRun()) != tt.wantRuns {
				t.Errorf("output %q, stop %q, turns %d, commands %v", out, tr.Stop, tr.Turns, sb.commandsRun())
			}
			last := tr.Trajectory.Steps[len(tr.Trajectory.Steps)-1]
			if last.Extra["stop_reason"] != "refusal" {
				t.Errorf("last step %+v", last)
			}
		})
	}
}

// TestAnthropicJudge: the judge's verdict comes as the input of the forced tool call; a
// verdict off the schema, a refusal or an answer without the call is an errored result.
func TestAnthropicJudge(t *testing.T) {
	verdictCall := func(args string) agenttest.Turn {
		return agenttest.Turn{Calls: []agenttest.Call{{ID: "toolu_v", Name: judge.VerdictSchemaName, Arguments: args}},
			Usage: agenttest.Tokens{Prompt: 200, Completion: 20, CacheRead: 150}}
	}
	tests := []struct {
		name        string
		turn        agenttest.Turn
		wantPassed  bool
		wantErrored bool
		wantMsg     string
	}{
		{"passed", verdictCall(`{"passed": true, "evidence": "It asks to confirm PROD."}`), true, false,
			"judge (model claude-test, skillfleet-judge/1): passed — It asks to confirm PROD."},
		{"failed", verdictCall(`{"passed": false, "evidence": "It deploys at once."}`), false, false,
			"judge (model claude-test, skillfleet-judge/1): failed — It deploys at once."},
		{"string passed", verdictCall(`{"passed": "yes", "evidence": "x"}`), false, true,
			`judge answered outside the schema: "passed" is a string, not a boolean`},
		{"extra field", verdictCall(`{"passed": true, "evidence": "x", "score": 9}`), false, true,
			`judge answered outside the schema: unexpected field "score"`},
		{"missing evidence", verdictCall(`{"passed": true}`), false, true,
			`judge answered outside the schema: field "evidence" is missing`},
		{"text instead of the call", agenttest.Turn{Text: "It passes.", Usage: agenttest.Tokens{Prompt: 1, Completion: 1}}, false, true,
			"judge answered outside the schema: not JSON"},
		{"refusal", agenttest.Turn{Text: "No.", Refusal: true, Usage: agenttest.Tokens{Prompt: 1, Completion: 1}}, false, true,
			"judge answered outside the schema: refused: No."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := agenttest.NewAnthropic(t, agenttest.Scripted(func(int, agenttest.Conv) (agenttest.Turn, *agenttest.Reply) {
				return tt.turn, nil
			}))
			c, _ := newAnthropicClient(t, srv.URL, nil)
			j, err := judge.New(judge.Config{}, judge.Deps{Client: c})
			if err != nil {
				t.Fatal(err)
			}
			res, u, err := j.Evaluate(context.Background(), "Asks for confirmation before deploying to PROD", "Deploy to PROD", "Shall I deploy to PROD?", 1)
			if err != nil {
				t.Fatal(err)
			}
			if res.Type != assert.SemanticMatch || res.Passed != tt.wantPassed || res.Errored != tt.wantErrored || !strings.HasPrefix(res.Message, tt.wantMsg) {
				t.Errorf("result %+v, want passed %v, errored %v, message %q", res, tt.wantPassed, tt.wantErrored, tt.wantMsg)
			}
			if want := tt.turn.Usage; u.PromptTokens != want.Prompt || u.CompletionTokens != want.Completion || u.CacheReadTokens != want.CacheRead {
				t.Errorf("usage %+v, want %+v", u, want)
			}
			if srv.Count() != 1 {
				t.Fatalf("%d requests, want 1", srv.Count())
			}
			b := anthropicBody(t, srv.Requests()[0])
			anthropicSameJSON(t, "tool_choice", b["tool_choice"], `{"type":"tool","name":"skillfleet_verdict"}`)
			anthropicSameJSON(t, "tools", b["tools"], `[{"name":"skillfleet_verdict","description":"The judge's verdict on the criterion.",
				"input_schema":{"type":"object","properties":{"passed":{"type":"boolean"},"evidence":{"type":"string"}},
					"required":["passed","evidence"],"additionalProperties":false}}]`)
			anthropicSameJSON(t, "temperature", b["temperature"], `0`)
			anthropicSameJSON(t, "system", b["system"], `[{"type":"text","text":`+anthropicJSONString(judge.SystemPrompt)+`,"cache_control":{"type":"ephemeral"}}]`)
		})
	}
}

func anthropicJSONString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestAnthropicIgnoresTheEnvironment: the SDK's environment variables neither redirect the
// request, nor replace or add to its credentials and headers.
func TestAnthropicIgnoresTheEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_BASE_URL", "http://bogus.invalid:1")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-bogus-env-key")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "bogus-env-token")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Bogus-Header: leaked")
	t.Setenv("ANTHROPIC_PROFILE", "bogus-profile")
	t.Setenv("ANTHROPIC_CONFIG_DIR", t.TempDir())
	t.Setenv("ANTHROPIC_OPEN_TELEMETRY", "true")
	tests := []struct {
		name, key string
	}{
		{"configured key", anthropicKey},
		{"no key (a local server)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := agenttest.NewAnthropic(t, agenttest.Scripted(func(int, agenttest.Conv) (agenttest.Turn, *agenttest.Reply) {
				return agenttest.Turn{Text: "ok", Usage: agenttest.Tokens{Prompt: 1, Completion: 1}}, nil
			}))
			c, _ := newAnthropicClient(t, srv.URL, func(ep *agent.Endpoint) { ep.APIKey = tt.key })
			ans, _, err := c.Converse(context.Background(), agent.Conversation{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}})
			if err != nil || ans.Text != "ok" {
				t.Fatalf("answer %+v, err %v: the request did not reach the configured server", ans, err)
			}
			if srv.Count() != 1 {
				t.Fatalf("%d requests, want 1", srv.Count())
			}
			h := srv.Requests()[0].Header
			if h.Get("X-Api-Key") != tt.key || h.Get("Authorization") != "" || h.Get("X-Bogus-Header") != "" ||
				h.Get("Anthropic-Version") != "2023-06-01" {
				t.Errorf("headers %v", h)
			}
			for k, vs := range h {
				for _, v := range vs {
					if strings.Contains(v, "bogus") {
						t.Errorf("header %s: %q comes from the environment", k, v)
					}
				}
			}
		})
	}
}
