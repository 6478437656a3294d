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
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	sftest "github.com/skillfleet/skillfleet/internal/testutil"
)

// sseUpstream answers every chat completion with a stream of content chunks and, when asked
// for it, a usage chunk; it records each request body.
type sseUpstream struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
}

func newSSEUpstream(t *testing.T, chunks []string, prompt, completion int) *sseUpstream {
	t.Helper()
	u := &sseUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		u.mu.Lock()
		u.bodies = append(u.bodies, body)
		u.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range chunks {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", c)
			w.(http.Flusher).Flush()
		}
		if opts, _ := body["stream_options"].(map[string]any); opts["include_usage"] == true {
			fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n", prompt, completion, prompt+completion)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(u.Close)
	return u
}

// streamThrough serves a gateway in front of up and sends one streamed request.
func streamThrough(t *testing.T, up *sseUpstream, budget Budget, body string, edit func(*Config)) (got string, status int, s *Session, g *Gateway) {
	t.Helper()
	f := serveGateway(t, up.URL+"/v1", edit)
	s, err := f.g.Open("job", budget, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := f.do(t, http.MethodPost, "/v1/chat/completions", s.Token(), body) // do checks the key is absent
	return r.Body, r.Status, s, f.g
}

func TestGatewayStreams(t *testing.T) {
	tests := []struct {
		name        string
		body        string
		chunks      []string
		maxResponse int64
		wantUsage   bool // the client receives the usage chunk
		wantDone    bool
		wantContent string
	}{
		{"the CLI did not ask for usage: metered, and the usage chunk is not passed on",
			`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, []string{"Hel", "lo"}, 0, false, true, "Hel|lo"},
		{"the CLI asked for usage: it gets the chunk",
			`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[]}`, []string{"ok"}, 0, true, true, "ok"},
		{"the key in a chunk is redacted",
			`{"stream":true,"messages":[]}`, []string{"your key is " + realKey}, 0, false, true, "your key is [redacted]"},
		{"a stream over the size cap is cut",
			`{"stream":true,"messages":[]}`, []string{strings.Repeat("a", 300), strings.Repeat("b", 300)}, 700, false, false, strings.Repeat("a", 300)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newSSEUpstream(t, tt.chunks, 10, 5)
			got, status, s, g := streamThrough(t, up, Budget{}, tt.body, func(c *Config) { c.MaxResponseBytes = tt.maxResponse })
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, got)
			}
			var content []string
			sawUsage := false
			for _, line := range strings.Split(got, "\n") {
				data, ok := strings.CutPrefix(line, "data: ")
				if !ok || data == "[DONE]" {
					continue
				}
				var chunk struct {
					Choices []struct{ Delta struct{ Content string } }
					Usage   *openAIUsage
				}
				if err := json.Unmarshal([]byte(data), &chunk); err != nil {
					t.Fatalf("the client got a broken event %q: %v", data, err)
				}
				sawUsage = sawUsage || chunk.Usage != nil
				for _, c := range chunk.Choices {
					content = append(content, c.Delta.Content)
				}
			}
			if strings.Join(content, "|") != tt.wantContent {
				t.Errorf("content %q, want %q", strings.Join(content, "|"), tt.wantContent)
			}
			if sawUsage != tt.wantUsage {
				t.Errorf("usage chunk passed on: %v, want %v\n%s", sawUsage, tt.wantUsage, got)
			}
			if strings.Contains(got, "data: [DONE]") != tt.wantDone {
				t.Errorf("[DONE] present: %v, want %v", !tt.wantDone, tt.wantDone)
			}
			up.mu.Lock()
			opts, _ := up.bodies[0]["stream_options"].(map[string]any)
			up.mu.Unlock()
			if opts["include_usage"] != true {
				t.Errorf("the upstream was not asked for usage: %v", up.bodies[0])
			}
			// Metered even when the stream was cut: the tokens were spent.
			if u := s.Usage(); u.PromptTokens != 10 || u.CompletionTokens != 5 {
				t.Errorf("session usage %+v, want 10 prompt and 5 completion tokens", u)
			}
			if n := testutil.ToFloat64(g.m.Tokens.WithLabelValues("gateway", "gw-model", "completion")); n != 5 {
				t.Errorf("completion tokens metric %v, want 5", n)
			}
		})
	}
}

// A streamed answer's tokens count toward the job's budget like any other.
func TestGatewayStreamCountsTowardTheBudget(t *testing.T) {
	up := newSSEUpstream(t, []string{"x"}, 10, 5)
	_, status, s, g := streamThrough(t, up, Budget{MaxTokens: 15}, `{"stream":true,"messages":[]}`, nil)
	if status != http.StatusOK || !s.BudgetExhausted() {
		t.Fatalf("status %d, usage %+v: want the 15-token budget spent", status, s.Usage())
	}
	// The next request of the session is refused without reaching the upstream.
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(`{"stream":true,"messages":[]}`))
	req.Header.Set("Authorization", "Bearer "+s.Token())
	g.ServeHTTP(rec, req)
	if rec.Code != http.StatusTooManyRequests || len(up.bodies) != 1 {
		t.Errorf("after the budget: %d, upstream asked %d times; want 429 and 1", rec.Code, len(up.bodies))
	}
}

// A client that hangs up in the middle of a stream does not escape metering: the gateway reads
// the upstream's answer to its usage chunk all the same.
func TestGatewayMetersAStreamItsClientAbandons(t *testing.T) {
	gone := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"first\"}}]}\n\n")
		w.(http.Flusher).Flush()
		<-gone
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":50}}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(up.Close)
	g, err := New(Config{Model: "gw-model", BaseURL: up.URL + "/v1", APIKey: realKey}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := g.Open("job", Budget{MaxTokens: 120}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Learn when the gateway has noticed the hang-up, so the upstream answers only after.
	noticed := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		go func() { <-r.Context().Done(); close(noticed) }()
		g.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(`{"stream":true,"messages":[]}`))
	req.Header.Set("Authorization", "Bearer "+s.Token())
	tr := &http.Transport{}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	// Hang up, then let the upstream finish its answer.
	_ = resp.Body.Close()
	tr.CloseIdleConnections()
	select {
	case <-noticed:
	case <-time.After(10 * time.Second):
		t.Fatal("the gateway never noticed the client hang up")
	}
	close(gone)
	sftest.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool { return s.Usage().Total() == 150 },
		"the abandoned stream's 150 tokens were never metered")
	if u := s.Usage(); u.Total() != 150 || !s.BudgetExhausted() {
		t.Errorf("usage %+v after the client hung up; want 150 tokens metered and the budget spent", u)
	}
}

// An upstream that ignores stream: true and answers with one JSON body is metered from it.
func TestGatewayMetersANonStreamedAnswerToAStreamRequest(t *testing.T) {
	f := newGatewayFixture(t, textReply(7, 3), nil) // agenttest answers JSON whatever is asked
	s, err := f.g.Open("job", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := f.do(t, http.MethodPost, "/v1/chat/completions", s.Token(), `{"stream":true,"messages":[]}`); r.Status != http.StatusOK || !strings.Contains(r.Body, `"usage"`) {
		t.Fatalf("got %d %s", r.Status, r.Body)
	}
	if u := s.Usage(); u.PromptTokens != 7 || u.CompletionTokens != 3 {
		t.Errorf("usage %+v, want 7 prompt and 3 completion tokens", u)
	}
}

// The Responses API (what Codex speaks) goes to the upstream's /responses and is metered from
// its usage, plain or streamed (response.completed carries it); its body is rebuilt with the
// configured model and store: false.
func TestGatewayResponsesAPI(t *testing.T) {
	tests := []struct {
		name, body, upstreamBody string
		sse                      bool
	}{
		{"plain", `{"model":"m","input":"hi"}`, `{"input":"hi","model":"gw-model","store":false}`, false},
		{"streamed", `{"model":"m","input":"hi","stream":true}`, `{"input":"hi","model":"gw-model","store":false,"stream":true}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gotPath, gotBody, gotAuth string
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				gotPath, gotBody, gotAuth = r.URL.Path, string(b), r.Header.Get("Authorization")
				if !tt.sse {
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprint(w, `{"object":"response","output":[{"type":"message","content":[{"type":"output_text","text":"ok"}]}],"usage":{"input_tokens":12,"output_tokens":4,"total_tokens":16}}`)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"status\":\"in_progress\",\"usage\":null}}\n\n")
				fmt.Fprint(w, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"ok\"}\n\n")
				fmt.Fprint(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"usage\":{\"input_tokens\":12,\"output_tokens\":4,\"total_tokens\":16}}}\n\n")
			}))
			t.Cleanup(up.Close)
			f := serveGateway(t, up.URL+"/v1", nil)
			s, err := f.g.Open("job", Budget{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := f.do(t, http.MethodPost, "/v1/responses", s.Token(), tt.body)
			if r.Status != http.StatusOK {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if gotPath != "/v1/responses" || gotBody != tt.upstreamBody || gotAuth != "Bearer "+realKey {
				t.Errorf("upstream got %s %s (auth %q); want /v1/responses, %s, the real key", gotPath, gotBody, gotAuth, tt.upstreamBody)
			}
			if tt.sse && !strings.Contains(r.Body, "event: response.completed") {
				t.Errorf("the client did not get the whole stream:\n%s", r.Body)
			}
			if u := s.Usage(); u.PromptTokens != 12 || u.CompletionTokens != 4 {
				t.Errorf("usage %+v, want 12 input and 4 output tokens", u)
			}
		})
	}
}

// TestGatewayRelaysNamedEventsIntact: a stream of named events (Responses, Anthropic) is
// passed on byte for byte, however its lines fall across the relay's read buffer: an event
// line is held until its data line is read, and must not be overwritten by that read.
func TestGatewayRelaysNamedEventsIntact(t *testing.T) {
	var sse strings.Builder
	for i := 0; sse.Len() < 1<<20; i++ {
		delta := strings.Repeat("x", 40+i%97)
		fmt.Fprintf(&sse, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":%q}\n\n", delta)
	}
	sse.WriteString("event: response.completed\ndata: " +
		`{"type":"response.completed","response":{"model":"m","output":[],"usage":{"input_tokens":5,"output_tokens":9}}}` + "\n\n")
	want := sse.String()
	up := newCaptureUpstream(t, func(string) (string, string) { return "text/event-stream", want })
	f := serveGateway(t, up.URL+"/v1", nil)
	s, err := f.g.Open("job", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := f.do(t, http.MethodPost, "/v1/responses", s.Token(), `{"input":"hi","stream":true}`)
	if r.Status != http.StatusOK {
		t.Fatalf("%d %s", r.Status, r.Body[:min(len(r.Body), 200)])
	}
	if r.Body != want {
		i := 0
		for i < len(want) && i < len(r.Body) && want[i] == r.Body[i] {
			i++
		}
		t.Fatalf("the relayed stream differs from the upstream's at byte %d of %d: got %q, want %q",
			i, len(want), r.Body[i:min(i+60, len(r.Body))], want[i:min(i+60, len(want))])
	}
}

// Every event of a burst reaches the client when the upstream pauses, not only when the
// gathered output fills a write: the relay writes and flushes at an event's end once nothing
// more has come.
func TestGatewayRelaysABurstBeforeAPause(t *testing.T) {
	var burst strings.Builder
	for i := range 50 {
		fmt.Fprintf(&burst, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"part %d \"}}]}\n\n", i)
	}
	seen := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, burst.String())
		w.(http.Flusher).Flush()
		select {
		case <-seen:
		case <-time.After(10 * time.Second):
		}
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(up.Close)
	f := serveGateway(t, up.URL+"/v1", nil)
	s, err := f.g.Open("job", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://gateway/v1/chat/completions", strings.NewReader(`{"stream":true,"messages":[]}`))
	req.Header.Set("Authorization", "Bearer "+s.Token())
	// The response's headers too must come before the pause: Do is timed with the read.
	var resp *http.Response
	got := make([]byte, burst.Len())
	done := make(chan error, 1)
	go func() {
		var err error
		if resp, err = f.client.Do(req); err == nil {
			_, err = io.ReadFull(resp.Body, got)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil || string(got) != burst.String() {
			t.Fatalf("before the pause the client read %q (%v); want the whole burst", got, err)
		}
	case <-time.After(5 * time.Second):
		close(seen)
		t.Fatal("the burst did not reach the client while the upstream paused")
	}
	defer resp.Body.Close()
	close(seen)
	rest, _ := io.ReadAll(resp.Body)
	if string(rest) != "data: [DONE]\n\n" {
		t.Errorf("after the pause the client read %q; want [DONE]", rest)
	}
}

// TestRelayRedactsTheKeyInEveryLine: the relay redacts what it gathered a batch at a time;
// the key is redacted wherever a line holds it: in an event's name, in its data, in the
// first and the last event, and in events on either side of a batch's end.
func TestRelayRedactsTheKeyInEveryLine(t *testing.T) {
	var sse strings.Builder
	ev := func(name, text string) {
		fmt.Fprintf(&sse, "event: %s\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%q}}\n\n", name, text)
	}
	sse.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n")
	sse.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	ev("content_block_delta", "first "+realKey)
	ev("content_block_delta"+realKey, "in the name")
	for i := 0; sse.Len() < 3*relayBatch; i++ {
		text := "filler"
		if i%97 == 0 {
			text = realKey + " again " + realKey
		}
		ev("content_block_delta", text)
	}
	ev("content_block_delta", "last "+realKey)
	sse.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\n")
	body := sse.String()
	up := newCaptureUpstream(t, func(string) (string, string) { return "text/event-stream", body })
	f := serveGateway(t, up.URL, func(c *Config) { c.API = APIAnthropic })
	s, err := f.g.Open("redact", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := f.do(t, http.MethodPost, "/v1/messages", "", `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		"x-api-key", s.Token(), "anthropic-version", "2023-06-01")
	if r.Status != http.StatusOK {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	if want := strings.ReplaceAll(body, realKey, "[redacted]"); r.Body != want {
		t.Errorf("the client got %d bytes, %d times the key, want %d bytes with the key redacted %d times",
			len(r.Body), strings.Count(r.Body, realKey), len(want), strings.Count(body, realKey))
	}
}

// TestStreamedCallsOutliveTheReadBuffer: a tool call read from an event is the trajectory's
// as the event said, however much the upstream sends after it: the event's text is the
// relay's read buffer, which the next reads overwrite (a Responses call's arguments were
// the padding of the event after it).
func TestStreamedCallsOutliveTheReadBuffer(t *testing.T) {
	after := "event: keepalive\ndata: {\"type\":\"keepalive\",\"pad\":\"" + strings.Repeat("z", 200<<10) + "\"}\n\n"
	tests := []struct {
		name, api, path, body, answer string
	}{
		{"responses", APIOpenAI, "/v1/responses", `{"model":"m","stream":true,"input":"hi"}`,
			"event: response.completed\ndata: " + `{"type":"response.completed","response":{"model":"m","output":[{"type":"function_call","call_id":"call_1","name":"shell","arguments":"{\"command\":[\"ls\"]}"}],"usage":{"input_tokens":1,"output_tokens":2}}}` + "\n\n"},
		{"messages", APIAnthropic, "/v1/messages", `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			"event: message_start\ndata: " + `{"type":"message_start","message":{"model":"m","usage":{"input_tokens":1,"output_tokens":1}}}` + "\n\n" +
				"event: content_block_start\ndata: " + `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"shell","input":{"command":["ls"]}}}` + "\n\n" +
				"event: message_delta\ndata: " + `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":2}}` + "\n\n"},
		{"gemini", APIGemini, "/v1beta/models/m:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
			"data: " + `{"candidates":[{"content":{"parts":[{"functionCall":{"id":"c1","name":"shell","args":{"command":["ls"]}}}],"role":"model"}}],"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":2}}` + "\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Events before it put the call's event away from the buffer's start.
			body := strings.Repeat("event: ping\ndata: {\"type\":\"ping\"}\n\n", 100) + tt.answer + after
			up := newCaptureUpstream(t, func(string) (string, string) { return "text/event-stream", body })
			base := up.URL
			if tt.api == APIOpenAI {
				base += "/v1"
			}
			f := serveGateway(t, base, func(c *Config) { c.API = tt.api })
			s, err := f.g.Open("calls", Budget{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			token := map[string]string{APIOpenAI: "Authorization", APIAnthropic: "x-api-key", APIGemini: "x-goog-api-key"}[tt.api]
			value := s.Token()
			if tt.api == APIOpenAI {
				value = "Bearer " + value
			}
			if r := f.do(t, http.MethodPost, tt.path, "", tt.body, token, value, "anthropic-version", "2023-06-01"); r.Status != http.StatusOK {
				t.Fatalf("status %d: %.200s", r.Status, r.Body)
			}
			steps := s.Trajectory().Steps
			calls := steps[len(steps)-1].ToolCalls
			if len(calls) != 1 || calls[0].FunctionName != "shell" || string(calls[0].Arguments) != `{"command":["ls"]}` {
				var got []string
				for _, c := range calls {
					got = append(got, c.FunctionName+" "+string(c.Arguments))
				}
				t.Errorf("calls %q, want shell {\"command\":[\"ls\"]}", got)
			}
		})
	}
}
