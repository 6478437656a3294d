package agenttest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"google.golang.org/genai"

	"github.com/skillfleet/skillfleet/agent/agenttest"
)

// seen is what an SDK made of a scripted turn, protocol-neutral, to compare with the turn.
type seen struct {
	Text, Thinking string
	Calls          []agenttest.Call // IDs only where the protocol has them; arguments compacted
	Usage          agenttest.Tokens
	Refusal        bool
}

// sdkClient asks one protocol's official SDK for the second turn of a conversation: system
// "SYS", user "INPUT", a bash call answered with "RESULT-1", tools bash and write_file.
type sdkClient struct {
	protocol string
	ask      func(ctx context.Context, srv *agenttest.Server, stream bool) (seen, error)
	// expressible is the part of a turn's usage the protocol can report.
	expressible func(agenttest.Tokens) agenttest.Tokens
	callIDs     bool // whether the protocol gives every call an ID
}

func noReasoning(u agenttest.Tokens) agenttest.Tokens { u.Reasoning = 0; return u }
func noCacheWrite(u agenttest.Tokens) agenttest.Tokens {
	u.CacheWrite = 0
	return u
}

var testTools = []string{"bash", "write_file"}

func sdkClients() []sdkClient {
	return []sdkClient{
		{agenttest.ProtocolAnthropic, askAnthropic, noReasoning, true},
		{agenttest.ProtocolGemini, askGemini, noCacheWrite, false},
		{agenttest.ProtocolChat, askChat, noCacheWrite, true},
		{agenttest.ProtocolResponses, askResponses, noCacheWrite, true},
	}
}

func TestTurnsThroughOfficialSDKs(t *testing.T) {
	usage := agenttest.Tokens{Prompt: 120, Completion: 45, CacheRead: 30, CacheWrite: 10, Reasoning: 15}
	turns := map[string]agenttest.Turn{
		"text": {Text: "Done: the notes are written — ok.", Usage: usage},
		"thinking and text": {Thinking: "The user wants notes; I should answer.",
			Text: "All good.", Usage: usage},
		"tool calls": {Thinking: "Two calls are needed.", Text: "Running two tools.", Usage: usage,
			Calls: []agenttest.Call{
				{ID: "call-given-1", Name: "bash", Arguments: `{"command": "cat SKILL.md | head -n 3"}`},
				{Name: "write_file", Arguments: `{"path":"NOTES.md","content":"# Notes\n\n- ünïcode ✓\n"}`},
			}},
		"refusal": {Refusal: true, Usage: agenttest.Tokens{Prompt: 50, Completion: 0}},
	}
	for _, cl := range sdkClients() {
		for name, turn := range turns {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/stream=%v", cl.protocol, name, stream), func(t *testing.T) {
					var mu sync.Mutex
					var convs []agenttest.Conv
					srv := agenttest.NewAny(t, agenttest.Scripted(func(_ int, c agenttest.Conv) (agenttest.Turn, *agenttest.Reply) {
						mu.Lock()
						convs = append(convs, c)
						mu.Unlock()
						return turn, nil
					}))
					got, err := cl.ask(t.Context(), srv, stream)
					if err != nil {
						t.Fatalf("SDK: %v", err)
					}
					want := expected(turn, cl)
					for i, c := range got.Calls {
						if cl.callIDs && c.ID == "" {
							t.Errorf("call %d has no ID", i)
						}
						if turn.Calls[i].ID == "" {
							got.Calls[i].ID = "" // generated; only its presence is checked
						}
					}
					if !reflect.DeepEqual(got, want) {
						t.Errorf("SDK saw\n%+v\nwant\n%+v", got, want)
					}
					if len(convs) != 1 {
						t.Fatalf("%d requests, want 1", len(convs))
					}
					c := convs[0]
					c.Raw = agenttest.Request{}
					wantConv := agenttest.Conv{Protocol: cl.protocol, Model: "model-x", System: "SYS",
						Input: "INPUT", ToolResults: []string{"RESULT-1"}, Tools: testTools, Stream: stream}
					if !reflect.DeepEqual(c, wantConv) {
						t.Errorf("parsed request\n%+v\nwant\n%+v", c, wantConv)
					}
				})
			}
		}
	}
}

// expected is what an SDK should see of turn.
func expected(turn agenttest.Turn, cl sdkClient) seen {
	w := seen{Text: turn.Text, Thinking: turn.Thinking, Usage: cl.expressible(turn.Usage), Refusal: turn.Refusal}
	for _, c := range turn.Calls {
		w.Calls = append(w.Calls, agenttest.Call{ID: c.ID, Name: c.Name, Arguments: compact(c.Arguments)})
	}
	return w
}

func compact(s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func askAnthropic(ctx context.Context, srv *agenttest.Server, stream bool) (seen, error) {
	client := anthropic.NewClient(aoption.WithoutEnvironmentDefaults(), aoption.WithBaseURL(srv.URL),
		aoption.WithAPIKey("test-key"), aoption.WithMaxRetries(0))
	schema := func(props ...string) anthropic.ToolInputSchemaParam {
		p := map[string]any{}
		for _, k := range props {
			p[k] = map[string]any{"type": "string"}
		}
		return anthropic.ToolInputSchemaParam{Properties: p, Required: props}
	}
	params := anthropic.MessageNewParams{
		Model: "model-x", MaxTokens: 1024,
		System: []anthropic.TextBlockParam{{Text: "SYS"}},
		Messages: []anthropic.MessageParam{
			anthropic.NewUserMessage(anthropic.NewTextBlock("INPUT")),
			anthropic.NewAssistantMessage(anthropic.NewToolUseBlock("toolu_prev", map[string]any{"command": "ls"}, "bash")),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_prev", "RESULT-1", false)),
		},
		Tools: []anthropic.ToolUnionParam{
			anthropic.ToolUnionParamOfTool(schema("command"), "bash"),
			anthropic.ToolUnionParamOfTool(schema("path", "content"), "write_file"),
		},
	}
	var msg *anthropic.Message
	if stream {
		s := client.Messages.NewStreaming(ctx, params)
		acc := anthropic.Message{}
		for s.Next() {
			if err := acc.Accumulate(s.Current()); err != nil {
				return seen{}, err
			}
		}
		if err := s.Err(); err != nil {
			return seen{}, err
		}
		msg = &acc
	} else {
		var err error
		if msg, err = client.Messages.New(ctx, params); err != nil {
			return seen{}, err
		}
	}
	var got seen
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			got.Text += b.Text
		case "thinking":
			if b.Signature == "" {
				return seen{}, errors.New("thinking block without signature")
			}
			got.Thinking += b.Thinking
		case "tool_use":
			got.Calls = append(got.Calls, agenttest.Call{ID: b.ID, Name: b.Name, Arguments: compact(string(b.Input))})
		}
	}
	u := msg.Usage
	got.Usage = agenttest.Tokens{Prompt: u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens,
		Completion: u.OutputTokens, CacheRead: u.CacheReadInputTokens, CacheWrite: u.CacheCreationInputTokens}
	got.Refusal = msg.StopReason == anthropic.StopReasonRefusal
	wantStop := anthropic.StopReasonEndTurn
	switch {
	case got.Refusal:
		wantStop = anthropic.StopReasonRefusal
	case len(got.Calls) > 0:
		wantStop = anthropic.StopReasonToolUse
	}
	if msg.StopReason != wantStop {
		return seen{}, fmt.Errorf("stop_reason %q, want %q", msg.StopReason, wantStop)
	}
	return got, nil
}

func askGemini(ctx context.Context, srv *agenttest.Server, stream bool) (seen, error) {
	client, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "test-key", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL}})
	if err != nil {
		return seen{}, err
	}
	decl := func(name string, props ...string) *genai.FunctionDeclaration {
		s := &genai.Schema{Type: genai.TypeObject, Properties: map[string]*genai.Schema{}, Required: props}
		for _, p := range props {
			s.Properties[p] = &genai.Schema{Type: genai.TypeString}
		}
		return &genai.FunctionDeclaration{Name: name, Parameters: s}
	}
	contents := []*genai.Content{
		genai.NewContentFromText("INPUT", genai.RoleUser),
		genai.NewContentFromFunctionCall("bash", map[string]any{"command": "ls"}, genai.RoleModel),
		genai.NewContentFromFunctionResponse("bash", map[string]any{"output": "RESULT-1"}, genai.RoleUser),
	}
	config := &genai.GenerateContentConfig{
		SystemInstruction: genai.NewContentFromText("SYS", genai.RoleUser),
		Tools:             []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{decl("bash", "command"), decl("write_file", "path", "content")}}},
	}
	var chunks []*genai.GenerateContentResponse
	if stream {
		for resp, err := range client.Models.GenerateContentStream(ctx, "model-x", contents, config) {
			if err != nil {
				return seen{}, err
			}
			chunks = append(chunks, resp)
		}
	} else {
		resp, err := client.Models.GenerateContent(ctx, "model-x", contents, config)
		if err != nil {
			return seen{}, err
		}
		chunks = append(chunks, resp)
	}
	var got seen
	var finish genai.FinishReason
	for _, resp := range chunks {
		if len(resp.Candidates) != 1 {
			return seen{}, fmt.Errorf("%d candidates", len(resp.Candidates))
		}
		cand := resp.Candidates[0]
		if cand.FinishReason != "" {
			finish = cand.FinishReason
		}
		if cand.Content == nil {
			continue
		}
		for _, p := range cand.Content.Parts {
			switch {
			case p.FunctionCall != nil:
				args, _ := json.Marshal(p.FunctionCall.Args)
				got.Calls = append(got.Calls, agenttest.Call{ID: p.FunctionCall.ID, Name: p.FunctionCall.Name, Arguments: string(args)})
			case p.Thought:
				got.Thinking += p.Text
			default:
				got.Text += p.Text
			}
		}
	}
	last := chunks[len(chunks)-1].UsageMetadata
	if last == nil {
		return seen{}, errors.New("no usageMetadata on the last chunk")
	}
	got.Usage = agenttest.Tokens{Prompt: int64(last.PromptTokenCount),
		Completion: int64(last.CandidatesTokenCount + last.ThoughtsTokenCount),
		CacheRead:  int64(last.CachedContentTokenCount), Reasoning: int64(last.ThoughtsTokenCount)}
	if last.TotalTokenCount != last.PromptTokenCount+last.CandidatesTokenCount+last.ThoughtsTokenCount {
		return seen{}, fmt.Errorf("totalTokenCount %d is not the sum of its parts", last.TotalTokenCount)
	}
	got.Refusal = finish == genai.FinishReasonSafety
	if !got.Refusal && finish != genai.FinishReasonStop {
		return seen{}, fmt.Errorf("finishReason %q", finish)
	}
	return got, nil
}

func openAIClient(srv *agenttest.Server) openai.Client {
	return openai.NewClient(ooption.WithBaseURL(srv.BaseURL()), ooption.WithAPIKey("test-key"), ooption.WithMaxRetries(0))
}

func stringProps(props ...string) map[string]any {
	p := map[string]any{}
	for _, k := range props {
		p[k] = map[string]any{"type": "string"}
	}
	return map[string]any{"type": "object", "properties": p, "required": props}
}

func askChat(ctx context.Context, srv *agenttest.Server, stream bool) (seen, error) {
	client := openAIClient(srv)
	params := openai.ChatCompletionNewParams{
		Model: "model-x",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("SYS"),
			openai.UserMessage("INPUT"),
			{OfAssistant: &openai.ChatCompletionAssistantMessageParam{ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{
				{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: "call_prev",
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "bash", Arguments: `{"command":"ls"}`}}}}}},
			openai.ToolMessage("RESULT-1", "call_prev"),
		},
		Tools: []openai.ChatCompletionToolUnionParam{
			openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "bash", Parameters: stringProps("command")}),
			openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "write_file", Parameters: stringProps("path", "content")}),
		},
	}
	var cc openai.ChatCompletion
	var thinking string
	if stream {
		params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		s := client.Chat.Completions.NewStreaming(ctx, params)
		acc := openai.ChatCompletionAccumulator{}
		for s.Next() {
			chunk := s.Current()
			acc.AddChunk(chunk)
			if len(chunk.Choices) > 0 {
				thinking += extraString(chunk.Choices[0].Delta.JSON.ExtraFields["reasoning_content"].Raw())
			}
		}
		if err := s.Err(); err != nil {
			return seen{}, err
		}
		cc = acc.ChatCompletion
	} else {
		res, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			return seen{}, err
		}
		cc = *res
		thinking = extraString(cc.Choices[0].Message.JSON.ExtraFields["reasoning_content"].Raw())
	}
	if len(cc.Choices) != 1 {
		return seen{}, fmt.Errorf("%d choices", len(cc.Choices))
	}
	m := cc.Choices[0].Message
	got := seen{Text: m.Content, Thinking: thinking, Refusal: m.Refusal != ""}
	for _, tc := range m.ToolCalls {
		got.Calls = append(got.Calls, agenttest.Call{ID: tc.ID, Name: tc.Function.Name, Arguments: compact(tc.Function.Arguments)})
	}
	wantFinish := "stop"
	if len(got.Calls) > 0 {
		wantFinish = "tool_calls"
	}
	if f := cc.Choices[0].FinishReason; f != wantFinish {
		return seen{}, fmt.Errorf("finish_reason %q, want %q", f, wantFinish)
	}
	u := cc.Usage
	got.Usage = agenttest.Tokens{Prompt: u.PromptTokens, Completion: u.CompletionTokens,
		CacheRead: u.PromptTokensDetails.CachedTokens, Reasoning: u.CompletionTokensDetails.ReasoningTokens}
	if u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		return seen{}, fmt.Errorf("total_tokens %d", u.TotalTokens)
	}
	return got, nil
}

// extraString decodes a JSON string field the SDK keeps only as raw JSON; "" when absent.
func extraString(raw string) string {
	var s string
	_ = json.Unmarshal([]byte(raw), &s)
	return s
}

func askResponses(ctx context.Context, srv *agenttest.Server, stream bool) (seen, error) {
	client := openAIClient(srv)
	params := responses.ResponseNewParams{
		Model:        "model-x",
		Instructions: openai.String("SYS"),
		Store:        openai.Bool(false),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("INPUT", responses.EasyInputMessageRoleUser),
			responses.ResponseInputItemParamOfFunctionCall(`{"command":"ls"}`, "call_prev", "bash"),
			{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{CallID: openai.String("call_prev"),
				Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String("RESULT-1")}}},
		}},
		Tools: []responses.ToolUnionParam{
			{OfFunction: &responses.FunctionToolParam{Name: "bash", Parameters: stringProps("command"), Strict: openai.Bool(false)}},
			{OfFunction: &responses.FunctionToolParam{Name: "write_file", Parameters: stringProps("path", "content"), Strict: openai.Bool(false)}},
		},
	}
	var resp responses.Response
	var deltas, thinkingDeltas, argDeltas strings.Builder
	if stream {
		s := client.Responses.NewStreaming(ctx, params)
		completed := false
		for s.Next() {
			ev := s.Current()
			switch ev.Type {
			case "response.output_text.delta":
				deltas.WriteString(ev.Delta)
			case "response.reasoning_summary_text.delta":
				thinkingDeltas.WriteString(ev.Delta)
			case "response.function_call_arguments.delta":
				argDeltas.WriteString(ev.Delta)
			case "response.completed":
				resp, completed = ev.AsResponseCompleted().Response, true
			}
		}
		if err := s.Err(); err != nil {
			return seen{}, err
		}
		if !completed {
			return seen{}, errors.New("no response.completed event")
		}
	} else {
		res, err := client.Responses.New(ctx, params)
		if err != nil {
			return seen{}, err
		}
		resp = *res
	}
	got := seen{Text: resp.OutputText()}
	var args strings.Builder
	for _, item := range resp.Output {
		switch item.Type {
		case "reasoning":
			for _, s := range item.Summary {
				got.Thinking += s.Text
			}
		case "message":
			for _, c := range item.Content {
				if c.Type == "refusal" {
					got.Refusal = true
				}
			}
		case "function_call":
			fc := item.AsFunctionCall()
			args.WriteString(fc.Arguments)
			got.Calls = append(got.Calls, agenttest.Call{ID: fc.CallID, Name: fc.Name, Arguments: compact(fc.Arguments)})
		}
	}
	if stream && (deltas.String() != got.Text || thinkingDeltas.String() != got.Thinking || argDeltas.String() != args.String()) {
		return seen{}, fmt.Errorf("deltas %q/%q/%q do not add up to the completed response", deltas.String(), thinkingDeltas.String(), argDeltas.String())
	}
	u := resp.Usage
	got.Usage = agenttest.Tokens{Prompt: u.InputTokens, Completion: u.OutputTokens,
		CacheRead: u.InputTokensDetails.CachedTokens, Reasoning: u.OutputTokensDetails.ReasoningTokens}
	if resp.Status != "completed" {
		return seen{}, fmt.Errorf("status %q", resp.Status)
	}
	return got, nil
}

// TestErrorsThroughOfficialSDKs checks that each provider's error reply reaches its SDK as
// that provider's error, with the status and type a client retries on.
func TestErrorsThroughOfficialSDKs(t *testing.T) {
	tests := []struct {
		name   string
		status int
		new    func(testing.TB, func(int, agenttest.Request) agenttest.Reply, ...agenttest.Option) *agenttest.Server
		call   func(context.Context, *agenttest.Server) error
		check  func(error) string // "" when the error is as expected
	}{
		{"anthropic overloaded", agenttest.StatusOverloaded, agenttest.NewAnthropic, anthropicCall,
			anthropicErr(agenttest.StatusOverloaded, "overloaded_error")},
		{"anthropic rate limited", http.StatusTooManyRequests, agenttest.NewAnthropic, anthropicCall,
			anthropicErr(http.StatusTooManyRequests, "rate_limit_error")},
		{"gemini resource exhausted", http.StatusTooManyRequests, agenttest.NewGemini, geminiCall,
			geminiErr(http.StatusTooManyRequests, "RESOURCE_EXHAUSTED")},
		{"gemini unavailable", http.StatusServiceUnavailable, agenttest.NewGemini, geminiCall,
			geminiErr(http.StatusServiceUnavailable, "UNAVAILABLE")},
		{"openai rate limited", http.StatusTooManyRequests, agenttest.NewOpenAI, chatCall,
			openAIErr(http.StatusTooManyRequests)},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(tt.name+"/stream="+strconv.FormatBool(stream), func(t *testing.T) {
				srv := tt.new(t, agenttest.Scripted(func(_ int, c agenttest.Conv) (agenttest.Turn, *agenttest.Reply) {
					if c.Stream != stream {
						t.Errorf("parsed stream=%v", c.Stream)
					}
					return agenttest.Turn{}, agenttest.FailFor(c, tt.status)
				}))
				ctx := context.WithValue(t.Context(), streamKey{}, stream)
				err := tt.call(ctx, srv)
				if err == nil {
					t.Fatal("no error")
				}
				if msg := tt.check(err); msg != "" {
					t.Errorf("%v: %s", err, msg)
				}
				if srv.Count() != 1 {
					t.Errorf("%d requests, want 1 (retries are off)", srv.Count())
				}
			})
		}
	}
}

type streamKey struct{}

func anthropicCall(ctx context.Context, srv *agenttest.Server) error {
	client := anthropic.NewClient(aoption.WithoutEnvironmentDefaults(), aoption.WithBaseURL(srv.URL),
		aoption.WithAPIKey("k"), aoption.WithMaxRetries(0))
	params := anthropic.MessageNewParams{Model: "m", MaxTokens: 10,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}
	if ctx.Value(streamKey{}) == true {
		s := client.Messages.NewStreaming(ctx, params)
		for s.Next() {
		}
		return s.Err()
	}
	_, err := client.Messages.New(ctx, params)
	return err
}

func anthropicErr(status int, typ string) func(error) string {
	return func(err error) string {
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) {
			return "not an *anthropic.Error"
		}
		var body struct {
			Type  string `json:"type"`
			Error struct {
				Type string `json:"type"`
			} `json:"error"`
		}
		_ = json.Unmarshal([]byte(apiErr.RawJSON()), &body)
		if apiErr.StatusCode != status || body.Type != "error" || body.Error.Type != typ {
			return fmt.Sprintf("status %d type %q/%q, want %d error/%q", apiErr.StatusCode, body.Type, body.Error.Type, status, typ)
		}
		if status == http.StatusTooManyRequests && apiErr.Response.Header.Get("retry-after") == "" {
			return "429 without retry-after"
		}
		return ""
	}
}

func geminiCall(ctx context.Context, srv *agenttest.Server) error {
	client, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "k", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL}})
	if err != nil {
		return err
	}
	contents := genai.Text("hi")
	if ctx.Value(streamKey{}) == true {
		for _, err := range client.Models.GenerateContentStream(ctx, "m", contents, nil) {
			if err != nil {
				return err
			}
		}
		return nil
	}
	_, err = client.Models.GenerateContent(ctx, "m", contents, nil)
	return err
}

func geminiErr(status int, name string) func(error) string {
	return func(err error) string {
		var apiErr genai.APIError
		if !errors.As(err, &apiErr) {
			return "not a genai.APIError"
		}
		if apiErr.Code != status || apiErr.Status != name {
			return fmt.Sprintf("code %d status %q, want %d %q", apiErr.Code, apiErr.Status, status, name)
		}
		return ""
	}
}

func chatCall(ctx context.Context, srv *agenttest.Server) error {
	client := openAIClient(srv)
	params := openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	if ctx.Value(streamKey{}) == true {
		s := client.Chat.Completions.NewStreaming(ctx, params)
		for s.Next() {
		}
		return s.Err()
	}
	_, err := client.Chat.Completions.New(ctx, params)
	return err
}

func openAIErr(status int) func(error) string {
	return func(err error) string {
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != status {
			return fmt.Sprintf("want an *openai.Error with status %d", status)
		}
		return ""
	}
}

// TestTokenCounting checks the count endpoints answer the SDKs without counting as turns.
func TestTokenCounting(t *testing.T) {
	srv := agenttest.NewAny(t, func(int, agenttest.Request) agenttest.Reply {
		t.Error("a token count reached the script")
		return agenttest.Fail(http.StatusBadRequest)
	})
	ac := anthropic.NewClient(aoption.WithoutEnvironmentDefaults(), aoption.WithBaseURL(srv.URL), aoption.WithAPIKey("k"))
	n, err := ac.Messages.CountTokens(t.Context(), anthropic.MessageCountTokensParams{Model: "m",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("count these words please"))}})
	if err != nil || n.InputTokens <= 0 {
		t.Errorf("anthropic count_tokens: %v, %+v", err, n)
	}
	gc, err := genai.NewClient(t.Context(), &genai.ClientConfig{APIKey: "k", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	gn, err := gc.Models.CountTokens(t.Context(), "m", genai.Text("count these words please"), nil)
	if err != nil || gn.TotalTokens <= 0 {
		t.Errorf("gemini countTokens: %v, %+v", err, gn)
	}
	if srv.Count() != 0 || len(srv.Requests()) != 0 {
		t.Errorf("token counts were counted: %d", srv.Count())
	}
}

// recordingTB records the test failures a server reports instead of failing the test.
type recordingTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestRouting(t *testing.T) {
	ok := func(int, agenttest.Request) agenttest.Reply { return agenttest.Text("hi", 1, 1) }
	tests := []struct {
		name          string
		new           func(testing.TB, func(int, agenttest.Request) agenttest.Reply, ...agenttest.Option) *agenttest.Server
		method, path  string
		header        map[string]string
		status, count int
		reported      bool // the server fails the test
	}{
		{"anthropic messages", agenttest.NewAnthropic, "POST", "/v1/messages?beta=true", nil, 200, 1, false},
		{"anthropic count_tokens", agenttest.NewAnthropic, "POST", "/v1/messages/count_tokens", nil, 200, 0, false},
		{"anthropic serves no chat", agenttest.NewAnthropic, "POST", "/v1/chat/completions", nil, 404, 1, true},
		{"gemini generate", agenttest.NewGemini, "POST", "/v1beta/models/m:generateContent", nil, 200, 1, false},
		{"gemini stream", agenttest.NewGemini, "POST", "/v1beta/models/m:streamGenerateContent?alt=sse", nil, 200, 1, false},
		{"gemini JSON-array stream", agenttest.NewGemini, "POST", "/v1beta/models/m:streamGenerateContent", nil, 404, 1, true},
		{"gemini countTokens", agenttest.NewGemini, "POST", "/v1beta/models/m:countTokens", nil, 200, 0, false},
		{"openai responses", agenttest.NewOpenAI, "POST", "/v1/responses", nil, 200, 1, false},
		{"openai responses websocket", agenttest.NewOpenAI, "GET", "/v1/responses",
			map[string]string{"Upgrade": "websocket", "Connection": "Upgrade"}, http.StatusUpgradeRequired, 0, false},
		{"openai serves no messages", agenttest.NewOpenAI, "POST", "/v1/messages", nil, 404, 1, true},
		{"any serves gemini", agenttest.NewAny, "POST", "/v1beta/models/m:generateContent", nil, 200, 1, false},
		{"any serves anthropic", agenttest.NewAny, "POST", "/v1/messages", nil, 200, 1, false},
		{"any rejects GET", agenttest.NewAny, "GET", "/v1/models", nil, 404, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recordingTB{TB: t}
			srv := tt.new(rec, ok)
			req, err := http.NewRequestWithContext(t.Context(), tt.method, srv.URL+tt.path, strings.NewReader(`{"model":"m"}`))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != tt.status || srv.Count() != tt.count {
				t.Errorf("status %d, counted %d; want %d, %d", resp.StatusCode, srv.Count(), tt.status, tt.count)
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if (len(rec.errs) > 0) != tt.reported {
				t.Errorf("reported %q, want reported=%v", rec.errs, tt.reported)
			}
		})
	}
}

// TestParseConvShapes covers request shapes the SDK tests do not send: what Codex, Claude Code
// and the Gemini CLI put on the wire.
func TestParseConvShapes(t *testing.T) {
	tests := []struct {
		name, path, body string
		want             agenttest.Conv
	}{
		{"responses like codex", "/v1/responses", `{"model":"gpt-5","instructions":"BASE","stream":true,
			"input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"DEV"}]},
			{"type":"message","role":"user","content":[{"type":"input_text","text":"TASK"}]},
			{"type":"reasoning","summary":[]},
			{"type":"function_call","call_id":"c1","name":"shell","arguments":"{}"},
			{"type":"function_call_output","call_id":"c1","output":"OUT"},
			{"type":"custom_tool_call_output","call_id":"c2","output":"PATCHED"}],
			"tools":[{"type":"function","name":"shell"},{"type":"custom","name":"apply_patch"},{"type":"web_search"}]}`,
			agenttest.Conv{Protocol: agenttest.ProtocolResponses, Model: "gpt-5", System: "BASE\nDEV", Input: "TASK",
				ToolResults: []string{"OUT", "PATCHED"}, Tools: []string{"shell", "apply_patch", "web_search"}, Stream: true}},
		{"responses string input", "/v1/responses", `{"model":"m","input":"JUST TEXT"}`,
			agenttest.Conv{Protocol: agenttest.ProtocolResponses, Model: "m", Input: "JUST TEXT"}},
		{"anthropic like claude code", "/v1/messages", `{"model":"claude","stream":true,
			"system":[{"type":"text","text":"You are Claude Code."},{"type":"text","text":"SKILLS"}],
			"messages":[{"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"TASK"}]},
			{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"A"},{"type":"text","text":"B"}]}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"C"}]}],
			"tools":[{"name":"Bash"},{"name":"Skill"}]}`,
			agenttest.Conv{Protocol: agenttest.ProtocolAnthropic, Model: "claude", System: "You are Claude Code.\nSKILLS",
				Input: "<system-reminder>x</system-reminder>\nTASK", ToolResults: []string{"A\nB", "C"},
				Tools: []string{"Bash", "Skill"}, Stream: true}},
		{"gemini like the cli", "/v1beta/models/gemini-2.5-pro:streamGenerateContent", `{
			"systemInstruction":{"role":"user","parts":[{"text":"SYS"}]},
			"contents":[{"role":"user","parts":[{"text":"TASK"}]},
			{"role":"model","parts":[{"text":"hmm","thought":true},{"functionCall":{"name":"run_shell_command","args":{}}}]},
			{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"output":"OUT"}}},
			{"functionResponse":{"name":"x","response":{"error":"E","code":1}}}]}],
			"tools":[{"functionDeclarations":[{"name":"run_shell_command"},{"name":"read_file"}]}]}`,
			agenttest.Conv{Protocol: agenttest.ProtocolGemini, Model: "gemini-2.5-pro", System: "SYS", Input: "TASK",
				ToolResults: []string{"OUT", `{"code":1,"error":"E"}`}, Tools: []string{"run_shell_command", "read_file"}, Stream: true}},
		{"unknown path", "/v1/embeddings", `{"model":"e"}`, agenttest.Conv{Model: "e"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := agenttest.ParseConv(agenttest.Request{Path: tt.path, Body: []byte(tt.body)})
			got.Raw = agenttest.Request{}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}
