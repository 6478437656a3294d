package gateway

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/internal/testutil"
)

// relayedAnswer is what the gateway made of a relayed answer: its usage and the answer's step
// of the trajectory, the long texts by their length and digest.
type relayedAnswer struct {
	Prompt, Completion, CacheRead, CacheWrite int64
	Model                                     string
	Message, Reasoning                        string
	Calls                                     []string
	Extra                                     map[string]any `json:",omitempty"`
}

// digest is a long text's length and the start of its SHA-256.
func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return fmt.Sprintf("%d bytes, sha256 %x", len(s), sum[:8])
}

// TestRelayStreamsRead relays each benchmark answer through the gateway and holds what it
// read (usage, text, reasoning, calls) to testdata/relay: the benchmark measures answers the
// gateway reads in full, and a faster reader of any protocol must read them the same.
func TestRelayStreamsRead(t *testing.T) {
	for _, rs := range relayStreams {
		t.Run(rs.name, func(t *testing.T) {
			body := rs.body()
			up := newCaptureUpstream(t, func(string) (string, string) { return "text/event-stream", body })
			base := up.URL
			if rs.api == APIOpenAI {
				base += "/v1"
			}
			f := serveGateway(t, base, func(c *Config) { c.API = rs.api })
			s, err := f.g.Open("relay", Budget{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			g := rs.request(t)
			r := f.replay(t, g, s)
			if r.Status != http.StatusOK {
				t.Fatalf("status %d", r.Status)
			}
			u := s.Usage()
			got := relayedAnswer{Prompt: u.PromptTokens, Completion: u.CompletionTokens, CacheRead: u.CacheReadTokens, CacheWrite: u.CacheWriteTokens}
			traj := s.Trajectory()
			if traj == nil || len(traj.Steps) == 0 {
				t.Fatal("no trajectory")
			}
			last := traj.Steps[len(traj.Steps)-1]
			got.Model, got.Message, got.Reasoning, got.Extra = last.ModelName, digest(last.Message), digest(last.ReasoningContent), last.Extra
			for _, c := range last.ToolCalls {
				got.Calls = append(got.Calls, c.ToolCallID+" "+c.FunctionName+" "+digest(string(c.Arguments)))
			}
			b, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			b = append(b, '\n')
			testutil.Golden(t, filepath.Join("testdata", "relay", rs.name+".json"), b)
		})
	}
}

// relayStream is one protocol's long streamed answer for BenchmarkGatewayStreamRelay: the
// request a CLI of that protocol sends, the API its gateway speaks, and about relaySize bytes
// of the events its provider streams back.
type relayStream struct {
	name, api string
	request   func(testing.TB) cliGolden
	body      func() string
}

// relaySize is about how many bytes of events each relayed answer holds.
const relaySize = 4 << 20

// relayStreams are the four protocols' answers. Each is mostly text deltas, with the thinking
// or reasoning deltas and the tool call's argument pieces its protocol streams, and its usage
// where its protocol puts it; every event carries the members the provider sends (ids,
// indexes, sequence numbers, logprobs, obfuscation), which the gateway must validate and skip.
var relayStreams = []relayStream{
	{"chat", APIOpenAI, chatRelayRequest, chatRelayBody},
	{"responses", APIOpenAI, goldenRequest("codex-current.responses.json"), responsesRelayBody},
	{"messages", APIAnthropic, goldenRequest("claude-code-2.1.messages-stream.json"), messagesRelayBody},
	{"gemini", APIGemini, goldenRequest("gemini-cli-0.56.stream.json"), geminiRelayBody},
}

func goldenRequest(name string) func(testing.TB) cliGolden {
	return func(tb testing.TB) cliGolden { return loadGolden(tb, name) }
}

func chatRelayRequest(testing.TB) cliGolden {
	return cliGolden{Method: http.MethodPost, Path: "/v1/chat/completions", Headers: map[string]string{"Authorization": "Bearer TOKEN", "Content-Type": "application/json"},
		Body: []byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"write a lot"}]}`)}
}

// chatRelayBody is the Chat Completions answer the relay was first measured with (issue 31):
// 120-byte content deltas, then the usage chunk and [DONE].
func chatRelayBody() string {
	var sse strings.Builder
	chunk := strings.Repeat("relay ", 20)
	for sse.Len() < relaySize {
		fmt.Fprintf(&sse, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", chunk)
	}
	sse.WriteString(`data: {"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":100000}}` + "\n\ndata: [DONE]\n\n")
	return sse.String()
}

// words is the text of n words of an answer, as a JSON string's content (no escapes needed).
func words(n int) string {
	return strings.Repeat("relay ", n)
}

// responsesRelayBody is a Responses API stream as Codex reads it (codex-rs/codex-api/src/sse,
// spawn_response_stream): the event types and members of openai-go's
// responses.ResponseStreamEventUnion (ResponseCreatedEvent, ResponseOutputItemAddedEvent,
// ResponseReasoningSummaryTextDeltaEvent, ResponseTextDeltaEvent with logprobs,
// ResponseFunctionCallArgumentsDeltaEvent, ResponseCompletedEvent with the whole response and
// its usage), each delta with the obfuscation padding the API adds by default (the API
// reference's stream_options.include_obfuscation). A delta is a token or two, as
// the API streams them; the done events and response.completed repeat the whole text, which
// is why the answer's text is kept well under the gateway's 1 MiB line (a real answer's is
// under 128k tokens). Shares: about 10% reasoning summary deltas, 80% text, 10% arguments.
func responsesRelayBody() string {
	const deltaWords = 2
	var sse strings.Builder
	seq := 0
	ev := func(typ, data string) {
		fmt.Fprintf(&sse, "event: %s\ndata: {\"type\":%q,\"sequence_number\":%d,%s}\n\n", typ, typ, seq, data)
		seq++
	}
	const resp = `"id":"resp_68a1f0c2b3d4e5f60718293a4b5c6d7e","object":"response","created_at":1756300000,"model":"gpt-5-codex","parallel_tool_calls":false,"reasoning":{"effort":"medium","summary":"auto"},"store":false,"tool_choice":"auto","tools":[],"text":{"format":{"type":"text"},"verbosity":"medium"}`
	ev("response.created", `"response":{`+resp+`,"status":"in_progress","output":[],"usage":null}`)
	ev("response.in_progress", `"response":{`+resp+`,"status":"in_progress","output":[],"usage":null}`)
	// Each part is one output item's deltas: 1/10 of the events reasoning, 8/10 text, 1/10
	// arguments, until the stream (with its done events' copies) is about relaySize.
	const perEvent = 255 // bytes of a delta event and its share of the done events, about
	n := relaySize / perEvent
	piece := words(deltaWords)
	var summary, text, args strings.Builder
	ev("response.output_item.added", `"output_index":0,"item":{"id":"rs_01","type":"reasoning","summary":[]}`)
	ev("response.reasoning_summary_part.added", `"item_id":"rs_01","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":""}`)
	for range n / 10 {
		ev("response.reasoning_summary_text.delta", `"item_id":"rs_01","output_index":0,"summary_index":0,"delta":"`+piece+`","obfuscation":"4dVqSxn2"`)
		summary.WriteString(piece)
	}
	reasoning := `{"id":"rs_01","type":"reasoning","encrypted_content":"gAAAAABo` + strings.Repeat("x", 600) + `","summary":[{"type":"summary_text","text":"` + summary.String() + `"}]}`
	ev("response.reasoning_summary_text.done", `"item_id":"rs_01","output_index":0,"summary_index":0,"text":"`+summary.String()+`"`)
	ev("response.output_item.done", `"output_index":0,"item":`+reasoning)
	ev("response.output_item.added", `"output_index":1,"item":{"id":"msg_01","type":"message","status":"in_progress","content":[],"role":"assistant"}`)
	ev("response.content_part.added", `"item_id":"msg_01","output_index":1,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}`)
	for range n * 8 / 10 {
		ev("response.output_text.delta", `"item_id":"msg_01","output_index":1,"content_index":0,"delta":"`+piece+`","logprobs":[],"obfuscation":"Qm3kT"`)
		text.WriteString(piece)
	}
	part := `{"type":"output_text","annotations":[],"logprobs":[],"text":"` + text.String() + `"}`
	message := `{"id":"msg_01","type":"message","status":"completed","content":[` + part + `],"role":"assistant"}`
	ev("response.output_text.done", `"item_id":"msg_01","output_index":1,"content_index":0,"text":"`+text.String()+`","logprobs":[]`)
	ev("response.content_part.done", `"item_id":"msg_01","output_index":1,"content_index":0,"part":`+part)
	ev("response.output_item.done", `"output_index":1,"item":`+message)
	ev("response.output_item.added", `"output_index":2,"item":{"id":"fc_01","type":"function_call","status":"in_progress","arguments":"","call_id":"call_01","name":"shell"}`)
	args.WriteString(`{\"command\":[\"bash\",\"-lc\",\"`)
	ev("response.function_call_arguments.delta", `"item_id":"fc_01","output_index":2,"delta":"{\"command\":[\"bash\",\"-lc\",\"","obfuscation":"a9"`)
	for range n / 10 {
		ev("response.function_call_arguments.delta", `"item_id":"fc_01","output_index":2,"delta":"`+piece+`","obfuscation":"Zk2"`)
		args.WriteString(piece)
	}
	args.WriteString(`\"]}`)
	ev("response.function_call_arguments.delta", `"item_id":"fc_01","output_index":2,"delta":"\"]}","obfuscation":"pQ"`)
	call := `{"id":"fc_01","type":"function_call","status":"completed","arguments":"` + args.String() + `","call_id":"call_01","name":"shell"}`
	ev("response.function_call_arguments.done", `"item_id":"fc_01","output_index":2,"arguments":"`+args.String()+`"`)
	ev("response.output_item.done", `"output_index":2,"item":`+call)
	ev("response.completed", `"response":{`+resp+`,"status":"completed","output":[`+reasoning+`,`+message+`,`+call+`],"usage":{"input_tokens":12000,"input_tokens_details":{"cached_tokens":11000},"output_tokens":100000,"output_tokens_details":{"reasoning_tokens":9000},"total_tokens":112000}}`)
	return sse.String()
}

// messagesRelayBody is an Anthropic Messages stream as Claude Code reads it: the events of
// anthropic-sdk-go's MessageStreamEventUnion and the streaming guide
// (platform.claude.com/docs/build-with-claude/streaming): message_start with the prompt's
// usage, a thinking block (thinking_delta pieces, then its signature_delta), a text block
// (text_delta), a tool_use block (input_json_delta pieces), pings between, message_delta
// with the stop reason and the output count, message_stop. Deltas are a few words, as the API
// sends them. Shares: about 10% thinking, 80% text, 10% tool input.
func messagesRelayBody() string {
	var sse strings.Builder
	ev := func(typ, data string) {
		fmt.Fprintf(&sse, "event: %s\ndata: {\"type\":%q%s}\n\n", typ, typ, data)
	}
	const perEvent = 141
	n := relaySize / perEvent
	piece := words(4)
	ev("message_start", `,"message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":2100,"cache_read_input_tokens":9800,"output_tokens":1,"service_tier":"standard"}}`)
	ev("content_block_start", `,"index":0,"content_block":{"type":"thinking","thinking":"","signature":""}`)
	for range n / 10 {
		ev("content_block_delta", `,"index":0,"delta":{"type":"thinking_delta","thinking":"`+piece+`"}`)
	}
	ev("content_block_delta", `,"index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds`+strings.Repeat("A", 300)+`"}`)
	ev("content_block_stop", `,"index":0`)
	ev("content_block_start", `,"index":1,"content_block":{"type":"text","text":""}`)
	for i := range n * 8 / 10 {
		ev("content_block_delta", `,"index":1,"delta":{"type":"text_delta","text":"`+piece+`"}`)
		if i%1000 == 999 {
			ev("ping", "")
		}
	}
	ev("content_block_stop", `,"index":1`)
	ev("content_block_start", `,"index":2,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"Bash","input":{}}`)
	ev("content_block_delta", `,"index":2,"delta":{"type":"input_json_delta","partial_json":"{\"command\": \""}`)
	for range n / 10 {
		ev("content_block_delta", `,"index":2,"delta":{"type":"input_json_delta","partial_json":"`+piece+`"}`)
	}
	ev("content_block_delta", `,"index":2,"delta":{"type":"input_json_delta","partial_json":"\"}"}`)
	ev("content_block_stop", `,"index":2`)
	ev("message_delta", `,"delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":100000}`)
	ev("message_stop", "")
	return sse.String()
}

// geminiRelayBody is a streamGenerateContent?alt=sse stream as Gemini CLI reads it: each event
// a GenerateContentResponse (google.golang.org/genai's, as the API writes it: candidates with
// content.parts and role, index, usageMetadata on every chunk with the counts so far,
// modelVersion and responseId), events ended by CRLF pairs as the API ends them. The thought
// summary's parts come first (thought: true), then the answer's text, then a functionCall
// part with its thoughtSignature, and a last chunk with finishReason STOP. A chunk is a
// sentence or two, as the API sends them.
func geminiRelayBody() string {
	var sse strings.Builder
	const perEvent = 406
	n := relaySize / perEvent
	piece := words(10)
	ev := func(parts, finish string, out int) {
		fmt.Fprintf(&sse, `data: {"candidates": [{"content": {"parts": [%s],"role": "model"}%s,"index": 0}],"usageMetadata": {"promptTokenCount": 11850,"candidatesTokenCount": %d,"totalTokenCount": %d,"cachedContentTokenCount": 9800,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 11850}],"thoughtsTokenCount": 900},"modelVersion": "gemini-2.5-pro","responseId": "cXGtaNH1Ce-rkdUP_9KJ0Qw"}`+"\r\n\r\n", parts, finish, out, 11850+900+out)
	}
	out := 0
	for range n / 10 {
		ev(`{"text": "`+piece+`","thought": true}`, "", out)
	}
	for range n * 8 / 10 {
		out += 10
		ev(`{"text": "`+piece+`"}`, "", out)
	}
	// Gemini sends a call whole, in one part: its arguments are what the others' pieces make.
	ev(`{"functionCall": {"name": "run_shell_command","args": {"command": "`+strings.Repeat(piece, n/10/50)+`","description": "Run the tests"}},"thoughtSignature": "CiQB0e2Kb`+strings.Repeat("Q", 200)+`"}`, "", out)
	ev(`{"text": ""}`, `,"finishReason": "STOP"`, out)
	return sse.String()
}

// BenchmarkDecodeRelayEvents is each protocol's stream reader alone on its relayed answer's
// events (relayStreams), without the HTTP hops: the part of the relay's cost that is the
// reading of events, per event.
// Run: go test -run '^$' -bench DecodeRelayEvents ./gateway
func BenchmarkDecodeRelayEvents(b *testing.B) {
	for _, rs := range relayStreams {
		type event struct {
			name string
			data []byte
		}
		var events []event
		var name string
		for line := range strings.Lines(rs.body()) {
			line = strings.TrimSpace(line)
			if n, ok := strings.CutPrefix(line, "event:"); ok {
				name = strings.TrimSpace(n)
			}
			if d, ok := strings.CutPrefix(line, "data:"); ok {
				events = append(events, event{name, []byte(strings.TrimSpace(d))})
			}
		}
		p, rt, req := parsed(b, rs.api, rs.request(b))
		b.Run(rs.name, func(b *testing.B) {
			for range b.N {
				sr := p.Stream(rt, req)
				for _, e := range events {
					sr.Event(e.name, e.data)
				}
				if _, ok := sr.Usage(); !ok {
					b.Fatal("no usage read")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(events)), "ns/event")
		})
	}
}

// parsed is the protocol of api, and the route and the parsed request of g, as the gateway
// reads them before it forwards g.
func parsed(tb testing.TB, api string, g cliGolden) (Protocol, Route, Request) {
	gw, err := New(Config{Model: "gw-model", BaseURL: "http://upstream", API: api}, Deps{})
	if err != nil {
		tb.Fatal(err)
	}
	rt, ok := gw.api.Route(httptest.NewRequest(g.Method, g.Path, nil))
	if !ok {
		tb.Fatalf("%s: no route", g.Path)
	}
	req, refusal := gw.api.Parse(rt, g.Body)
	if refusal != nil {
		tb.Fatalf("%s: refused: %v", g.Path, refusal)
	}
	return gw.api, rt, req
}
