package gateway

import (
	"net/http"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/atif"
)

func TestCapDocumentedMaxOutput(t *testing.T) {
	tests := []struct {
		model string
		want  int64
	}{
		{"claude-opus-4-20250514", 32000},
		{"claude-opus-4-0", 32000},
		{"claude-opus-4-1-20250805", 32000},
		{"claude-opus-4-5", 64000},
		{"claude-opus-4-6", 128000},
		{"claude-sonnet-4-20250514", 64000},
		{"claude-sonnet-4-6", 64000},
		{"claude-haiku-4-5-20251001", 64000},
		{"claude-3-5-haiku-20241022", 8192},
		{"claude-sonnet-5", 128000},
		{"anthropic/claude-haiku-4-5", 64000},
		{"gpt-5.5", 128000},
		{"gpt-5-codex", 128000},
		{"GPT-5-mini", 128000},
		{"gpt-5-chat-latest", 16384},
		{"gpt-5.1-chat-latest", 16384},
		{"gpt-4o-mini", 16384},
		{"gpt-4.1-nano", 32768},
		{"o3", 100000},
		{"o3-mini", 100000},
		{"o1-mini", 65536},
		{"o4-mini-2025-04-16", 100000},
		{"gemini-2.5-pro", 65536},
		{"models/gemini-2.5-flash-lite", 65536},
		{"gemini-3-pro-preview", 65536},
		{"gemini-2.0-flash-001", 8192},
		// Unknown families, and names that only start like a known one.
		{"qwen3-coder", 0},
		{"gpt-50", 0},
		{"o30", 0},
		{"claude-opus-40", 0},
		{"", 0},
	}
	for _, tt := range tests {
		if got := DocumentedMaxOutput(tt.model); got != tt.want {
			t.Errorf("DocumentedMaxOutput(%q) = %d, want %d", tt.model, got, tt.want)
		}
	}
	for _, row := range documentedMaxOutput {
		if row.tokens <= 0 || row.tokens > maxOutputBound || row.source == "" {
			t.Errorf("row %q: %d tokens, source %q; want a bounded figure and its source", row.prefix, row.tokens, row.source)
		}
	}
}

// capAnswers answers each protocol's generate route with a short streamed answer and its usage.
func capAnswers(path string) (string, string) {
	switch {
	case strings.HasSuffix(path, "/messages"):
		return "text/event-stream", "event: message_start\ndata: " + `{"type":"message_start","message":{"model":"up","usage":{"input_tokens":40,"output_tokens":1}}}` + "\n\n" +
			"event: message_delta\ndata: " + `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}` + "\n\n" +
			"event: message_stop\ndata: " + `{"type":"message_stop"}` + "\n\n"
	case strings.Contains(path, ":streamGenerateContent"):
		return "text/event-stream", "data: " + `{"candidates":[{"content":{"role":"model","parts":[{"text":"done"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":40,"candidatesTokenCount":2,"totalTokenCount":42}}` + "\n\n"
	}
	return openAIAnswer(path)
}

// capSent reads the max output and thinking budget a request reached the upstream with, in
// its protocol's fields (nil: absent).
func capSent(body map[string]any) (maxOutput, thinking any) {
	if gc, ok := body["generationConfig"].(map[string]any); ok {
		tc, _ := gc["thinkingConfig"].(map[string]any)
		return gc["maxOutputTokens"], tc["thinkingBudget"]
	}
	if th, ok := body["thinking"].(map[string]any); ok {
		thinking = th["budget_tokens"]
	}
	for _, f := range []string{"max_output_tokens", "max_completion_tokens", "max_tokens"} {
		if v, ok := body[f]; ok {
			return v, thinking
		}
	}
	return nil, thinking
}

// TestCapForwarded replays real CLIs' requests (testdata/cli, each rebuilt from its CLI's
// source at the commit it names) through gateways configured as an operator would: a
// request that names no max output goes with the agent's max_output_tokens, else its model's
// documented maximum, else the default, never a hidden 4,096; what the budget leaves lowers
// any of them, and a thinking budget the cap undercuts is lowered under it. A CLI's own max
// output is its own. OpenAI's reasoning effort names no token count and is left as it is.
func TestCapForwarded(t *testing.T) {
	const (
		codex  = "codex-current.responses.json" // no max_output_tokens; reasoning effort medium
		gemCLI = "gemini-cli-0.56.stream.json"  // no maxOutputTokens; thinkingBudget 8192
		claude = "claude-code-2.1.messages-stream.json"
		goose  = "goose.chat.json" // max_tokens 4096
		crush  = "crush.chat.json" // max_tokens 10000
	)
	tests := []struct {
		name, golden, api, model string
		configured               int64
		// budget is the job's token budget; leave, when set, makes it the request's prompt
		// estimate plus leave.
		budget, leave int64
		wantMax       any // nil: absent
		wantThinking  any // nil: absent
	}{
		{name: "codex: the model's documented maximum", golden: codex, model: "gpt-5.5", budget: 1_000_000, wantMax: 128000.0},
		{name: "codex: the agent's max_output_tokens", golden: codex, model: "gpt-5.5", configured: 50000, budget: 1_000_000, wantMax: 50000.0},
		{name: "codex: the agent's max_output_tokens without a budget", golden: codex, model: "gpt-5.5", configured: 50000, wantMax: 50000.0},
		{name: "codex: nothing configured, no budget: the upstream's default", golden: codex, model: "gpt-5.5"},
		{name: "codex: a model the table does not know gets the default", golden: codex, model: "qwen3-coder", budget: 1_000_000, wantMax: float64(DefaultMaxOutputTokens)},
		{name: "codex: what the budget leaves", golden: codex, model: "gpt-5.5", leave: 20000, wantMax: 20000.0},
		{name: "gemini cli: the documented maximum, its thinking budget under it", golden: gemCLI, api: APIGemini, model: "gemini-2.5-pro", budget: 1_000_000, wantMax: 65536.0, wantThinking: 8192.0},
		{name: "gemini cli: gemini 3", golden: gemCLI, api: APIGemini, model: "gemini-3-pro-preview", budget: 1_000_000, wantMax: 65536.0, wantThinking: 8192.0},
		{name: "gemini cli: what the budget leaves, the thinking budget lowered under it", golden: gemCLI, api: APIGemini, model: "gemini-2.5-pro", leave: 6000, wantMax: 6000.0, wantThinking: 5999.0},
		{name: "gemini cli: the agent's max_output_tokens, the thinking budget lowered under it", golden: gemCLI, api: APIGemini, model: "gemini-2.5-pro", configured: 4000, wantMax: 4000.0, wantThinking: 3999.0},
		{name: "claude code: its own max_tokens kept", golden: claude, api: APIAnthropic, model: "claude-sonnet-4-6", configured: 8000, budget: 1_000_000, wantMax: 32000.0},
		{name: "claude code: its own max_tokens lowered to what the budget leaves", golden: claude, api: APIAnthropic, model: "claude-sonnet-4-6", leave: 10000, wantMax: 10000.0},
		{name: "goose: its own max_tokens kept", golden: goose, model: "gpt-4o", budget: 1_000_000, wantMax: 4096.0},
		{name: "crush: its own max_tokens lowered to what the budget leaves", golden: crush, model: "gpt-4o", leave: 5000, wantMax: 5000.0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := loadGolden(t, tt.golden)
			up := newCaptureUpstream(t, capAnswers)
			base := up.URL
			if tt.api == "" {
				base += "/v1"
			}
			f := serveGateway(t, base, func(c *Config) {
				c.API, c.Model, c.MaxOutputTokens = tt.api, tt.model, tt.configured
			})
			budget := tt.budget
			if tt.leave > 0 {
				budget = (int64(len(g.Body))+bytesPerToken-1)/bytesPerToken + tt.leave
			}
			s, err := f.g.Open("job", Budget{MaxTokens: budget}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r := f.replay(t, g, s); r.Status != http.StatusOK {
				t.Fatalf("%s of %s (commit %s): %d %s", g.Path, g.CLI, g.Commit[:8], r.Status, r.Body)
			}
			gotMax, gotThinking := capSent(up.last(t).body)
			if gotMax != tt.wantMax {
				t.Errorf("max output %v, want %v", gotMax, tt.wantMax)
			}
			if gotThinking != tt.wantThinking {
				t.Errorf("thinking budget %v, want %v", gotThinking, tt.wantThinking)
			}
			if tt.golden == codex {
				if r, _ := up.last(t).body["reasoning"].(map[string]any); r["effort"] != "medium" {
					t.Errorf("reasoning %v, want the CLI's effort as it sent it", up.last(t).body["reasoning"])
				}
			}
		})
	}
}

// TestCapReachedInTrajectory: an answer the provider ended at its max output, in each
// protocol's words, streamed and not, shows in the trajectory: on its step (with the max it
// ended at, and as incomplete), and counted on the trajectory with the ones a CLI retried and
// no step shows.
func TestCapReachedInTrajectory(t *testing.T) {
	const (
		chatReq = `{"model":"m","max_tokens":50,"messages":[{"role":"user","content":"write it"}]}`
		respReq = `{"model":"m","max_output_tokens":50,"input":"write it","stream":%s}`
		antReq  = `{"model":"m","max_tokens":50,"messages":[{"role":"user","content":"write it"}]%s}`
		gemReq  = `{"contents":[{"role":"user","parts":[{"text":"write it"}]}],"generationConfig":{"maxOutputTokens":50}}`
	)
	tests := []struct {
		name, api, path, req, contentType, answer string
		headers                                   []string
	}{
		{"chat", APIOpenAI, "/v1/chat/completions", chatReq, "application/json",
			`{"model":"up","choices":[{"index":0,"message":{"role":"assistant","content":"part of it"},"finish_reason":"length"}],"usage":{"prompt_tokens":10,"completion_tokens":50}}`, nil},
		{"chat stream", APIOpenAI, "/v1/chat/completions", strings.Replace(chatReq, `"model":"m"`, `"model":"m","stream":true`, 1), "text/event-stream",
			`data: {"choices":[{"index":0,"delta":{"content":"part of it"}}]}` + "\n\n" +
				`data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}` + "\n\n" +
				`data: {"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":50}}` + "\n\ndata: [DONE]\n\n", nil},
		{"responses", APIOpenAI, "/v1/responses", strings.Replace(respReq, "%s", "false", 1), "application/json",
			`{"model":"up","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"part of it"}]}],"usage":{"input_tokens":10,"output_tokens":50}}`, nil},
		{"responses stream", APIOpenAI, "/v1/responses", strings.Replace(respReq, "%s", "true", 1), "text/event-stream",
			"event: response.output_text.delta\ndata: " + `{"type":"response.output_text.delta","delta":"part of it"}` + "\n\n" +
				"event: response.incomplete\ndata: " + `{"type":"response.incomplete","response":{"model":"up","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"part of it"}]}],"usage":{"input_tokens":10,"output_tokens":50}}}` + "\n\n", nil},
		{"anthropic", APIAnthropic, "/v1/messages", strings.Replace(antReq, "%s", "", 1), "application/json",
			`{"type":"message","model":"up","content":[{"type":"text","text":"part of it"}],"stop_reason":"max_tokens","usage":{"input_tokens":10,"output_tokens":50}}`, []string{"X-Api-Key"}},
		{"anthropic stream", APIAnthropic, "/v1/messages", strings.Replace(antReq, "%s", `,"stream":true`, 1), "text/event-stream",
			"event: message_start\ndata: " + `{"type":"message_start","message":{"model":"up","usage":{"input_tokens":10,"output_tokens":1}}}` + "\n\n" +
				"event: content_block_start\ndata: " + `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
				"event: content_block_delta\ndata: " + `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"part of it"}}` + "\n\n" +
				"event: content_block_stop\ndata: " + `{"type":"content_block_stop","index":0}` + "\n\n" +
				"event: message_delta\ndata: " + `{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":50}}` + "\n\n" +
				"event: message_stop\ndata: " + `{"type":"message_stop"}` + "\n\n", []string{"X-Api-Key"}},
		{"gemini", APIGemini, "/v1beta/models/m:generateContent", gemReq, "application/json",
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"part of it"}]},"finishReason":"MAX_TOKENS"}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":50,"totalTokenCount":60}}`, []string{"X-Goog-Api-Key"}},
		{"gemini stream", APIGemini, "/v1beta/models/m:streamGenerateContent?alt=sse", gemReq, "text/event-stream",
			"data: " + `{"candidates":[{"content":{"role":"model","parts":[{"text":"part of it"}]}}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":20}}` + "\n\n" +
				"data: " + `{"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"MAX_TOKENS"}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":50,"totalTokenCount":60}}` + "\n\n", []string{"X-Goog-Api-Key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The CLI sends the same request three times, as Codex retries an incomplete
			// response: each answer ends at the cap.
			up := scriptedUpstream(t, tt.contentType, tt.answer, tt.answer, tt.answer)
			base := up.URL
			if tt.api == APIOpenAI {
				base += "/v1"
			}
			f := serveGateway(t, base, func(c *Config) { c.API = tt.api })
			s, err := f.g.Open("job", Budget{MaxTokens: 1_000_000}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				token, hdr := s.Token(), []string(nil)
				if tt.headers != nil {
					token, hdr = "", []string{tt.headers[0], s.Token()}
				}
				if r := f.do(t, http.MethodPost, tt.path, token, tt.req, hdr...); r.Status != http.StatusOK {
					t.Fatalf("request %d: %d %s", i+1, r.Status, r.Body)
				}
			}
			traj, complete := s.Record()
			if err := traj.Validate(); err != nil {
				t.Fatalf("invalid trajectory: %v", err)
			}
			last := traj.Steps[len(traj.Steps)-1]
			if last.Source != atif.SourceAgent || last.Message != "part of it" || last.Extra[extraMaxOutput] != int64(50) || last.Extra[extraIncomplete] != true {
				t.Errorf("last step %+v, extra %v; want the cut answer marked %s: 50 and incomplete", last, last.Extra, extraMaxOutput)
			}
			if traj.Extra[extraMaxAnswers] != 3 || traj.Extra[extraMaxOutput] != int64(50) {
				t.Errorf("trajectory extra %v; want 3 answers cut at up to 50 tokens", traj.Extra)
			}
			if complete {
				t.Error("a trajectory whose last answer was cut says it holds every call")
			}
		})
	}
}

// TestCapUncappedAnswerUnmarked: an answer that ended on its own carries no cap mark.
func TestCapUncappedAnswerUnmarked(t *testing.T) {
	up := scriptedUpstream(t, "application/json",
		`{"model":"up","choices":[{"index":0,"message":{"role":"assistant","content":"all of it"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5}}`)
	f := serveGateway(t, up.URL+"/v1", nil)
	s, err := f.g.Open("job", Budget{MaxTokens: 1_000_000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.send(t, s, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"write it"}]}`)
	traj := s.Trajectory()
	last := traj.Steps[len(traj.Steps)-1]
	if _, ok := last.Extra[extraMaxOutput]; ok || traj.Extra[extraMaxAnswers] != nil {
		t.Errorf("step extra %v, trajectory extra %v; want no cap mark", last.Extra, traj.Extra)
	}
}
