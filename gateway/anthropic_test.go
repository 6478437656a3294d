package gateway

import (
	"bytes"
	"cmp"
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

	asdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/skillfleet/skillfleet/activation"
	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/agent/agenttest"
	"github.com/skillfleet/skillfleet/atif"
)

// anthropicCall is one request an Anthropic upstream received.
type anthropicCall struct {
	Method, URL string // URL: path and query
	Header      http.Header
	Body        []byte
}

// anthropicReply is what an Anthropic upstream answers.
type anthropicReply struct {
	Status int
	Header map[string]string
	Body   string
}

// anthropicUpstream is an Anthropic Messages server that records every request, token
// counts included, and answers with answer.
type anthropicUpstream struct {
	*httptest.Server
	mu    sync.Mutex
	calls []anthropicCall
}

func newAnthropicUpstream(t *testing.T, answer func(c anthropicCall) anthropicReply) *anthropicUpstream {
	t.Helper()
	u := &anthropicUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c := anthropicCall{Method: r.Method, URL: r.URL.RequestURI(), Header: r.Header.Clone(), Body: b}
		u.mu.Lock()
		u.calls = append(u.calls, c)
		u.mu.Unlock()
		rep := answer(c)
		for k, v := range rep.Header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(cmp.Or(rep.Status, http.StatusOK))
		_, _ = io.WriteString(w, rep.Body)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *anthropicUpstream) received() []anthropicCall {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.calls)
}

// anthropicSSE is a Messages stream as the API documents it: the prompt's tokens (with the
// cache's parts) in message_start, a thinking block, a text block, a tool_use whose input
// comes in pieces, and the cumulative output count in message_delta.
const anthropicSSE = "event: message_start\n" +
	`data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":200,"cache_read_input_tokens":3000,"output_tokens":1}}}` + "\n\n" +
	"event: ping\ndata: {\"type\": \"ping\"}\n\n" +
	"event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}` + "\n\n" +
	"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"TestParse fails; "}}` + "\n\n" +
	"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"read the test."}}` + "\n\n" +
	"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCkYI"}}` + "\n\n" +
	"event: content_block_stop\n" + `data: {"type":"content_block_stop","index":0}` + "\n\n" +
	"event: content_block_start\n" + `data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}` + "\n\n" +
	"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"TestParse fails."}}` + "\n\n" +
	"event: content_block_stop\n" + `data: {"type":"content_block_stop","index":1}` + "\n\n" +
	"event: content_block_start\n" + `data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_02","name":"Read","input":{}}}` + "\n\n" +
	"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}` + "\n\n" +
	"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"file_path\": \"/workspace/"}}` + "\n\n" +
	"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"pkg/parse_test.go\"}"}}` + "\n\n" +
	"event: content_block_stop\n" + `data: {"type":"content_block_stop","index":2}` + "\n\n" +
	"event: message_delta\n" + `data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":25}}` + "\n\n" +
	"event: message_stop\n" + `data: {"type":"message_stop"}` + "\n\n"

// anthropicJSONAnswer is a message answer with the same usage as anthropicSSE's.
const anthropicJSONAnswer = `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":200,"cache_read_input_tokens":3000,"output_tokens":25}}`

// anthropicAnswers answers token counts with a count, streams with anthropicSSE and the rest
// with anthropicJSONAnswer.
func anthropicAnswers(c anthropicCall) anthropicReply {
	if strings.HasPrefix(c.URL, "/v1/messages/count_tokens") {
		return anthropicReply{Header: map[string]string{"Content-Type": "application/json"}, Body: `{"input_tokens":1234}`}
	}
	var body struct{ Stream bool }
	_ = json.Unmarshal(c.Body, &body)
	if body.Stream {
		return anthropicReply{Header: map[string]string{"Content-Type": "text/event-stream", "Request-Id": "req_01"}, Body: anthropicSSE}
	}
	return anthropicReply{Header: map[string]string{"Content-Type": "application/json", "Request-Id": "req_01"}, Body: anthropicJSONAnswer}
}

// serveAnthropic serves a gateway configured for the Anthropic API in front of baseURL.
func serveAnthropic(t *testing.T, baseURL string, edit func(*Config)) gatewayFixture {
	t.Helper()
	return serveGateway(t, baseURL, func(c *Config) {
		c.API = APIAnthropic
		if edit != nil {
			edit(c)
		}
	})
}

// anthropicError is Anthropic's error shape.
type anthropicError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Code    string `json:"code"`
	} `json:"error"`
}

// sdkClient is the official SDK's client of session s, without retries.
func sdkClient(f gatewayFixture, s *Session) asdk.Client {
	return asdk.NewClient(option.WithoutEnvironmentDefaults(), option.WithHTTPClient(f.client),
		option.WithBaseURL("http://gateway/"), option.WithAPIKey(s.Token()), option.WithMaxRetries(0))
}

// keyWatch is an http.RoundTripper that keeps everything the gateway answered a client,
// headers and bodies (streams as they are read), to check that the real key is never in it.
type keyWatch struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen bytes.Buffer
}

func (k *keyWatch) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := k.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	fmt.Fprint(&k.seen, resp.Header)
	k.mu.Unlock()
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.TeeReader(resp.Body, k), resp.Body}
	return resp, nil
}

func (k *keyWatch) Write(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.seen.Write(p)
}

func (k *keyWatch) String() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.seen.String()
}

// The official Go SDK, as a CLI would use it, runs a two-turn tool-using conversation through
// the gateway, streamed and not: the upstream sees the real key and never the job's token,
// the client never sees the key, usage (cache reads and writes included) is metered exactly
// and priced at the cache prices, the trajectory holds the calls, results, reasoning and
// per-step tokens, and the skill whose body came back in a tool_result is activated at the
// second turn.
func TestAnthropicSDKToolConversation(t *testing.T) {
	skillFile := "---\nname: release-notes\ndescription: Writes release notes.\n---\n" + fixtureBody
	turns := []agenttest.Turn{
		{Thinking: "The skill says how; read it first.", Text: "Reading the skill.",
			Calls: []agenttest.Call{{ID: "toolu_01", Name: "Bash", Arguments: `{"command":"cat .claude/skills/release-notes/SKILL.md"}`}},
			Usage: agenttest.Tokens{Prompt: 100, Completion: 30, CacheRead: 60, CacheWrite: 20}},
		{Text: "Release notes written to CHANGELOG.md.",
			Usage: agenttest.Tokens{Prompt: 150, Completion: 12, CacheRead: 80, CacheWrite: 10}},
	}
	price := agent.Price{PromptPerMTok: 1e6, CompletionPerMTok: 2e6, CacheReadPerMTok: 1e5, CacheWritePerMTok: 1.25e6}
	// Per token: 1 plain prompt, 0.1 read from the cache, 1.25 written to it, 2 output.
	// Turn 1: 20 + 6 + 25 + 60; turn 2: 60 + 8 + 12.5 + 24.
	const wantCost = 111 + 104.5
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			up := agenttest.NewAnthropic(t, func(n int, r agenttest.Request) agenttest.Reply {
				if n >= len(turns) {
					t.Errorf("unscripted request %d", n+1)
					return agenttest.AnthropicFail(http.StatusBadRequest)
				}
				return agenttest.AnthropicTurn(turns[n], agenttest.ParseConv(r).Stream)
			})
			f := serveAnthropic(t, up.URL, func(c *Config) { c.Price = price })
			det := activation.New([]activation.Skill{{Name: "release-notes", Body: fixtureBody}})
			s, err := f.g.Open("job", Budget{}, det)
			if err != nil {
				t.Fatal(err)
			}
			watch := &keyWatch{next: f.client.Transport}
			client := asdk.NewClient(option.WithoutEnvironmentDefaults(), option.WithHTTPClient(&http.Client{Transport: watch}),
				option.WithBaseURL("http://gateway/"), option.WithAPIKey(s.Token()), option.WithMaxRetries(0))
			params := asdk.MessageNewParams{
				Model: "claude-sonnet-4-6", MaxTokens: 4096,
				Thinking: asdk.ThinkingConfigParamOfEnabled(2048),
				System:   []asdk.TextBlockParam{{Text: "You are an agent. Skills: release-notes (Writes release notes.)"}},
				Tools: []asdk.ToolUnionParam{asdk.ToolUnionParamOfTool(asdk.ToolInputSchemaParam{
					Properties: map[string]any{"command": map[string]any{"type": "string"}}, Required: []string{"command"}}, "Bash")},
				Messages: []asdk.MessageParam{asdk.NewUserMessage(asdk.NewTextBlock("write the release notes"))},
			}
			ask := func() *asdk.Message {
				t.Helper()
				if !stream {
					msg, err := client.Messages.New(context.Background(), params)
					if err != nil {
						t.Fatal(err)
					}
					return msg
				}
				st := client.Messages.NewStreaming(context.Background(), params)
				defer func() { _ = st.Close() }()
				msg := asdk.Message{}
				for st.Next() {
					if err := msg.Accumulate(st.Current()); err != nil {
						t.Fatal(err)
					}
				}
				if err := st.Err(); err != nil {
					t.Fatal(err)
				}
				return &msg
			}

			first := ask()
			if len(first.Content) != 3 || first.Content[0].Thinking != turns[0].Thinking || first.Content[1].Text != turns[0].Text ||
				first.Content[2].Name != "Bash" || first.Content[2].ID != "toolu_01" || string(first.Content[2].Input) != turns[0].Calls[0].Arguments {
				t.Fatalf("first answer %+v", first.Content)
			}
			if u := first.Usage; u.InputTokens != 20 || u.CacheReadInputTokens != 60 || u.CacheCreationInputTokens != 20 || u.OutputTokens != 30 {
				t.Errorf("first answer's usage %+v, want the upstream's", u)
			}
			if got := s.Activations(); len(got) != 0 {
				t.Fatalf("activated before the body was read: %v", got)
			}
			params.Messages = append(params.Messages, first.ToParam(),
				asdk.NewUserMessage(asdk.NewToolResultBlock("toolu_01", skillFile, false)))
			second := ask()
			if len(second.Content) != 1 || second.Content[0].Text != turns[1].Text || second.StopReason != asdk.StopReasonEndTurn {
				t.Fatalf("second answer %+v", second)
			}

			if u := s.Usage(); u.PromptTokens != 250 || u.CompletionTokens != 42 || u.CacheReadTokens != 140 || u.CacheWriteTokens != 30 || u.Cost != wantCost {
				t.Errorf("usage %+v, want 250 prompt (140 read, 30 written), 42 completion, cost %v", u, wantCost)
			}
			if s.Requests() != 2 || s.Turns() != 2 {
				t.Errorf("%d requests, %d turns; want 2 and 2", s.Requests(), s.Turns())
			}
			if got, want := s.Activations(), []activation.Activation{{Skill: "release-notes", Turn: 2}}; !slices.Equal(got, want) {
				t.Errorf("activations %v, want %v", got, want)
			}

			reqs := up.Requests()
			if len(reqs) != 2 {
				t.Fatalf("upstream got %d requests, want 2", len(reqs))
			}
			for i, r := range reqs {
				if r.Path != "/v1/messages" || r.Header.Get("X-Api-Key") != realKey || r.Header.Get("Authorization") != "" {
					t.Errorf("request %d: %s with x-api-key %q, Authorization %q; want /v1/messages with the real key only",
						i+1, r.Path, r.Header.Get("X-Api-Key"), r.Header.Get("Authorization"))
				}
				if strings.Contains(fmt.Sprint(r.Header), s.Token()) || bytes.Contains(r.Body, []byte(s.Token())) {
					t.Errorf("request %d: the job's token reached the upstream", i+1)
				}
				p := r.Params()
				var wantStream any // the SDK sends no stream field for a JSON answer
				if stream {
					wantStream = true
				}
				if p["model"] != "gw-model" || p["max_tokens"] != 4096.0 || p["stream"] != wantStream {
					t.Errorf("request %d: model %v, max_tokens %v, stream %v", i+1, p["model"], p["max_tokens"], p["stream"])
				}
				if th, _ := p["thinking"].(map[string]any); th["budget_tokens"] != 2048.0 {
					t.Errorf("request %d: thinking %v, want the client's", i+1, p["thinking"])
				}
			}
			if strings.Contains(watch.String(), realKey) {
				t.Error("the real key reached the client")
			}
			if !strings.Contains(watch.String(), `"role":"assistant"`) {
				t.Error("the key watch saw no answer: it checks nothing")
			}

			tr := s.Trajectory()
			if len(tr.Steps) != 4 {
				t.Fatalf("%d steps, want system, user, the tool call and the answer: %+v", len(tr.Steps), tr.Steps)
			}
			sys, user, call, last := tr.Steps[0], tr.Steps[1], tr.Steps[2], tr.Steps[3]
			if sys.Source != atif.SourceSystem || !strings.HasPrefix(sys.Message, "You are an agent.") || user.Source != atif.SourceUser || user.Message != "write the release notes" {
				t.Errorf("steps 1-2: %+v %+v", sys, user)
			}
			if call.Source != atif.SourceAgent || call.Message != turns[0].Text || call.ReasoningContent != turns[0].Thinking ||
				len(call.ToolCalls) != 1 || call.ToolCalls[0].ToolCallID != "toolu_01" || call.ToolCalls[0].FunctionName != "Bash" ||
				string(call.ToolCalls[0].Arguments) != turns[0].Calls[0].Arguments {
				t.Errorf("step 3: %+v", call)
			}
			if o := call.Observation; o == nil || len(o.Results) != 1 || o.Results[0].SourceCallID != "toolu_01" || o.Results[0].Content != skillFile {
				t.Errorf("step 3's observation: %+v", call.Observation)
			}
			if m := call.Metrics; m == nil || m.PromptTokens != 100 || m.CompletionTokens != 30 || m.CachedTokens != 60 || m.CostUSD != 111 || call.Extra[extraCacheWrite] != int64(20) {
				t.Errorf("step 3's metrics %+v, extra %v; want turn 1's", call.Metrics, call.Extra)
			}
			if last.Message != turns[1].Text || last.Metrics == nil || last.Metrics.PromptTokens != 150 || last.Metrics.CompletionTokens != 12 ||
				last.Metrics.CachedTokens != 80 || last.Extra[extraCacheWrite] != int64(10) || (last.Extra["streamed"] == true) != stream {
				t.Errorf("step 4: %+v, metrics %+v", last, last.Metrics)
			}
			if !s.ToolCallsComplete() {
				t.Errorf("the trajectory is incomplete: %v", tr.Extra)
			}
		})
	}
}

// anthropicGolden is a request of testdata/cli.
type anthropicGolden struct {
	Method, Path string
	Headers      map[string]string
	Body         json.RawMessage
}

func readAnthropicGolden(t *testing.T, name string) anthropicGolden {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "cli", name))
	if err != nil {
		t.Fatal(err)
	}
	var g anthropicGolden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

// replayAnthropic sends a golden request through the gateway with the session's token for TOKEN.
func (f gatewayFixture) replayAnthropic(t *testing.T, g anthropicGolden, token string) gwResponse {
	t.Helper()
	var hdr []string
	for k, v := range g.Headers {
		// The client asks for compressed answers; the gateway sends no Accept-Encoding
		// upstream and its answers are plain.
		if !strings.EqualFold(k, "Accept-Encoding") {
			hdr = append(hdr, k, strings.ReplaceAll(v, "TOKEN", token))
		}
	}
	return f.do(t, g.Method, g.Path, "", string(g.Body), hdr...)
}

// checkAnthropicBody compares an upstream body with want field by field.
func checkAnthropicBody(t *testing.T, name string, got []byte, want map[string]any) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(got, &m); err != nil {
		t.Fatalf("%s: upstream body %s: %v", name, got, err)
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if !reflect.DeepEqual(m[k], want[k]) {
			t.Errorf("%s: upstream %q = %v, want %v", name, k, m[k], want[k])
		}
	}
	for k := range m {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: upstream got field %q = %v, which the client did not send", name, k, m[k])
		}
	}
}

func anthropicGoldenBody(t *testing.T, g anthropicGolden) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(g.Body, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Claude Code 2.1's requests (testdata/cli) go through the real handler: the main turn
// (streamed), a title side query and a token count are accepted and forwarded with the
// model forced, the real key, the allowed betas and nothing of Claude Code's own headers;
// the side query and the count are not turns, the count is not metered, and the stream
// reaches the client as the upstream sent it.
func TestAnthropicReplaysClaudeCodeRequests(t *testing.T) {
	main := readAnthropicGolden(t, "claude-code-2.1.messages-stream.json")
	side := readAnthropicGolden(t, "claude-code-2.1.side-query.json")
	count := readAnthropicGolden(t, "claude-code-2.1.count-tokens.json")
	up := newAnthropicUpstream(t, anthropicAnswers)
	// A base URL with /v1, as some configs have it: not doubled.
	f := serveAnthropic(t, up.URL+"/v1", nil)
	s, err := f.g.Open("job", Budget{MaxTokens: 1_000_000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := f.replayAnthropic(t, main, s.Token())
	if r.Status != http.StatusOK || r.Body != anthropicSSE || r.Header.Get("Content-Type") != "text/event-stream" || r.Header.Get("Request-Id") != "req_01" {
		t.Fatalf("main turn: %d %v\n%s\nwant the upstream's stream as it was", r.Status, r.Header, r.Body)
	}
	if r := f.replayAnthropic(t, side, s.Token()); r.Status != http.StatusOK || r.Body != anthropicSSE {
		t.Fatalf("side query: %d %s", r.Status, r.Body)
	}
	if r := f.replayAnthropic(t, count, s.Token()); r.Status != http.StatusOK || r.Body != `{"input_tokens":1234}` {
		t.Fatalf("count: %d %s", r.Status, r.Body)
	}

	calls := up.received()
	if len(calls) != 3 {
		t.Fatalf("upstream got %d requests, want 3", len(calls))
	}
	for i, tc := range []struct {
		g    anthropicGolden
		url  string
		beta string
	}{
		{main, "/v1/messages?beta=true", main.Headers["Anthropic-Beta"]},
		{side, "/v1/messages?beta=true", side.Headers["Anthropic-Beta"]},
		{count, "/v1/messages/count_tokens?beta=true", count.Headers["Anthropic-Beta"]},
	} {
		c := calls[i]
		name := fmt.Sprintf("request %d", i+1)
		if c.Method != http.MethodPost || c.URL != tc.url {
			t.Errorf("%s: %s %s, want POST %s", name, c.Method, c.URL, tc.url)
		}
		if c.Header.Get("X-Api-Key") != realKey || c.Header.Get("Authorization") != "" {
			t.Errorf("%s: x-api-key %q, Authorization %q", name, c.Header.Get("X-Api-Key"), c.Header.Get("Authorization"))
		}
		if got := c.Header.Get("Anthropic-Beta"); got != tc.beta {
			t.Errorf("%s: anthropic-beta %q, want %q", name, got, tc.beta)
		}
		if c.Header.Get("Anthropic-Version") != "2023-06-01" || c.Header.Get("User-Agent") != "claude-cli/2.1.165 (external, sdk-cli)" ||
			c.Header.Get("Accept") != "application/json" {
			t.Errorf("%s: version %q, user agent %q, accept %q", name, c.Header.Get("Anthropic-Version"), c.Header.Get("User-Agent"), c.Header.Get("Accept"))
		}
		for _, h := range []string{"X-App", "X-Claude-Code-Session-Id", "X-Client-Request-Id", "X-Stainless-Os", "X-Stainless-Retry-Count", "Anthropic-Dangerous-Direct-Browser-Access"} {
			if v := c.Header.Get(h); v != "" {
				t.Errorf("%s: header %s reached the upstream: %q", name, h, v)
			}
		}
		if strings.Contains(fmt.Sprint(c.Header), s.Token()) || bytes.Contains(c.Body, []byte(s.Token())) {
			t.Errorf("%s: the job's token reached the upstream", name)
		}
		// What Claude Code sent, with the configured model: its metadata holds user_id only,
		// and under this budget its own max_tokens (32000) is what is reserved and sent.
		want := anthropicGoldenBody(t, tc.g)
		want["model"] = "gw-model"
		checkAnthropicBody(t, name, c.Body, want)
	}

	// Two streams of 3210 prompt tokens (3000 read from the cache, 200 written) and 25
	// output tokens; the count is not metered.
	if u := s.Usage(); u.PromptTokens != 6420 || u.CompletionTokens != 50 || u.CacheReadTokens != 6000 || u.CacheWriteTokens != 400 {
		t.Errorf("usage %+v", u)
	}
	if s.Requests() != 3 || s.Turns() != 1 {
		t.Errorf("%d requests, %d turns; want 3 requests, 1 turn (the side query and the count are not turns)", s.Requests(), s.Turns())
	}
	tr := s.Trajectory()
	if tr.Extra[extraSide] != 2 || tr.Agent.Extra[extraAPI] != APIAnthropic {
		t.Errorf("trajectory extra %v, agent extra %v; want 2 side requests, api anthropic", tr.Extra, tr.Agent.Extra)
	}
	// system, the user's two text blocks, the assistant's turn with its call and result, the
	// streamed answer.
	if len(tr.Steps) != 4 {
		t.Fatalf("%d steps: %+v", len(tr.Steps), tr.Steps)
	}
	sys, user, prev, last := tr.Steps[0], tr.Steps[1], tr.Steps[2], tr.Steps[3]
	if !strings.Contains(sys.Message, "You are Claude Code") || !strings.HasSuffix(user.Message, "\nRun the unit tests in ./pkg and tell me which fail.") {
		t.Errorf("system %q, user %q", sys.Message, user.Message)
	}
	var args map[string]string
	if len(prev.ToolCalls) == 1 {
		_ = json.Unmarshal(prev.ToolCalls[0].Arguments, &args)
	}
	if prev.ReasoningContent != "The user wants the tests run; I'll call Bash." || prev.Message != "I'll run the tests." || len(prev.ToolCalls) != 1 ||
		prev.ToolCalls[0].FunctionName != "Bash" || !maps.Equal(args, map[string]string{"command": "go test ./pkg/...", "description": "Run unit tests in ./pkg"}) {
		t.Errorf("the assistant's turn: %+v", prev)
	}
	if o := prev.Observation; o == nil || len(o.Results) != 1 || o.Results[0].SourceCallID != "toolu_01A2b3C4d5E6f7G8h9J0k1L2" || !strings.HasPrefix(o.Results[0].Content, "--- FAIL: TestParse") {
		t.Errorf("the tool result: %+v", prev.Observation)
	}
	// The main turn's stream: thinking, text and a call whose input came in pieces.
	if last.Message != "TestParse fails." || last.ReasoningContent != "TestParse fails; read the test." || last.ModelName != "claude-sonnet-4-6" ||
		len(last.ToolCalls) != 1 || last.ToolCalls[0].ToolCallID != "toolu_02" || string(last.ToolCalls[0].Arguments) != `{"file_path": "/workspace/pkg/parse_test.go"}` {
		t.Errorf("the streamed answer: %+v", last)
	}
	if m := last.Metrics; m == nil || m.PromptTokens != 3210 || m.CompletionTokens != 25 || m.CachedTokens != 3000 || last.Extra[extraCacheWrite] != int64(200) {
		t.Errorf("the answer's metrics %+v, extra %v", last.Metrics, last.Extra)
	}
}

// Claude Code with ANTHROPIC_AUTH_TOKEN (or an OAuth login) sends its key as a Bearer token
// and more betas: the token is accepted; the betas that only change how the model answers or
// caches are forwarded (redact-thinking, extended-cache-ttl and advanced-tool-use, which
// current Claude Code sends, and fast-mode, which its /fast needs); those that reach beyond
// the sandbox, keep state or need OAuth are dropped one by one, and the trajectory names each.
func TestAnthropicBearerTokenAndBetas(t *testing.T) {
	g := readAnthropicGolden(t, "claude-code-2.1.messages-stream.json")
	delete(g.Headers, "X-Api-Key")
	g.Headers["Authorization"] = "Bearer TOKEN"
	g.Headers["Anthropic-Beta"] = "oauth-2025-04-20, claude-code-20250219,files-api-2025-04-14,interleaved-thinking-2025-05-14,web-search-2025-03-05," +
		"mcp-client-2025-11-20,context-management-2025-06-27,skills-2025-10-02,code-execution-2025-05-22,fast-mode-2026-02-01," +
		"prompt-caching-scope-2026-01-05,advisor-tool-2026-03-01,extended-cache-ttl-2025-04-11,context-1m-2025-08-07,claude-code-20250219," +
		"redact-thinking-2026-02-12,advanced-tool-use-2025-11-20,oauth-2025-04-20"
	delete(g.Headers, "Anthropic-Version")
	up := newAnthropicUpstream(t, anthropicAnswers)
	f := serveAnthropic(t, up.URL, nil)
	s, err := f.g.Open("job", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := f.replayAnthropic(t, g, s.Token()); r.Status != http.StatusOK {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	calls := up.received()
	if len(calls) != 1 {
		t.Fatalf("upstream got %d requests", len(calls))
	}
	h := calls[0].Header
	if want := "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,fast-mode-2026-02-01," +
		"prompt-caching-scope-2026-01-05,extended-cache-ttl-2025-04-11,context-1m-2025-08-07,redact-thinking-2026-02-12,advanced-tool-use-2025-11-20"; h.Get("Anthropic-Beta") != want {
		t.Errorf("anthropic-beta %q, want %q", h.Get("Anthropic-Beta"), want)
	}
	if h.Get("X-Api-Key") != realKey || h.Get("Authorization") != "" || h.Get("Anthropic-Version") != anthropicVersion {
		t.Errorf("x-api-key %q, Authorization %q, version %q", h.Get("X-Api-Key"), h.Get("Authorization"), h.Get("Anthropic-Version"))
	}
	want := []string{"anthropic-beta: oauth-2025-04-20", "anthropic-beta: files-api-2025-04-14", "anthropic-beta: web-search-2025-03-05",
		"anthropic-beta: mcp-client-2025-11-20", "anthropic-beta: skills-2025-10-02", "anthropic-beta: code-execution-2025-05-22",
		"anthropic-beta: advisor-tool-2026-03-01"}
	if got, _ := s.Trajectory().Extra[extraDropped].([]string); !slices.Equal(got, want) {
		t.Errorf("the trajectory's %s: %q\nwant %q", extraDropped, got, want)
	}
}

// A request whose betas are all forwarded leaves no trace of dropping in the trajectory.
func TestAnthropicForwardedBetasAreNotNamed(t *testing.T) {
	g := readAnthropicGolden(t, "claude-code-2.1.messages-stream.json")
	up := newAnthropicUpstream(t, anthropicAnswers)
	f := serveAnthropic(t, up.URL, nil)
	s, err := f.g.Open("job", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := f.replayAnthropic(t, g, s.Token()); r.Status != http.StatusOK {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if calls := up.received(); len(calls) != 1 || calls[0].Header.Get("Anthropic-Beta") != g.Headers["Anthropic-Beta"] {
		t.Fatalf("upstream got %d requests, the first with betas %q", len(calls), calls[0].Header.Get("Anthropic-Beta"))
	}
	if d, ok := s.Trajectory().Extra[extraDropped]; ok {
		t.Errorf("the trajectory names dropped headers %v", d)
	}
}

// Requests that would reach beyond the sandbox or the meter are refused in Anthropic's error
// shape, naming the reason, and never reach the upstream.
func TestAnthropicRefusals(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"hi"}]`
	withContent := func(content string) string {
		return `{"max_tokens":10,"messages":[{"role":"user","content":[` + content + `]}]}`
	}
	tests := []struct {
		name, path, body string
		status           int
		errType, inMsg   string
	}{
		{"mcp servers", "/v1/messages", `{"max_tokens":10,` + msgs + `,"mcp_servers":[{"type":"url","url":"https://mcp.example.com/sse","name":"x"}]}`,
			400, "invalid_request_error", `field "mcp_servers" is not forwarded: an MCP server is connected to by the provider`},
		{"container", "/v1/messages", `{"max_tokens":10,` + msgs + `,"container":"container_01"}`,
			400, "invalid_request_error", `field "container" is not forwarded: a container is state`},
		{"image by URL", "/v1/messages", withContent(`{"type":"image","source":{"type":"url","url":"https://evil.example/x.png"}}`),
			400, "invalid_request_error", `messages[0].content[0]: a source by URL is fetched by the provider`},
		{"document by URL", "/v1/messages", withContent(`{"type":"text","text":"see"},{"type":"document","source":{"type":"url","url":"https://evil.example/a.pdf"}}`),
			400, "invalid_request_error", `messages[0].content[1]: a source by URL`},
		{"file source", "/v1/messages", withContent(`{"type":"document","source":{"type":"file","file_id":"file_011"}}`),
			400, "invalid_request_error", `a file source names a file stored with the provider`},
		{"image by URL in a tool result", "/v1/messages", withContent(`{"type":"tool_result","tool_use_id":"t1","content":[{"type":"image","source":{"type":"url","url":"http://10.0.0.1/x"}}]}`),
			400, "invalid_request_error", `messages[0].content[0].content[0]: a source by URL`},
		{"container upload", "/v1/messages", withContent(`{"type":"container_upload","file_id":"file_011"}`),
			400, "invalid_request_error", `a container_upload`},
		// Keys spelled in another case: Go relays (encoding/json) read them as the real ones.
		{"image by URL, source in capitals", "/v1/messages", withContent(`{"type":"image","SOURCE":{"type":"url","url":"https://evil.example/x.png"}}`),
			400, "invalid_request_error", `messages[0].content[0]: a source by URL is fetched by the provider`},
		{"image by URL, type in mixed case", "/v1/messages", withContent(`{"type":"image","Source":{"Type":"URL","url":"https://evil.example/x.png"}}`),
			400, "invalid_request_error", `a source by URL`},
		{"file source, key in capitals", "/v1/messages", withContent(`{"type":"document","source":{"TYPE":"file","file_id":"file_011"}}`),
			400, "invalid_request_error", `a file source names a file stored with the provider`},
		{"container upload, type in capitals", "/v1/messages", withContent(`{"Type":"container_upload","file_id":"file_011"}`),
			400, "invalid_request_error", `a container_upload`},
		{"unknown field", "/v1/messages", `{"max_tokens":10,` + msgs + `,"priority":"high"}`,
			400, "invalid_request_error", `field "priority" is not forwarded (allowed: cache_control, context_management, inference_geo, max_tokens, messages,`},
		{"speed of no known kind", "/v1/messages", `{"max_tokens":10,` + msgs + `,"speed":"ludicrous"}`,
			400, "invalid_request_error", `"speed" must be "standard" or "fast"`},
		{"cache control without a type", "/v1/messages", `{"max_tokens":10,` + msgs + `,"cache_control":{"ttl":"1h"}}`,
			400, "invalid_request_error", `"cache_control" must be an object with a type`},
		{"inference geo not a string", "/v1/messages", `{"max_tokens":10,` + msgs + `,"inference_geo":["us"]}`,
			400, "invalid_request_error", `"inference_geo" must be a string`},
		{"duplicate key", "/v1/messages", `{"max_tokens":10,` + msgs + `,"tools":[{"type":"custom","type":"web_search_20250305","name":"web_search"}]}`,
			400, "invalid_request_error", `duplicate key "type"`},
		{"max tokens overflow", "/v1/messages", `{"max_tokens":9223372036854775807,` + msgs + `}`,
			400, "invalid_request_error", `"max_tokens" must be an integer from 1 to 16777216`},
		{"thinking budget overflow", "/v1/messages", `{"max_tokens":10,` + msgs + `,"thinking":{"type":"enabled","budget_tokens":9223372036854775807}}`,
			400, "invalid_request_error", `"thinking.budget_tokens" must be an integer from 0`},
		{"no messages", "/v1/messages", `{"max_tokens":10}`,
			400, "invalid_request_error", `field "messages" is required`},
		{"system not text", "/v1/messages", `{"max_tokens":10,` + msgs + `,"system":[{"type":"image","source":{"type":"base64","data":"AA=="}}]}`,
			400, "invalid_request_error", `system[0] must be a text block`},
		{"tool choice of a removed tool", "/v1/messages", `{"max_tokens":10,` + msgs + `,"tools":[{"name":"Bash","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"web_search"}],"tool_choice":{"type":"tool","name":"web_search"}}`,
			400, "invalid_request_error", `"tool_choice" names "web_search", a tool of the provider's`},
		{"count with mcp servers", "/v1/messages/count_tokens", `{` + msgs + `,"mcp_servers":[]}`,
			400, "invalid_request_error", `field "mcp_servers" is not forwarded: an MCP server`},
		{"count with max tokens", "/v1/messages/count_tokens", `{` + msgs + `,"max_tokens":10}`,
			400, "invalid_request_error", `field "max_tokens" is not forwarded`},
		{"other method", "/v1/messages", "",
			405, "invalid_request_error", `the model gateway serves only POST /v1/messages`},
	}
	for _, typ := range []string{"mcp_toolset", "tool_search_tool_regex_20251119", "advisor_20260301", "computer_toolset_20260801", "bash", "web_search"} {
		tests = append(tests, struct {
			name, path, body string
			status           int
			errType, inMsg   string
		}{"server tool " + typ, "/v1/messages", `{"max_tokens":10,` + msgs + `,"tools":[{"name":"Bash","input_schema":{"type":"object"}},{"type":"` + typ + `","name":"x"}]}`,
			400, "invalid_request_error", fmt.Sprintf(`tools[1] has type %q: only tools the agent runs itself`, typ)})
	}
	up := newAnthropicUpstream(t, anthropicAnswers)
	f := serveAnthropic(t, up.URL, nil)
	s, err := f.g.Open("job", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, r gwResponse, status int, errType, inMsg string) {
		t.Helper()
		var e anthropicError
		if err := json.Unmarshal([]byte(r.Body), &e); err != nil || r.Status != status || e.Type != "error" || e.Error.Type != errType || !strings.Contains(e.Error.Message, inMsg) {
			t.Errorf("got %d %s\nwant %d %s with %q", r.Status, r.Body, status, errType, inMsg)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := http.MethodPost
			if tt.status == http.StatusMethodNotAllowed {
				method = http.MethodGet
			}
			check(t, f.do(t, method, tt.path, "", tt.body, "X-Api-Key", s.Token()), tt.status, tt.errType, tt.inMsg)
		})
	}
	t.Run("wrong token", func(t *testing.T) {
		r := f.do(t, http.MethodPost, "/v1/messages", "", `{"max_tokens":10,`+msgs+`}`, "X-Api-Key", strings.Repeat("ab", 32))
		check(t, r, http.StatusUnauthorized, "authentication_error", "unknown or expired gateway token")
		if !strings.Contains(r.Body, `"code":"invalid_token"`) {
			t.Errorf("the gateway's code is not in %s", r.Body)
		}
	})
	t.Run("the real key as token", func(t *testing.T) {
		r := f.do(t, http.MethodPost, "/v1/messages", "", `{"max_tokens":10,`+msgs+`}`, "X-Api-Key", realKey)
		check(t, r, http.StatusUnauthorized, "authentication_error", "unknown or expired gateway token")
	})
	if got := up.received(); len(got) != 0 {
		t.Errorf("refused requests reached the upstream: %+v", got)
	}
	if s.Requests() != 0 || s.Usage().Total() != 0 {
		t.Errorf("refused requests were counted: %d, %+v", s.Requests(), s.Usage())
	}
}

// The provider's own tools (web search and fetch, code execution) are taken out of a request
// rather than refused, and named in the trajectory; the tools the CLI runs itself stay.
func TestAnthropicRemovesServerTools(t *testing.T) {
	tests := []struct {
		name, tools, choice string
		wantTools           []string // names reaching the upstream; nil: no tools field
		wantChoice          bool
		wantRemoved         []string
	}{
		{"kept and removed",
			`[{"name":"Bash","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"web_search","max_uses":5},` +
				`{"type":"custom","name":"Skill","input_schema":{"type":"object"}},{"type":"web_fetch_20250910","name":"web_fetch"},` +
				`{"type":"bash_20250124","name":"bash"},{"type":"text_editor_20250728","name":"str_replace_based_edit_tool"},` +
				`{"type":"code_execution_20250825","name":"code_execution"},{"type":"memory_20250818","name":"memory"},` +
				`{"type":"computer_20250124","name":"computer","display_width_px":1024,"display_height_px":768},{"type":"web_search_20250305","name":"web_search"}]`,
			`{"type":"tool","name":"Bash"}`,
			[]string{"Bash", "Skill", "bash", "str_replace_based_edit_tool", "memory", "computer"}, true,
			[]string{"web_search_20250305", "web_fetch_20250910", "code_execution_20250825"}},
		{"all removed", `[{"type":"web_search_20250305","name":"web_search"}]`, `{"type":"auto"}`, nil, false, []string{"web_search_20250305"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newAnthropicUpstream(t, anthropicAnswers)
			f := serveAnthropic(t, up.URL, nil)
			s, err := f.g.Open("job", Budget{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			body := `{"max_tokens":10,"messages":[{"role":"user","content":"hi"}],"tools":` + tt.tools + `,"tool_choice":` + tt.choice + `}`
			if r := f.do(t, http.MethodPost, "/v1/messages", "", body, "X-Api-Key", s.Token()); r.Status != http.StatusOK {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			calls := up.received()
			if len(calls) != 1 {
				t.Fatalf("upstream got %d requests", len(calls))
			}
			var got struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
				ToolChoice json.RawMessage `json:"tool_choice"`
			}
			if err := json.Unmarshal(calls[0].Body, &got); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range got.Tools {
				names = append(names, tool.Name)
			}
			if !slices.Equal(names, tt.wantTools) || (got.ToolChoice != nil) != tt.wantChoice {
				t.Errorf("upstream tools %v, tool_choice %s; want %v, tool_choice %v", names, got.ToolChoice, tt.wantTools, tt.wantChoice)
			}
			if removed := s.Trajectory().Extra[extraRemoved]; !reflect.DeepEqual(removed, tt.wantRemoved) {
				t.Errorf("removed_hosted_tools %v, want %v", removed, tt.wantRemoved)
			}
		})
	}
}

// What the gateway forwards is rebuilt: the model forced, metadata reduced to user_id,
// service_tier dropped, and max_tokens, which the API requires, always set.
func TestAnthropicRebuildsRequests(t *testing.T) {
	const m = `"messages":[{"role":"user","content":"hi"}]`
	tests := []struct {
		name, path, body string
		budget           int64
		want             string
	}{
		{"the model forced, service tier dropped, metadata reduced", "/v1/messages",
			`{"model":"claude-opus-4-1",` + m + `,"max_tokens":100,"service_tier":"auto","metadata":{"user_id":"u1","tags":["x"]},"temperature":0.5,"stop_sequences":["END"],"top_k":5}`, 0,
			`{"max_tokens":100,` + m + `,"metadata":{"user_id":"u1"},"model":"gw-model","stop_sequences":["END"],"temperature":0.5,"top_k":5}`},
		{"metadata without user_id dropped", "/v1/messages",
			`{` + m + `,"max_tokens":100,"metadata":{}}`, 0,
			`{"max_tokens":100,` + m + `,"model":"gw-model"}`},
		{"no max_tokens and no budget: the default of a model the table does not know", "/v1/messages",
			`{` + m + `}`, 0,
			`{"max_tokens":32000,` + m + `,"model":"gw-model"}`},
		// 47 bytes, a prompt estimate of 12 tokens.
		{"no max_tokens under a budget: what is left", "/v1/messages",
			`{` + m + `}`, 100,
			`{"max_tokens":88,` + m + `,"model":"gw-model"}`},
		{"the client's max_tokens under a budget", "/v1/messages",
			`{` + m + `,"max_tokens":32000}`, 1_000_000,
			`{"max_tokens":32000,` + m + `,"model":"gw-model"}`},
		{"a thinking budget under the max output the gateway set is kept", "/v1/messages",
			`{` + m + `,"thinking":{"type":"enabled","budget_tokens":8000}}`, 1_000_000,
			`{"max_tokens":32000,` + m + `,"model":"gw-model","thinking":{"type":"enabled","budget_tokens":8000}}`},
		// 96 bytes, a prompt estimate of 24 tokens: 4,096 left.
		{"a thinking budget over the max output the budget leaves is lowered with it", "/v1/messages",
			`{` + m + `,"thinking":{"type":"enabled","budget_tokens":8000}}`, 4120,
			`{"max_tokens":4096,` + m + `,"model":"gw-model","thinking":{"budget_tokens":4095,"type":"enabled"}}`},
		{"the client's own max_tokens and thinking budget are its own", "/v1/messages",
			`{` + m + `,"max_tokens":2000,"thinking":{"type":"enabled","budget_tokens":8000}}`, 1_000_000,
			`{"max_tokens":2000,` + m + `,"model":"gw-model","thinking":{"type":"enabled","budget_tokens":8000}}`},
		{"system, tool choice and client tools pass", "/v1/messages",
			`{` + m + `,"max_tokens":9,"system":[{"type":"text","text":"S","cache_control":{"type":"ephemeral"}}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"}}`, 0,
			`{"max_tokens":9,` + m + `,"model":"gw-model","system":[{"type":"text","text":"S","cache_control":{"type":"ephemeral"}}],"tool_choice":{"type":"any"},"tools":[{"name":"f","input_schema":{"type":"object"}}]}`},
		// Claude Code 2.1 in fast mode, with automatic caching and a data-residency choice
		// (platform.claude.com/docs/en/build-with-claude/fast-mode, .../prompt-caching,
		// .../manage-claude/data-residency).
		{"fast mode, top-level cache control and inference geo pass", "/v1/messages",
			`{` + m + `,"max_tokens":9,"speed":"fast","cache_control":{"type":"ephemeral","ttl":"1h"},"inference_geo":"us"}`, 0,
			`{"cache_control":{"type":"ephemeral","ttl":"1h"},"inference_geo":"us","max_tokens":9,` + m + `,"model":"gw-model","speed":"fast"}`},
		{"inline and search result content pass", "/v1/messages",
			`{"max_tokens":9,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}},{"type":"search_result","source":"https://example.com/a","title":"a","content":[{"type":"text","text":"x"}]}]}]}`, 0,
			`{"max_tokens":9,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}},{"type":"search_result","source":"https://example.com/a","title":"a","content":[{"type":"text","text":"x"}]}]}],"model":"gw-model"}`},
		{"a count gets no max_tokens", "/v1/messages/count_tokens",
			`{"model":"claude-x",` + m + `,"system":"S"}`, 100,
			`{` + m + `,"model":"gw-model","system":"S"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newAnthropicUpstream(t, anthropicAnswers)
			f := serveAnthropic(t, up.URL, nil)
			s, err := f.g.Open("job", Budget{MaxTokens: tt.budget}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r := f.do(t, http.MethodPost, tt.path, "", tt.body, "X-Api-Key", s.Token()); r.Status != http.StatusOK {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			calls := up.received()
			if len(calls) != 1 || string(calls[0].Body) != tt.want {
				var got []string
				for _, c := range calls {
					got = append(got, string(c.Body))
				}
				t.Errorf("upstream got %q\nwant %s", got, tt.want)
			}
			if r := reservedOf(s); r != 0 {
				t.Errorf("%d tokens still reserved after the answer", r)
			}
		})
	}
}

// A stream that does not show its usage in full is passed on, then ended with the API's error
// event, and metered at its reservation; an overloaded upstream's 529 reaches the client with
// its Retry-After and is neither metered nor a turn.
func TestAnthropicUnmeteredStreamAndOverload(t *testing.T) {
	body := `{"max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	reservation := (int64(len(body))+bytesPerToken-1)/bytesPerToken + 100
	start := "event: message_start\n" + `data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[]` + "%s}}\n\n" +
		"event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
		"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}` + "\n\n"
	tests := []struct {
		name, stream string
	}{
		{"no usage at all", fmt.Sprintf(start, "") +
			"event: message_delta\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn"}}` + "\n\n" +
			"event: message_stop\n" + `data: {"type":"message_stop"}` + "\n\n"},
		// The prompt was reported, what the model wrote never was.
		{"cut before message_delta", fmt.Sprintf(start, `,"usage":{"input_tokens":5,"output_tokens":1}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newAnthropicUpstream(t, func(anthropicCall) anthropicReply {
				return anthropicReply{Header: map[string]string{"Content-Type": "text/event-stream"}, Body: tt.stream}
			})
			f := serveAnthropic(t, up.URL, nil)
			s, err := f.g.Open("job", Budget{MaxTokens: 1000}, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := f.do(t, http.MethodPost, "/v1/messages", "", body, "X-Api-Key", s.Token())
			if r.Status != http.StatusOK || !strings.HasPrefix(r.Body, tt.stream+"event: error\ndata: ") ||
				!strings.HasSuffix(r.Body, "\n\n") || !strings.Contains(r.Body[len(tt.stream):], `"code":"upstream_no_usage"`) ||
				!strings.Contains(r.Body[len(tt.stream):], `"type":"api_error"`) {
				t.Errorf("got %d\n%s\nwant the stream and then an error event", r.Status, r.Body)
			}
			if u := s.Usage(); u.Total() != reservation || s.Turns() != 0 {
				t.Errorf("metered %+v, %d turns; want the reservation of %d tokens and no turn", u, s.Turns(), reservation)
			}
			// The SDK, as Claude Code's, ends the stream with the error, not with a message.
			client := sdkClient(f, s)
			st := client.Messages.NewStreaming(context.Background(), asdk.MessageNewParams{Model: "m", MaxTokens: 100,
				Messages: []asdk.MessageParam{asdk.NewUserMessage(asdk.NewTextBlock("hi"))}})
			for st.Next() {
			}
			if err := st.Err(); err == nil || !strings.Contains(err.Error(), "upstream_no_usage") {
				t.Errorf("the SDK's stream ended with %v, want the gateway's error", err)
			}
			_ = st.Close()
		})
	}
	t.Run("529 overloaded", func(t *testing.T) {
		const overloaded = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_2"}`
		up := newAnthropicUpstream(t, func(anthropicCall) anthropicReply {
			return anthropicReply{Status: 529, Body: overloaded, Header: map[string]string{"Content-Type": "application/json",
				"Retry-After": "7", "Request-Id": "req_2", "X-Should-Retry": "true", "X-Internal": "secret"}}
		})
		f := serveAnthropic(t, up.URL, nil)
		s, err := f.g.Open("job", Budget{MaxTokens: 1000}, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := f.do(t, http.MethodPost, "/v1/messages", "", body, "X-Api-Key", s.Token())
		if r.Status != 529 || r.Body != overloaded || r.Header.Get("Retry-After") != "7" || r.Header.Get("Request-Id") != "req_2" ||
			r.Header.Get("X-Should-Retry") != "true" || r.Header.Get("X-Internal") != "" {
			t.Errorf("got %d %v %s, want the upstream's 529 with its retry headers only", r.Status, r.Header, r.Body)
		}
		client := sdkClient(f, s)
		_, err = client.Messages.New(context.Background(), asdk.MessageNewParams{Model: "m", MaxTokens: 100,
			Messages: []asdk.MessageParam{asdk.NewUserMessage(asdk.NewTextBlock("hi"))}})
		var apiErr *asdk.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 529 || !strings.Contains(apiErr.RawJSON(), "overloaded_error") {
			t.Errorf("the SDK got %v, want the 529 overloaded_error", err)
		}
		if s.Requests() != 2 || s.Turns() != 0 || s.Usage().Total() != 0 || reservedOf(s) != 0 {
			t.Errorf("%d requests, %d turns, usage %+v; want 2 requests, no turn, nothing metered", s.Requests(), s.Turns(), s.Usage())
		}
	})
}

// The stream reader's usage: message_start's prompt and cache counts, message_delta's
// cumulative output, counts that newer API versions repeat in message_delta taken once.
func TestAnthropicStreamUsage(t *testing.T) {
	startWith := func(usage string) string {
		return `{"type":"message_start","message":{"model":"m","usage":` + usage + `}}`
	}
	tests := []struct {
		name   string
		events []string
		want   Tokens
		ok     bool
	}{
		{"documented", []string{startWith(`{"input_tokens":10,"cache_creation_input_tokens":2,"cache_read_input_tokens":30,"output_tokens":1}`),
			`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}`, `{"type":"message_stop"}`},
			Tokens{Prompt: 42, Completion: 15, CacheRead: 30, CacheWrite: 2}, true},
		{"input counts repeated in message_delta", []string{startWith(`{"input_tokens":10,"cache_creation_input_tokens":2,"cache_read_input_tokens":30,"output_tokens":1}`),
			`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":10,"cache_creation_input_tokens":2,"cache_read_input_tokens":30,"output_tokens":15}}`},
			Tokens{Prompt: 42, Completion: 15, CacheRead: 30, CacheWrite: 2}, true},
		{"two message_deltas", []string{startWith(`{"input_tokens":10,"output_tokens":1}`),
			`{"type":"message_delta","usage":{"output_tokens":7}}`, `{"type":"message_delta","usage":{"output_tokens":9}}`},
			Tokens{Prompt: 10, Completion: 9}, true},
		{"no message_delta", []string{startWith(`{"input_tokens":10,"output_tokens":1}`)}, Tokens{}, false},
		{"input counts in message_delta only", []string{`{"type":"message_start","message":{"model":"m"}}`,
			`{"type":"message_delta","usage":{"input_tokens":4,"cache_read_input_tokens":6,"output_tokens":9}}`},
			Tokens{Prompt: 10, Completion: 9, CacheRead: 6}, true},
		{"no message_start usage", []string{`{"type":"message_start","message":{"model":"m"}}`, `{"type":"message_delta","usage":{"output_tokens":9}}`}, Tokens{}, false},
		{"not JSON", []string{"[DONE]"}, Tokens{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sr := anthropic{}.Stream(Route{Op: anthropicMessages, Kind: Generate}, nil)
			for _, e := range tt.events {
				if sr.Event("", []byte(e)) {
					t.Errorf("event %s dropped", e)
				}
			}
			if got, ok := sr.Usage(); got != tt.want || ok != tt.ok {
				t.Errorf("usage %+v %v, want %+v %v", got, ok, tt.want, tt.ok)
			}
			if sr.End() != nil {
				t.Error("End holds something back")
			}
		})
	}
}

// The turn a stream or a JSON answer holds: text, thinking, tool calls with their input
// objects, and a refusal's stop reason.
func TestAnthropicAnswerTurns(t *testing.T) {
	rt := Route{Op: anthropicMessages, Kind: Generate}
	t.Run("stream", func(t *testing.T) {
		sr := anthropic{}.Stream(rt, nil)
		for _, e := range []string{
			`{"type":"message_start","message":{"model":"claude-x","usage":{"input_tokens":3,"output_tokens":1}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"xx"}}`,
			`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":"A"}}`,
			`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"B"}}`,
			`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"t1","name":"ls","input":{}}}`,
			`{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"t2","name":"cat","input":{}}}`,
			`{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"pa"}}`,
			`{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"th\":\"x\"}"}}`,
			`{"type":"content_block_start","index":4,"content_block":{"type":"text","text":""}}`,
			`{"type":"content_block_delta","index":4,"delta":{"type":"text_delta","text":"C"}}`,
			`{"type":"message_delta","delta":{"stop_reason":"refusal"},"usage":{"output_tokens":4}}`,
		} {
			sr.Event("", []byte(e))
		}
		got := sr.Turn(false)
		want := &Turn{Model: "claude-x", Text: "AB\nC", Reasoning: "[redacted thinking]", Stop: "refusal", Streamed: true,
			Calls: []Call{{ID: "t1", Name: "ls", Args: json.RawMessage(`{}`)}, {ID: "t2", Name: "cat", Args: json.RawMessage(`{"path":"x"}`)}}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("turn %+v\nwant %+v", got, want)
		}
	})
	t.Run("stream ended by an error", func(t *testing.T) {
		sr := anthropic{}.Stream(rt, nil)
		sr.Event("error", []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
		if got := sr.Turn(false); !got.Incomplete {
			t.Errorf("turn %+v, want incomplete", got)
		}
	})
	t.Run("json", func(t *testing.T) {
		u, ok, got := anthropic{}.Answer(rt, []byte(`{"type":"message","model":"claude-x","content":[{"type":"thinking","thinking":"T","signature":"s"},{"type":"text","text":"A"},{"type":"tool_use","id":"t1","name":"ls","input":{"dir":"."}}],"stop_reason":"refusal","usage":{"input_tokens":1,"cache_creation_input_tokens":2,"cache_read_input_tokens":3,"output_tokens":4}}`))
		want := &Turn{Model: "claude-x", Text: "A", Reasoning: "T", Stop: "refusal", Calls: []Call{{ID: "t1", Name: "ls", Args: json.RawMessage(`{"dir":"."}`)}}}
		if !ok || u != (Tokens{Prompt: 6, Completion: 4, CacheRead: 3, CacheWrite: 2}) || !reflect.DeepEqual(got, want) {
			t.Errorf("%+v %v %+v\nwant %+v", u, ok, got, want)
		}
	})
	t.Run("count", func(t *testing.T) {
		if u, ok, turn := (anthropic{}).Answer(Route{Op: anthropicCount + anthropicBetaQ, Kind: Count}, []byte(`{"input_tokens":9}`)); ok || u != (Tokens{}) || turn != nil {
			t.Errorf("a count was read as an answer: %+v %v %+v", u, ok, turn)
		}
	})
}

// A request's conversation: the system prompt, a user message's tool results then its text,
// an assistant's text, thinking and calls, a mid-conversation system message, and a message
// that cannot be read. Every part of each message is in exactly one Raw.
func TestAnthropicConversation(t *testing.T) {
	body := `{"max_tokens":5,"system":"S","messages":[` +
		`{"role":"user","content":"U1"},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"T","signature":"s"},{"type":"text","text":"A"},{"type":"tool_use","id":"c1","name":"f","input":{"x":1}},{"type":"tool_use","id":"c2","name":"g","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"R1"},{"type":"tool_result","tool_use_id":"c2","content":[{"type":"text","text":"R2a"},{"type":"text","text":"R2b"}],"is_error":true},{"type":"text","text":"U2"}]},` +
		`{"role":"system","content":"S2"},` +
		`{"role":"user","content":7}]}`
	req, ref := anthropic{}.Parse(Route{Op: anthropicMessages}, []byte(body))
	if ref != nil {
		t.Fatal(ref)
	}
	got := req.Conversation()
	want := []Message{
		{Role: System, Text: "S", Raw: json.RawMessage(`"S"`)},
		{Role: User, Text: "U1", Raw: json.RawMessage(`{"role":"user","content":"U1"}`)},
		{Role: Agent, Text: "A", Reasoning: "T", Calls: []Call{{ID: "c1", Name: "f", Args: json.RawMessage(`{"x":1}`)}, {ID: "c2", Name: "g", Args: json.RawMessage(`{}`)}}},
		{Role: ToolResult, CallID: "c1", Text: "R1", Raw: json.RawMessage(`{"type":"tool_result","tool_use_id":"c1","content":"R1"}`)},
		{Role: ToolResult, CallID: "c2", Text: "R2a\nR2b"},
		{Role: User, Text: "U2", Raw: json.RawMessage(`[{"type":"text","text":"U2"}]`)},
		{Role: System, Text: "S2"},
		{Role: Unreadable, Raw: json.RawMessage(`{"role":"user","content":7}`)},
	}
	if len(got) != len(want) {
		t.Fatalf("%d messages, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if w.Raw == nil {
			// Raw checked for being there, not byte by byte.
			if len(g.Raw) == 0 {
				t.Errorf("message %d has no Raw", i)
			}
			g.Raw = nil
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("message %d: %+v\nwant %+v", i, g, w)
		}
	}
	if req.Tools() != 0 || req.MaxOutput() != 5 || req.Stream() {
		t.Errorf("tools %d, max output %d, stream %v", req.Tools(), req.MaxOutput(), req.Stream())
	}
}

// The upstream URL keeps Anthropic's /v1 once, whatever the configured base, and ?beta=true
// when the client sent it; the key goes as x-api-key, the version defaults.
func TestAnthropicUpstreamURL(t *testing.T) {
	tests := []struct {
		base, path, want string
	}{
		{"https://api.anthropic.com", "/v1/messages", "https://api.anthropic.com/v1/messages"},
		{"https://api.anthropic.com/v1", "/v1/messages?beta=true", "https://api.anthropic.com/v1/messages?beta=true"},
		{"https://proxy.example/anthropic", "/v1/messages/count_tokens?beta=true&x=1", "https://proxy.example/anthropic/v1/messages/count_tokens?beta=true"},
		{"http://127.0.0.1:8080/v1", "/v1/messages/count_tokens?beta=false", "http://127.0.0.1:8080/v1/messages/count_tokens"},
	}
	for _, tt := range tests {
		base, err := url.Parse(tt.base)
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest(http.MethodPost, tt.path, nil)
		rt, ok := anthropic{}.Route(r)
		if !ok {
			t.Fatalf("%s not routed", tt.path)
		}
		target, h := anthropic{}.Upstream(base, rt, "m", "k", http.Header{"Authorization": {"Bearer tok"}, "X-Api-Key": {"tok"}, "Cookie": {"c"}})
		if target != tt.want || h.Get("X-Api-Key") != "k" || h.Get("Anthropic-Version") != anthropicVersion || len(h) != 2 {
			t.Errorf("%s on %s: %s %v, want %s with the key and the version only", tt.path, tt.base, target, h, tt.want)
		}
	}
	for _, p := range []string{"/v1/messages/batches", "/v1/complete", "/v1/models/a/b", "/models", "/messages"} {
		if _, ok := (anthropic{}).Route(httptest.NewRequest(http.MethodPost, p, nil)); ok {
			t.Errorf("%s routed", p)
		}
	}
	for p, want := range map[string]Route{"/v1/models": {Op: "models", Kind: Local}, "/v1/models/claude-x": {Op: "model", Kind: Local, Model: "claude-x"}} {
		if rt, ok := (anthropic{}).Route(httptest.NewRequest(http.MethodGet, p, nil)); !ok || rt != want {
			t.Errorf("%s routed to %+v %v, want %+v", p, rt, ok, want)
		}
	}
}
