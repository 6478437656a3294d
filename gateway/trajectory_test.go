package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/agent/agenttest"
	"github.com/skillfleet/skillfleet/atif"
	sftest "github.com/skillfleet/skillfleet/internal/testutil"
)

// scriptedUpstream answers the n-th request with bodies[n] as contentType; past the script it
// fails the test.
func scriptedUpstream(t *testing.T, contentType string, bodies ...string) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		i := n
		n++
		mu.Unlock()
		if i >= len(bodies) {
			t.Errorf("unscripted request %d", i+1)
			http.Error(w, "unscripted", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", contentType)
		fmt.Fprint(w, bodies[i])
	}))
	t.Cleanup(srv.Close)
	return srv
}

// jsonOf marshals v, failing the test on error.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// validTrajectory checks traj validates and returns it indented, for a golden file.
func validTrajectory(t *testing.T, traj *atif.Trajectory) []byte {
	t.Helper()
	if traj == nil {
		t.Fatal("no trajectory")
	}
	if err := traj.Validate(); err != nil {
		t.Fatalf("invalid trajectory: %v", err)
	}
	b, err := json.MarshalIndent(traj, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// send posts each body to path through the gateway in session s, in order.
func (f gatewayFixture) send(t *testing.T, s *Session, path string, bodies ...string) {
	t.Helper()
	for i, b := range bodies {
		if r := f.do(t, http.MethodPost, path, s.Token(), b); r.Status != http.StatusOK {
			t.Fatalf("request %d: %d %s", i+1, r.Status, r.Body)
		}
	}
}

// TestGatewayTrajectoryChatCompletions: three requests of a Chat Completions agent loop become
// the last request's conversation (each message once, not once per request) plus the last
// answer; each call's result sits on the step that made it, and the i-th agent step carries
// the i-th request's tokens.
func TestGatewayTrajectoryChatCompletions(t *testing.T) {
	up := agenttest.NewScript(t,
		agenttest.ToolCalls(10, 2, call("c1", "shell", jsonArgs("command", "ls"))),
		agenttest.ToolCalls(20, 3, call("c2", "read_file", jsonArgs("path", "a.txt")), call("c3", "read_file", `{"path":`)),
		agenttest.Text("All done.", 30, 4))
	f := serveGateway(t, up.BaseURL(), func(c *Config) { c.Name = "my-cli" })
	s, err := f.g.Open("job", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	conv := []any{
		map[string]any{"role": "system", "content": "You are a coding CLI."},
		map[string]any{"role": "developer", "content": "Be brief."},
		map[string]any{"role": "user", "content": "list and read the files"},
	}
	first := jsonOf(t, map[string]any{"model": "cli-default", "messages": conv})
	conv = append(conv,
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
			map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "shell", "arguments": `{"command":"ls"}`}}}},
		map[string]any{"role": "tool", "tool_call_id": "c1", "content": "a.txt\nb.txt"})
	second := jsonOf(t, map[string]any{"messages": conv})
	conv = append(conv,
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "Reading a.txt."}}, "tool_calls": []any{
			map[string]any{"id": "c2", "type": "function", "function": map[string]any{"name": "read_file", "arguments": `{"path":"a.txt"}`}},
			map[string]any{"id": "c3", "type": "function", "function": map[string]any{"name": "read_file", "arguments": `{"path":`}}}},
		map[string]any{"role": "tool", "tool_call_id": "c2", "content": []any{map[string]any{"type": "text", "text": "alpha"}, map[string]any{"type": "text", "text": "beta"}}},
		map[string]any{"role": "tool", "tool_call_id": "c3", "content": "error: malformed arguments"})
	third := jsonOf(t, map[string]any{"messages": conv})
	f.send(t, s, "/v1/chat/completions", first, second, third)

	traj := s.Trajectory()
	got := validTrajectory(t, traj)
	sources := make([]string, len(traj.Steps))
	for i, st := range traj.Steps {
		sources[i] = st.Source
	}
	if strings.Join(sources, ",") != "system,system,user,agent,agent,agent" {
		t.Fatalf("step sources %v", sources)
	}
	if a := traj.Agent; a.Name != "my-cli" || a.Version != agent.CommandAgentVersion || a.ModelName != "gw-model" {
		t.Errorf("agent %+v", a)
	}
	read := traj.Steps[4]
	if read.Message != "Reading a.txt." || len(read.ToolCalls) != 2 || string(read.ToolCalls[1].Arguments) != `{"_raw":"{\"path\":"}` {
		t.Errorf("second turn %+v", read)
	}
	if r := read.Observation.Results; len(r) != 2 || r[0].SourceCallID != "c2" || r[0].Content != "alpha\nbeta" {
		t.Errorf("second turn's results %+v", r)
	}
	// Price: 1 per prompt token, 2 per completion token.
	for i, want := range []atif.Metrics{{PromptTokens: 10, CompletionTokens: 2, CostUSD: 14}, {PromptTokens: 20, CompletionTokens: 3, CostUSD: 26}, {PromptTokens: 30, CompletionTokens: 4, CostUSD: 38}} {
		if m := traj.Steps[3+i].Metrics; m == nil || *m != want {
			t.Errorf("step %d metrics %+v, want %+v", 4+i, m, want)
		}
	}
	if fm := traj.FinalMetrics; fm == nil || fm.TotalPromptTokens != 60 || fm.TotalCompletionTokens != 9 || fm.TotalSteps != 6 {
		t.Errorf("final metrics %+v", fm)
	}
	sftest.Golden(t, filepath.Join("testdata", "trajectory", "chat.json"), got)
}

// TestGatewayTrajectoryResponses: the same through the Responses API: instructions, input
// messages with content parts, an assistant message and its function calls as one agent step,
// function_call_output items as their results, the answer's output items as the last step.
func TestGatewayTrajectoryResponses(t *testing.T) {
	up := scriptedUpstream(t, "application/json",
		`{"object":"response","model":"up-model","output":[{"type":"reasoning","summary":[]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Let me look."}]},{"type":"function_call","call_id":"fc1","name":"shell","arguments":"{\"command\":\"cat notes.md\"}"},{"type":"function_call","call_id":"fc2","name":"shell","arguments":"{\"command\":\"ls\"}"}],"usage":{"input_tokens":11,"output_tokens":3}}`,
		`{"object":"response","model":"up-model","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"The notes say hi."}]},{"type":"custom_tool_call","call_id":"ct1","name":"apply_patch","input":"*** Begin Patch"}],"usage":{"input_tokens":25,"output_tokens":5}}`)
	f := serveGateway(t, up.URL+"/v1", nil)
	s, err := f.g.Open("job", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	input := []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_text", "text": "read the notes"}}}}
	first := jsonOf(t, map[string]any{"instructions": "You are a terminal agent.", "input": input})
	input = append(input,
		map[string]any{"type": "reasoning", "summary": []any{}, "encrypted_content": "opaque"},
		map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "Let me look."}}},
		map[string]any{"type": "function_call", "call_id": "fc1", "name": "shell", "arguments": `{"command":"cat notes.md"}`},
		map[string]any{"type": "function_call", "call_id": "fc2", "name": "shell", "arguments": `{"command":"ls"}`},
		map[string]any{"type": "function_call_output", "call_id": "fc1", "output": "hi"},
		map[string]any{"type": "function_call_output", "call_id": "fc2", "output": []any{map[string]any{"type": "input_text", "text": "notes.md"}}})
	second := jsonOf(t, map[string]any{"instructions": "You are a terminal agent.", "input": input, "stream": false})
	f.send(t, s, "/v1/responses", first, second)

	traj := s.Trajectory()
	got := validTrajectory(t, traj)
	if len(traj.Steps) != 4 {
		t.Fatalf("%d steps, want system, user, agent, agent:\n%s", len(traj.Steps), got)
	}
	if traj.Agent.Name != agent.CommandAgentName {
		t.Errorf("agent name %q, want %q for a gateway without a name", traj.Agent.Name, agent.CommandAgentName)
	}
	turn := traj.Steps[2]
	if turn.Message != "Let me look." || len(turn.ToolCalls) != 2 || turn.Observation == nil || len(turn.Observation.Results) != 2 ||
		turn.Observation.Results[1].Content != "notes.md" || turn.Metrics == nil || turn.Metrics.PromptTokens != 11 {
		t.Errorf("first turn %+v", turn)
	}
	last := traj.Steps[3]
	if last.Message != "The notes say hi." || last.ModelName != "up-model" || len(last.ToolCalls) != 1 ||
		string(last.ToolCalls[0].Arguments) != `{"_raw":"*** Begin Patch"}` || last.Metrics == nil || last.Metrics.CompletionTokens != 5 {
		t.Errorf("last step %+v", last)
	}
	sftest.Golden(t, filepath.Join("testdata", "trajectory", "responses.json"), got)
}

// TestGatewayTrajectoryStreamedAnswer: a streamed last answer is assembled from its events:
// Chat Completions content and tool call deltas, a Responses stream's completed response.
func TestGatewayTrajectoryStreamedAnswer(t *testing.T) {
	tests := []struct {
		name, path, body, stream string
		wantMessage              string
		wantCalls                []atif.ToolCall
		wantTokens               [2]int64
	}{
		{
			name: "chat", path: "/v1/chat/completions",
			body: `{"stream":true,"messages":[{"role":"user","content":"go"}]}`,
			stream: `data: {"model":"up-model","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}` + "\n\n" +
				`data: {"choices":[{"index":0,"delta":{"content":"lo"}}]}` + "\n\n" +
				`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"s1","function":{"name":"shell","arguments":"{\"comm"}}]}}]}` + "\n\n" +
				`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"and\":\"ls\"}"}}]}}]}` + "\n\n" +
				`data: {"choices":[{"index":1,"delta":{"content":"another choice"}}]}` + "\n\n" +
				`data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":6}}` + "\n\n" +
				"data: [DONE]\n\n",
			wantMessage: "Hello",
			wantCalls:   []atif.ToolCall{{ToolCallID: "s1", FunctionName: "shell", Arguments: json.RawMessage(`{"command":"ls"}`)}},
			wantTokens:  [2]int64{7, 6},
		},
		{
			name: "responses", path: "/v1/responses",
			body: `{"stream":true,"input":"go"}`,
			stream: "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hel\"}\n\n" +
				"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"lo\"}\n\n" +
				"event: response.completed\ndata: " + `{"type":"response.completed","response":{"model":"up-model","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hello"}]}],"usage":{"input_tokens":8,"output_tokens":2}}}` + "\n\n",
			wantMessage: "Hello",
			wantTokens:  [2]int64{8, 2},
		},
		{
			name: "responses without a completed event: the text deltas", path: "/v1/responses",
			body: `{"stream":true,"input":"go"}`,
			stream: "data: {\"type\":\"response.output_text.delta\",\"delta\":\"Par\"}\n\n" +
				"data: {\"type\":\"response.output_text.delta\",\"delta\":\"tial\"}\n\n" +
				`data: {"type":"response.failed","response":{"usage":{"input_tokens":8,"output_tokens":2}}}` + "\n\n",
			wantMessage: "Partial",
			wantTokens:  [2]int64{8, 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := scriptedUpstream(t, "text/event-stream", tt.stream)
			f := serveGateway(t, up.URL+"/v1", nil)
			s, err := f.g.Open("job", Budget{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			f.send(t, s, tt.path, tt.body)
			traj := s.Trajectory()
			validTrajectory(t, traj)
			if len(traj.Steps) != 2 || traj.Steps[0].Source != atif.SourceUser || traj.Steps[0].Message != "go" {
				t.Fatalf("steps %+v", traj.Steps)
			}
			last := traj.Steps[1]
			if last.Source != atif.SourceAgent || last.Message != tt.wantMessage || last.Extra["streamed"] != true {
				t.Errorf("last step %+v, want the message %q, streamed", last, tt.wantMessage)
			}
			if len(last.ToolCalls) != len(tt.wantCalls) {
				t.Fatalf("tool calls %+v, want %+v", last.ToolCalls, tt.wantCalls)
			}
			for i, c := range last.ToolCalls {
				w := tt.wantCalls[i]
				if c.ToolCallID != w.ToolCallID || c.FunctionName != w.FunctionName || string(c.Arguments) != string(w.Arguments) {
					t.Errorf("tool call %d %+v (%s), want %+v (%s)", i, c, c.Arguments, w, w.Arguments)
				}
			}
			if m := last.Metrics; m == nil || m.PromptTokens != tt.wantTokens[0] || m.CompletionTokens != tt.wantTokens[1] {
				t.Errorf("metrics %+v, want %v", m, tt.wantTokens)
			}
		})
	}
}

// TestGatewayTrajectoryKeepsTheLastRequest: with requests in flight together, the trajectory
// is the last forwarded request's conversation and the answer to it, with its own tokens,
// even when an earlier request is answered after it.
func TestGatewayTrajectoryKeepsTheLastRequest(t *testing.T) {
	release := make(chan struct{})
	up := agenttest.NewFunc(t, func(_ int, r agenttest.Request) agenttest.Reply {
		q, _ := r.Messages()[0]["content"].(string)
		if q == "first" {
			<-release
			return agenttest.Text("to first", 5, 1)
		}
		return agenttest.Text("to second", 7, 2)
	})
	f := serveGateway(t, up.BaseURL(), nil)
	s, err := f.g.Open("job", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The first request from a goroutine, which must not fail the test itself.
	first, err := http.NewRequest(http.MethodPost, "http://gateway/v1/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"first"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	first.Header.Set("Authorization", "Bearer "+s.Token())
	done := make(chan int, 1)
	go func() {
		resp, err := f.client.Do(first)
		if err != nil {
			done <- 0
			return
		}
		_ = resp.Body.Close()
		done <- resp.StatusCode
	}()
	sftest.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return up.Count() == 1 }, "the first request never reached the upstream")
	f.send(t, s, "/v1/chat/completions", `{"messages":[{"role":"user","content":"second"}]}`)
	close(release)
	if status := <-done; status != http.StatusOK {
		t.Fatalf("first request: status %d", status)
	}

	traj := s.Trajectory()
	got := validTrajectory(t, traj)
	if len(traj.Steps) != 2 || traj.Steps[0].Message != "second" || traj.Steps[1].Message != "to second" ||
		traj.Steps[1].Metrics == nil || traj.Steps[1].Metrics.PromptTokens != 7 {
		t.Errorf("want the second request and its answer with its tokens:\n%s", got)
	}
	if n, _ := traj.Extra["unmatched_requests"].(int); n != 1 {
		t.Errorf("unmatched requests %v, want the first one", traj.Extra["unmatched_requests"])
	}
}

// TestGatewayTrajectoryRedactsTheKey: the real key, should the upstream echo it, is no more in
// the trajectory than in the answers the CLI gets, even spelled across a stream's deltas.
func TestGatewayTrajectoryRedactsTheKey(t *testing.T) {
	half := len(realKey) / 2
	tests := []struct{ name, contentType, body, request string }{
		{"answer", "application/json",
			`{"choices":[{"message":{"role":"assistant","content":"the key is ` + realKey + `","tool_calls":[{"id":"k","type":"function","function":{"name":"f","arguments":"{\"key\":\"` + realKey + `\"}"}}]}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`,
			`{"messages":[{"role":"user","content":"q"}]}`},
		{"stream", "text/event-stream",
			`data: {"choices":[{"index":0,"delta":{"content":"the key is ` + realKey[:half] + `"}}]}` + "\n\n" +
				`data: {"choices":[{"index":0,"delta":{"content":"` + realKey[half:] + `"}}]}` + "\n\n" +
				`data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}` + "\n\ndata: [DONE]\n\n",
			`{"stream":true,"messages":[{"role":"user","content":"q"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := scriptedUpstream(t, tt.contentType, tt.body)
			f := serveGateway(t, up.URL+"/v1", nil)
			s, err := f.g.Open("job", Budget{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			f.send(t, s, "/v1/chat/completions", tt.request)
			got := validTrajectory(t, s.Trajectory())
			if strings.Contains(string(got), realKey) || !strings.Contains(string(got), "the key is [redacted]") {
				t.Errorf("want the key redacted in the trajectory:\n%s", got)
			}
		})
	}
}

// TestGatewayTrajectorySkipsMalformedMessages: whatever a CLI sends that the gateway forwards,
// the trajectory validates: messages that are not messages are skipped and counted, a call
// without a name is left out, one without an id gets one, and a result whose call is in no
// step goes to the latest agent step without a source_call_id (never an orphan).
func TestGatewayTrajectorySkipsMalformedMessages(t *testing.T) {
	tests := []struct {
		name, path string
		body       any
		// want is each step as "source:message:calls:results", results as source_call_id or
		// "-" for one without.
		want        []string
		wantSkipped int
	}{
		{
			name: "chat", path: "/v1/chat/completions",
			body: map[string]any{"messages": []any{
				42,
				map[string]any{"role": "tool", "tool_call_id": "early", "content": "before any agent step"},
				map[string]any{"role": 7, "content": "a number for a role"},
				map[string]any{"role": "narrator", "content": "an unknown role"},
				map[string]any{"role": "user", "content": 3.5},
				map[string]any{"role": "user", "content": []any{"plain", map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,AAAA"}}, 5}},
				map[string]any{"role": "assistant", "content": "", "tool_calls": []any{
					map[string]any{"id": "n1", "type": "function", "function": map[string]any{"arguments": "{}"}},
					map[string]any{"type": "function", "function": map[string]any{"name": "shell", "arguments": map[string]any{"command": "pwd"}}}}},
				map[string]any{"role": "tool", "tool_call_id": "n1", "content": "the nameless call's result"},
				map[string]any{"role": "tool", "content": "a result naming no call"},
			}},
			want: []string{"user:plain::", "agent::step2-call1:-,-", "agent:ok::"},
			// 42, the early result, the numeric role, the unknown role, the numeric content.
			wantSkipped: 5,
		},
		{
			name: "responses", path: "/v1/responses",
			body: map[string]any{"instructions": "sys", "input": []any{
				"a bare string",
				map[string]any{"type": "function_call_output", "call_id": "x", "output": "before any agent step"},
				map[string]any{"type": "mystery_item", "id": "r1"},
				map[string]any{"role": "critic", "content": "an unknown role"},
				map[string]any{"type": "function_call", "name": "shell", "arguments": "not json"},
				map[string]any{"type": "function_call_output", "call_id": "x", "output": "a result naming no call"},
				map[string]any{"type": "function_call_output", "call_id": "y", "output": map[string]any{"not": "text"}},
			}},
			want:        []string{"system:sys::", "agent::step2-call1:-", "agent:ok::"},
			wantSkipped: 5,
		},
		{
			name: "responses input as one string", path: "/v1/responses",
			body: map[string]any{"input": "just a question"},
			want: []string{"user:just a question::", "agent:ok::"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			answer := chatAnswerBody
			if tt.path == "/v1/responses" {
				answer = `{"object":"response","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]}],"usage":{"input_tokens":3,"output_tokens":2}}`
			}
			up := scriptedUpstream(t, "application/json", answer)
			f := serveGateway(t, up.URL+"/v1", nil)
			s, err := f.g.Open("job", Budget{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			f.send(t, s, tt.path, jsonOf(t, tt.body))
			traj := s.Trajectory()
			got := validTrajectory(t, traj)
			var steps []string
			for _, st := range traj.Steps {
				var calls, results []string
				for _, c := range st.ToolCalls {
					calls = append(calls, c.ToolCallID)
				}
				if st.Observation != nil {
					for _, r := range st.Observation.Results {
						results = append(results, cmpOr(r.SourceCallID, "-"))
					}
				}
				steps = append(steps, fmt.Sprintf("%s:%s:%s:%s", st.Source, st.Message, strings.Join(calls, ","), strings.Join(results, ",")))
			}
			if strings.Join(steps, " | ") != strings.Join(tt.want, " | ") {
				t.Errorf("steps\n%s\nwant\n%s\n%s", strings.Join(steps, " | "), strings.Join(tt.want, " | "), got)
			}
			if n, _ := traj.Extra["skipped_messages"].(int); n != tt.wantSkipped {
				t.Errorf("skipped %v, want %d", traj.Extra["skipped_messages"], tt.wantSkipped)
			}
		})
	}
}

func cmpOr(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}

// TestSessionTrajectoryBounds: the session keeps a bounded number of per-request usages and a
// bounded answer, and a session without requests still gives a valid document.
func TestSessionTrajectoryBounds(t *testing.T) {
	f := serveGateway(t, "http://127.0.0.1:1/v1", nil)
	s, err := f.g.Open("job", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	empty := s.Trajectory()
	validTrajectory(t, empty)
	if len(empty.Steps) != 0 || empty.Notes == "" {
		t.Errorf("empty session: %+v", empty)
	}

	req := &chatRequest{params: map[string]json.RawMessage{"messages": json.RawMessage(`[{"role":"user","content":"q"}]`)}}
	seq := s.observe(Generate, req)
	long := strings.Repeat("é", maxAnswerText) // twice the cap in bytes
	ans := chatAnswer([]byte(jsonOf(t, map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": long}}}})))
	for range maxTrajectoryRequests + 5 {
		s.recordAnswer(seq, false, Tokens{Prompt: 1, Completion: 1}, ans, 0)
	}
	s.mu.Lock()
	kept := len(s.traj.usage)
	s.mu.Unlock()
	if kept != maxTrajectoryRequests {
		t.Errorf("kept %d usages, want the bound %d", kept, maxTrajectoryRequests)
	}
	traj := s.Trajectory()
	if err := traj.Validate(); err != nil {
		t.Fatal(err)
	}
	last := traj.Steps[len(traj.Steps)-1]
	if len(last.Message) > maxAnswerText || !strings.HasPrefix(long, last.Message) || last.Extra["incomplete"] != true {
		t.Errorf("answer of %d bytes kept as %d bytes, extra %v: want it cut to %d on a rune boundary, marked incomplete",
			len(long), len(last.Message), last.Extra, maxAnswerText)
	}
	if n, _ := traj.Extra["unmatched_requests"].(int); n != maxTrajectoryRequests+5-1 {
		t.Errorf("unmatched requests %v, want %d", traj.Extra["unmatched_requests"], maxTrajectoryRequests+5-1)
	}
}

// FuzzTrajectoryBuilder: no conversation, however malformed, panics the builder or makes an
// invalid document.
func FuzzTrajectoryBuilder(f *testing.F) {
	for _, seed := range []string{
		`[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a","content":"x"}]`,
		`[{"type":"function_call","call_id":"a","name":"f","arguments":"{"},{"type":"function_call_output","call_id":"a","output":[{"text":"x"}]}]`,
		`[{"role":"tool","content":null},{"role":"assistant","content":[{"refusal":"no"}]},null,[],"s"]`,
		`"just text"`,
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, conv []byte, responses bool) {
		b := &trajectoryBuilder{t: &atif.Trajectory{SchemaVersion: atif.SchemaVersion, Agent: atif.Agent{Name: "a", Version: "1"}},
			byCall: map[string]int{}, open: -1}
		var a *Turn
		if responses {
			b.conversation((&responsesRequest{params: map[string]json.RawMessage{"instructions": json.RawMessage(`"sys"`), "input": conv}}).Conversation())
			a = responsesAnswer(conv)
		} else {
			b.conversation((&chatRequest{params: map[string]json.RawMessage{"messages": conv}}).Conversation())
			a = chatAnswer(conv)
		}
		if a != nil {
			a.bound()
			b.answer(a)
		}
		if err := b.t.Validate(); err != nil {
			t.Fatalf("invalid trajectory from %q: %v", conv, err)
		}
	})
}

// TestAnswerIsBounded: an answer keeps at most maxAnswerText bytes of message and arguments
// together, and maxAnswerCalls calls; what is cut is marked incomplete.
func TestAnswerIsBounded(t *testing.T) {
	args := `{"command":"` + strings.Repeat("x", 100) + `"}`
	manyCalls := make([]any, maxAnswerCalls+1)
	for i := range manyCalls {
		manyCalls[i] = map[string]any{"id": fmt.Sprint(i), "type": "function", "function": map[string]any{"name": "f", "arguments": "{}"}}
	}
	tests := []struct {
		name           string
		message        string
		calls          []any
		wantMessageLen int
		wantArgs       string // the first call's arguments as kept (a JSON string)
		wantCalls      int
		wantIncomplete bool
	}{
		{"within the bounds", "short", []any{map[string]any{"id": "a", "type": "function", "function": map[string]any{"name": "f", "arguments": args}}},
			5, string(mustJSON(args)), 1, false},
		{"arguments past what the message left", strings.Repeat("m", maxAnswerText-10), []any{map[string]any{"id": "a", "type": "function", "function": map[string]any{"name": "f", "arguments": args}}},
			maxAnswerText - 10, string(mustJSON(`{"command"`)), 1, true},
		{"too many calls", "", manyCalls, 0, `"{}"`, maxAnswerCalls, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := jsonOf(t, map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": tt.message, "tool_calls": tt.calls}}}})
			a := chatAnswer([]byte(body))
			if a == nil {
				t.Fatal("no answer")
			}
			a.bound()
			if len(a.Text) != tt.wantMessageLen || len(a.Calls) != tt.wantCalls || a.Incomplete != tt.wantIncomplete {
				t.Errorf("message of %d bytes, %d calls, incomplete %v; want %d, %d, %v", len(a.Text), len(a.Calls), a.Incomplete, tt.wantMessageLen, tt.wantCalls, tt.wantIncomplete)
			}
			if len(a.Calls) > 0 && string(a.Calls[0].Args) != tt.wantArgs {
				t.Errorf("first call's arguments %s, want %s", a.Calls[0].Args, tt.wantArgs)
			}
		})
	}
}

func call(id, name, args string) agenttest.Call {
	return agenttest.Call{ID: id, Name: name, Arguments: args}
}

// jsonArgs is a JSON object of string pairs, as a model writes tool arguments.
func jsonArgs(kv ...string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return string(mustJSON(m))
}
