package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// anthropicVersion is the Messages API version requests ask for. The v2 SDK defaults to a
// later version whose request shape it models (no temperature, among others); the shape this
// provider sends, and every Anthropic-compatible gateway serves, is 2023-06-01's.
const anthropicVersion = "2023-06-01"

// anthropicProvider speaks Anthropic's Messages API.
type anthropicProvider struct {
	messages anthropic.MessageService
}

// newAnthropicProvider builds the SDK's message service from explicit options only.
// anthropic.NewClient is deliberately not used: without a credential option it walks the SDK's
// credential chain (ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, ANTHROPIC_PROFILE, federation
// variables, a profile on disk) and with one it still applies ANTHROPIC_BASE_URL and
// ANTHROPIC_CUSTOM_HEADERS, so the environment could redirect requests or send another key.
// The service constructor reads nothing from the environment.
//
// The key goes in the x-api-key header, as the API documents: the SDK's WithAPIKey sends it as
// a bearer token, which Anthropic-compatible gateways do not all accept. The SDK's own retries
// are off (the Client retries, bounded, observable and with an injectable sleep) and so are
// its OpenTelemetry spans, which would otherwise be configured by ANTHROPIC_OPEN_TELEMETRY*.
// The SDK's attempt timeout is the endpoint's: set, it also keeps the SDK from refusing a large
// max_tokens without streaming before any request is made, an error the Client would take for
// a transport failure and retry.
func newAnthropicProvider(ep Endpoint, hc *http.Client) *anthropicProvider {
	opts := []option.RequestOption{
		option.WithBaseURL(anthropicBaseURL(ep.BaseURL)),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
		option.WithHeader("anthropic-version", anthropicVersion),
		option.WithoutOpenTelemetry(),
		option.WithOpenTelemetryPropagation(false),
	}
	if ep.RequestTimeout > 0 {
		opts = append(opts, option.WithRequestTimeout(ep.RequestTimeout))
	}
	if ep.APIKey != "" {
		opts = append(opts, option.WithHeader("x-api-key", ep.APIKey))
	}
	return &anthropicProvider{messages: anthropic.NewMessageService(opts...)}
}

// anthropicBaseURL is the base URL the SDK wants, without the /v1 it adds itself: a base URL
// configured with it (as OpenAI's are) would otherwise be requested at /v1/v1/messages.
func anthropicBaseURL(base string) string {
	base = strings.TrimRight(base, "/")
	return strings.TrimSuffix(base, "/v1")
}

func (p *anthropicProvider) send(ctx context.Context, c Conversation, model string) (*Answer, Usage, *http.Response, error) {
	var raw *http.Response
	opts := []option.RequestOption{option.WithResponseInto(&raw)}
	if c.Temperature != nil {
		// The SDK's params have no temperature (the API version it models dropped it); the
		// version requested here takes one.
		opts = append(opts, option.WithJSONSet("temperature", *c.Temperature))
	}
	msg, err := p.messages.New(ctx, anthropicParams(c, model), opts...)
	if err != nil {
		return nil, Usage{}, raw, err
	}
	mu := msg.Usage
	u := Usage{
		PromptTokens:     mu.InputTokens + mu.CacheCreationInputTokens + mu.CacheReadInputTokens,
		CompletionTokens: mu.OutputTokens,
		CacheReadTokens:  mu.CacheReadInputTokens,
		CacheWriteTokens: mu.CacheCreationInputTokens,
	}
	a := &Answer{Model: string(msg.Model), StopDetail: string(msg.StopReason), Replay: msg.ToParam()}
	var text, reasoning []string
	var structured *string
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text = append(text, b.Text)
		case "thinking":
			reasoning = append(reasoning, b.Thinking)
		case "redacted_thinking":
			reasoning = append(reasoning, "[redacted thinking]")
		case "tool_use":
			args := "{}"
			if len(bytes.TrimSpace(b.Input)) > 0 {
				args = string(b.Input)
			}
			if c.Schema != nil && b.Name == c.Schema.Name && structured == nil {
				var buf bytes.Buffer
				if json.Compact(&buf, []byte(args)) == nil {
					args = buf.String()
				}
				structured = &args
				continue
			}
			a.Calls = append(a.Calls, ToolCallRequest{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	a.Text = strings.Join(text, "")
	a.Reasoning = strings.Join(reasoning, "\n")
	if structured != nil {
		// The forced tool call is the structured answer, not a call to run.
		a.Text, a.Calls = *structured, nil
	}
	switch msg.StopReason {
	case anthropic.StopReasonRefusal:
		a.Stop = StopRefusal
	case anthropic.StopReasonToolUse:
		a.Stop = StopToolUse
		if structured != nil {
			a.Stop = StopEnd
		}
	case anthropic.StopReasonEndTurn, anthropic.StopReasonStopSequence:
		a.Stop = StopEnd
	case anthropic.StopReasonMaxTokens:
		a.Stop = StopMaxTokens
	default:
		a.Stop = StopOther
	}
	return a, u, raw, nil
}

// anthropicParams is the Messages request of a conversation.
func anthropicParams(c Conversation, model string) anthropic.MessageNewParams {
	p := anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: c.MaxOutput}
	if p.MaxTokens <= 0 {
		p.MaxTokens = DefaultMaxOutput
	}
	if c.System != "" {
		// The system prompt is the same for every job of a run: cached, the jobs after the
		// first pay the cache-read price for it.
		p.System = []anthropic.TextBlockParam{{Text: c.System, CacheControl: anthropic.NewCacheControlEphemeralParam()}}
	}
	// userBlocks adds blocks to the user message the conversation ends with, or starts one:
	// the results of an assistant's parallel tool calls must all come in the one user message
	// that follows it.
	userBlocks := func(blocks ...anthropic.ContentBlockParamUnion) {
		if n := len(p.Messages); n > 0 && p.Messages[n-1].OfUser != nil {
			u := p.Messages[n-1].OfUser
			u.Content = append(u.Content, blocks...)
			return
		}
		p.Messages = append(p.Messages, anthropic.NewUserMessage(blocks...))
	}
	for _, m := range c.Messages {
		switch m.Role {
		case RoleUser:
			if m.Text != "" {
				userBlocks(anthropic.NewTextBlock(m.Text))
			}
		case RoleTool:
			res := anthropic.ToolResultBlockParam{ToolUseID: m.CallID}
			if m.Text != "" {
				// An empty text block is refused; an empty result is no content at all.
				res.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: m.Text}}}
			}
			userBlocks(anthropic.ContentBlockParamUnion{OfToolResult: &res})
		case RoleAssistant:
			if r, ok := m.Replay.(anthropic.MessageParam); ok && r.OfAssistant != nil {
				p.Messages = append(p.Messages, r)
				continue
			}
			var blocks []anthropic.ContentBlockParamUnion
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			for _, call := range m.Calls {
				blocks = append(blocks, anthropic.NewToolUseBlock(call.ID, toolInput(call.Arguments), call.Name))
			}
			if len(blocks) > 0 {
				p.Messages = append(p.Messages, anthropic.NewAssistantMessage(blocks...))
			}
		}
	}
	for _, t := range c.Tools {
		p.Tools = append(p.Tools, anthropicTool(t.Name, t.Description, t.Parameters))
	}
	if s := c.Schema; s != nil {
		// Messages has no response format: a tool the model must call, whose input is the
		// answer, gets the same schema-shaped JSON.
		p.Tools = append(p.Tools, anthropicTool(s.Name, s.Description, s.Schema))
		p.ToolChoice = anthropic.ToolChoiceParamOfTool(s.Name)
	}
	return p
}

// anthropicTool is a tool definition; its input schema is the JSON schema as given (an
// object's, which is all Messages takes).
func anthropicTool(name, description string, schema map[string]any) anthropic.ToolUnionParam {
	in := anthropic.ToolInputSchemaParam{ExtraFields: map[string]any{}}
	for k, v := range schema {
		switch k {
		case "type":
		case "properties":
			in.Properties = v
		case "required":
			in.Required = stringList(v)
		default:
			in.ExtraFields[k] = v
		}
	}
	t := anthropic.ToolUnionParamOfTool(in, name)
	if description != "" {
		t.OfTool.Description = anthropic.String(description)
	}
	return t
}

// stringList is a schema's list of names, whether it was built in Go or decoded from JSON.
func stringList(v any) []string {
	switch v := v.(type) {
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, s := range v {
			if s, ok := s.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// toolInput is a call's arguments as the JSON object a tool_use block carries. Arguments that
// are no object (a foreign provider's malformed call) are kept, as ATIF keeps them, under
// "_raw", so that the model sees what it wrote.
func toolInput(args string) any {
	trimmed := strings.TrimSpace(args)
	if trimmed == "" {
		return json.RawMessage("{}")
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(trimmed), &obj) != nil || obj == nil {
		return map[string]string{"_raw": args}
	}
	return json.RawMessage(trimmed)
}

// retryable adds Anthropic's overloaded_error to the statuses every protocol retries: it comes
// as 529, but a gateway may relay it under another status.
func (p *anthropicProvider) retryable(status int, err error) bool {
	if retryable(status) {
		return true
	}
	var apiErr *anthropic.Error
	return errors.As(err, &apiErr) && apiErr.Type() == anthropic.ErrorTypeOverloadedError
}

func (p *anthropicProvider) message(err error) string {
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) {
		return ""
	}
	return apiErr.Message
}
