package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// recordingUpstream answers both endpoints with a fixed body and records what it received.
type recordingUpstream struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newRecordingUpstream(t *testing.T, contentType string, answer func(path string) string) *recordingUpstream {
	t.Helper()
	u := &recordingUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.bodies = append(u.bodies, string(b))
		u.mu.Unlock()
		w.Header().Set("Content-Type", contentType)
		fmt.Fprint(w, answer(r.URL.Path))
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *recordingUpstream) received() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.bodies...)
}

const (
	chatAnswerBody      = `{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`
	responsesAnswerBody = `{"object":"response","output":[],"usage":{"input_tokens":3,"output_tokens":2}}`
)

func usageAnswers(path string) string {
	if strings.HasSuffix(path, "/responses") {
		return responsesAnswerBody
	}
	return chatAnswerBody
}

// The gateway forwards only the fields it knows, and refuses (400, naming the field or the
// tool) what would reach beyond the sandbox or the meter: unknown fields, hosted tools,
// background and stored responses, state kept upstream. Refused requests never reach the
// upstream.
func TestGatewayRefusesFieldsAndHostedTools(t *testing.T) {
	tests := []struct {
		name, path, body string
		wantInMessage    string
	}{
		{"unknown chat field", "/v1/chat/completions", `{"messages":[],"web_search_options":{}}`, `field "web_search_options" is not forwarded`},
		{"legacy functions", "/v1/chat/completions", `{"messages":[],"functions":[]}`, `field "functions" is not forwarded`},
		{"unknown responses field", "/v1/responses", `{"input":"hi","metadata":{}}`, `field "metadata" is not forwarded`},
		{"chat-only field on responses", "/v1/responses", `{"input":"hi","messages":[]}`, `field "messages" is not forwarded`},
		{"chat store true", "/v1/chat/completions", `{"messages":[],"store":true}`, `"store" must be false`},
		{"responses store true", "/v1/responses", `{"input":"hi","store":true}`, `"store" must be false`},
		{"background", "/v1/responses", `{"input":"hi","background":true}`, `"background" must be false`},
		{"previous_response_id", "/v1/responses", `{"input":"hi","previous_response_id":"resp_1"}`, `field "previous_response_id" is not forwarded: it needs a stored response`},
		{"conversation", "/v1/responses", `{"input":"hi","conversation":"conv_1"}`, `field "conversation" is not forwarded`},
		{"include of a hosted tool", "/v1/responses", `{"input":"hi","include":["file_search_call.results"]}`, `"include" value "file_search_call.results"`},
		{"n over 1", "/v1/chat/completions", `{"messages":[],"n":3}`, `"n" must be 1`},
		{"no messages", "/v1/chat/completions", `{"temperature":1}`, `field "messages" is required`},
		{"no input", "/v1/responses", `{"instructions":"x"}`, `field "input" is required`},
		{"max tokens zero", "/v1/chat/completions", `{"messages":[],"max_tokens":0}`, `"max_tokens" must be an integer from 1 to 16777216`},
		// The review's overflow: a max output that fed the reservation unchecked.
		{"max tokens overflow", "/v1/chat/completions", `{"messages":[],"max_tokens":9223372036854775807}`, `"max_tokens" must be an integer from 1`},
		{"max output overflow", "/v1/responses", `{"input":"hi","max_output_tokens":9223372036854775807}`, `"max_output_tokens" must be an integer from 1`},
		{"prompt template", "/v1/responses", `{"input":"hi","prompt":{"id":"pmpt_1"}}`, `field "prompt" is not forwarded`},
		// Content the provider would fetch from outside the sandbox, or stored state.
		{"chat image by URL", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://evil.example/x.png"}}]}]}`, `messages[0].content[0]: an image by URL`},
		{"chat file by id", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-1"}}]}]}`, `a file_id names a file stored with the provider`},
		{"responses image by URL", "/v1/responses", `{"input":[{"role":"user","content":[{"type":"input_image","image_url":"http://10.0.0.1/x"}]}]}`, `input[0].content[0]: an image by URL`},
		{"responses file by URL", "/v1/responses", `{"input":[{"role":"user","content":[{"type":"input_file","file_url":"https://evil.example/a.pdf"}]}]}`, `a file by URL is fetched`},
		{"item reference", "/v1/responses", `{"input":[{"type":"item_reference","id":"msg_1"}]}`, `an item_reference needs stored state`},
		// The Responses API takes an item reference without its (optional) type.
		{"untyped item reference", "/v1/responses", `{"input":[{"role":"user","content":"hi"},{"id":"msg_1"}]}`, `input[1]: an item without a type or a role is an item_reference`},
		// Keys spelled in another case: Go relays (encoding/json) read them as the real ones.
		{"chat image by URL, key in capitals", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url","IMAGE_URL":{"url":"https://evil.example/x.png"}}]}]}`, `messages[0].content[0]: an image by URL`},
		{"chat image by URL, mixed case", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url","Image_Url":{"URL":"https://evil.example/x.png"}}]}]}`, `an image by URL`},
		{"responses file by URL, key in capitals", "/v1/responses", `{"input":[{"role":"user","content":[{"type":"input_file","File_URL":"https://evil.example/a.pdf"}]}]}`, `a file by URL is fetched`},
		{"chat file id in capitals", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"file","file":{"FILE_ID":"file-1"}}]}]}`, `a file_id names a file stored with the provider`},
		{"item reference with a null type", "/v1/responses", `{"input":[{"type":null,"id":"msg_1"}]}`, `input[0]: an item without a type or a role`},
		{"item reference, type key in capitals", "/v1/responses", `{"input":[{"TYPE":"item_reference","id":"msg_1"}]}`, `an item_reference needs stored state`},
		{"item reference, type value in capitals", "/v1/responses", `{"input":[{"type":"Item_Reference","id":"msg_1"}]}`, `an item_reference needs stored state`},
		{"model not a string", "/v1/chat/completions", `{"messages":[],"model":1}`, `"model" must be a string`},
		{"hosted tool choice", "/v1/responses", `{"input":"hi","tool_choice":{"type":"web_search_preview"}}`, `"tool_choice" of type "web_search_preview"`},
	}
	for _, typ := range []string{"file_search", "mcp", "code_interpreter", "computer_use_preview", "image_generation", ""} {
		tool := fmt.Sprintf(`{"type":%q,"server_url":"https://mcp.example.com"}`, typ)
		for _, path := range []string{"/v1/chat/completions", "/v1/responses"} {
			body := `{"messages":[],"tools":[{"type":"function","function":{"name":"f"}},` + tool + `]}`
			if strings.HasSuffix(path, "/responses") {
				body = `{"input":"hi","tools":[{"type":"function","name":"f"},` + tool + `]}`
			}
			tests = append(tests, struct{ name, path, body, wantInMessage string }{
				"hosted tool " + typ + " on " + path, path, body, fmt.Sprintf(`tools[1] has type %q: only tools the agent runs itself`, typ)})
		}
	}
	up := newRecordingUpstream(t, "application/json", usageAnswers)
	f := serveGateway(t, up.URL+"/v1", nil)
	s, err := f.g.Open("job", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do(t, http.MethodPost, tt.path, s.Token(), tt.body)
			var e struct {
				Error struct{ Code, Message string }
			}
			_ = json.Unmarshal([]byte(r.Body), &e)
			if r.Status != http.StatusBadRequest || e.Error.Code != "invalid_request" || !strings.Contains(e.Error.Message, tt.wantInMessage) {
				t.Errorf("got %d %s, want 400 invalid_request with %q", r.Status, r.Body, tt.wantInMessage)
			}
		})
	}
	if got := up.received(); len(got) != 0 {
		t.Errorf("refused requests reached the upstream: %q", got)
	}
	if s.Requests() != 0 || s.Usage().Total() != 0 {
		t.Errorf("refused requests were counted: %d requests, %+v", s.Requests(), s.Usage())
	}
}

// What the gateway forwards is rebuilt: the known fields as the client sent them, the model
// replaced by the configured one, store: false on the Responses API, null fields dropped, and
// under a budget the max output the reservation covers.
func TestGatewayRebuildsRequests(t *testing.T) {
	tests := []struct {
		name, path, body string
		budget           int64
		maxField         string // Config.MaxTokensField
		want             string
	}{
		{"chat: the model is forced", "/v1/chat/completions",
			`{"model":"gpt-invented","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"seed":7,"stop":null}`, 0, "",
			`{"messages":[{"role":"user","content":"hi"}],"model":"gw-model","seed":7,"temperature":0.2}`},
		{"chat: function tools, n 1, store false pass", "/v1/chat/completions",
			`{"messages":[],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"auto","n":1,"store":false,"max_tokens":9}`, 0, "",
			`{"max_tokens":9,"messages":[],"model":"gw-model","tool_choice":"auto","tools":[{"type":"function","function":{"name":"f"}}]}`},
		{"chat: a stream asks for usage", "/v1/chat/completions",
			`{"messages":[],"stream":true}`, 0, "",
			`{"messages":[],"model":"gw-model","stream":true,"stream_options":{"include_usage":true}}`},
		{"chat: under a budget the max output is what is left, bounded", "/v1/chat/completions",
			`{"messages":[]}`, 100, "",
			`{"max_completion_tokens":96,"messages":[],"model":"gw-model"}`},
		{"chat: under a large budget the max output is the default of a model the table does not know", "/v1/chat/completions",
			`{"messages":[]}`, 1_000_000, "",
			`{"max_completion_tokens":32000,"messages":[],"model":"gw-model"}`},
		{"chat: two maxes become the smaller one", "/v1/chat/completions",
			`{"messages":[],"max_tokens":50,"max_completion_tokens":30}`, 100, "",
			`{"max_completion_tokens":30,"messages":[],"model":"gw-model"}`},
		{"responses: store false is forced, background false dropped", "/v1/responses",
			`{"model":"gpt-5-codex","input":"hi","instructions":"be brief","background":false,"include":["reasoning.encrypted_content"],"tools":[{"type":"function","name":"shell"}]}`, 0, "",
			`{"include":["reasoning.encrypted_content"],"input":"hi","instructions":"be brief","model":"gw-model","store":false,"tools":[{"type":"function","name":"shell"}]}`},
		{"chat: the max output field is configurable", "/v1/chat/completions",
			`{"messages":[]}`, 100, "max_tokens",
			`{"max_tokens":96,"messages":[],"model":"gw-model"}`},
		{"chat: the client's max output keeps its field", "/v1/chat/completions",
			`{"messages":[],"max_completion_tokens":20}`, 100, "max_tokens",
			`{"max_completion_tokens":20,"messages":[],"model":"gw-model"}`},
		{"responses: under a budget max_output_tokens is set", "/v1/responses",
			`{"input":"hi"}`, 100, "",
			`{"input":"hi","max_output_tokens":96,"model":"gw-model","store":false}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newRecordingUpstream(t, "application/json", usageAnswers)
			f := serveGateway(t, up.URL+"/v1", func(c *Config) { c.MaxTokensField = tt.maxField })
			s, err := f.g.Open("job", Budget{MaxTokens: tt.budget}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r := f.do(t, http.MethodPost, tt.path, s.Token(), tt.body); r.Status != http.StatusOK {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if got := up.received(); len(got) != 1 || got[0] != tt.want {
				t.Errorf("upstream got %q\nwant %s", got, tt.want)
			}
			if r := reservedOf(s); r != 0 {
				t.Errorf("%d tokens still reserved after the answer", r)
			}
		})
	}
}

// An answer the upstream does not meter is not passed on as a success, and is metered at the
// request's reservation, never at zero: an upstream that leaves out its usage cannot make the
// budget leak.
func TestGatewayRefusesAnswersWithoutUsage(t *testing.T) {
	const budget = 1000
	body := `{"messages":[{"role":"user","content":"hi"}],"max_tokens":100}`
	tests := []struct {
		name, path, body, contentType, answer string
		wantStatus                            int
		wantInBody                            string
		wantNotInBody                         string
	}{
		{"json without usage", "/v1/chat/completions", body, "application/json",
			`{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}]}`,
			http.StatusBadGateway, `"code":"upstream_no_usage"`, `"content":"ok"`},
		{"json with zero usage", "/v1/chat/completions", body, "application/json",
			`{"object":"chat.completion","choices":[],"usage":{"prompt_tokens":0,"completion_tokens":0}}`,
			http.StatusBadGateway, `"code":"upstream_no_usage"`, ""},
		{"responses json without usage", "/v1/responses", `{"input":"hi","max_output_tokens":100}`, "application/json",
			`{"object":"response","output":[]}`,
			http.StatusBadGateway, `"code":"upstream_no_usage"`, ""},
		{"chat stream without a usage chunk", "/v1/chat/completions", strings.Replace(body, "{", `{"stream":true,`, 1), "text/event-stream",
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\ndata: [DONE]\n\n",
			http.StatusOK, `"code":"upstream_no_usage"`, "[DONE]"},
		{"responses stream without usage", "/v1/responses", `{"input":"hi","max_output_tokens":100,"stream":true}`, "text/event-stream",
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\"}}\n\n",
			http.StatusOK, "event: error\ndata: {\"code\":\"upstream_no_usage\"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newRecordingUpstream(t, tt.contentType, func(string) string { return tt.answer })
			f := serveGateway(t, up.URL+"/v1", nil)
			s, err := f.g.Open("job", Budget{MaxTokens: budget}, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := f.do(t, http.MethodPost, tt.path, s.Token(), tt.body)
			if r.Status != tt.wantStatus || !strings.Contains(r.Body, tt.wantInBody) || (tt.wantNotInBody != "" && strings.Contains(r.Body, tt.wantNotInBody)) {
				t.Errorf("got %d %s\nwant %d with %q and without %q", r.Status, r.Body, tt.wantStatus, tt.wantInBody, tt.wantNotInBody)
			}
			// The reservation: the prompt estimate plus the 100 output tokens asked for.
			if want := (int64(len(tt.body))+bytesPerToken-1)/bytesPerToken + 100; s.Usage().Total() != want {
				t.Errorf("metered %+v, want the reservation of %d tokens", s.Usage(), want)
			}
		})
	}
}

// A gateway needs the model it forces, and a max tokens field an upstream knows.
func TestNewGatewayRejectsBadForwardingConfigs(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no model":         {BaseURL: "http://up/v1"},
		"bad max field":    {BaseURL: "http://up/v1", Model: "m", MaxTokensField: "max_output_tokens"},
		"misspelled field": {BaseURL: "http://up/v1", Model: "m", MaxTokensField: "max_token"},
	} {
		if _, err := New(cfg, Deps{}); err == nil {
			t.Errorf("%s: NewGateway accepted %+v", name, cfg)
		}
	}
}

// Tools the agent runs itself in the sandbox (functions, custom tools such as Codex's
// apply_patch, local_shell) are forwarded: refusing them would break the CLIs, and nothing of
// them runs on the provider's side.
func TestGatewayForwardsClientTools(t *testing.T) {
	up := newRecordingUpstream(t, "application/json", usageAnswers)
	f := serveGateway(t, up.URL+"/v1", nil)
	s, err := f.g.Open("job", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"input":"hi","tools":[{"type":"function","name":"f"},{"type":"custom","name":"apply_patch"},{"type":"local_shell"}],"tool_choice":{"type":"custom","name":"apply_patch"}}`
	if r := f.do(t, http.MethodPost, "/v1/responses", s.Token(), body); r.Status != http.StatusOK {
		t.Fatalf("got %d %s, want 200", r.Status, r.Body)
	}
	got := up.received()
	if len(got) != 1 || !strings.Contains(got[0], `"apply_patch"`) || !strings.Contains(got[0], `"local_shell"`) {
		t.Fatalf("the upstream received %q, want the request with its three tools", got)
	}
}
