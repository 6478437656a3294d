package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// openAIProvider speaks OpenAI's Chat Completions, the API every OpenAI-compatible server
// (vLLM, Ollama, llama.cpp, LM Studio, gateways) serves.
type openAIProvider struct {
	chat openai.ChatCompletionService
}

// newOpenAIProvider builds the SDK's chat completion service from explicit options only.
// openai.NewClient is deliberately not used: it always applies the SDK's environment defaults
// first (OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_ADMIN_KEY, OPENAI_ORG_ID, OPENAI_PROJECT_ID,
// OPENAI_CUSTOM_HEADERS) and the switch that turns them off is internal to the SDK. Our options
// would override the base URL and key, but the organisation, project and custom headers would
// still ride along, and with an empty APIKey (a local server) OPENAI_ADMIN_KEY would be sent as
// the bearer token to whatever endpoint is configured. The SDK's own retries are off: the
// Client retries itself, bounded, observable and with an injectable sleep.
func newOpenAIProvider(ep Endpoint, hc *http.Client) *openAIProvider {
	opts := []option.RequestOption{
		option.WithBaseURL(ep.BaseURL),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	}
	if ep.APIKey != "" {
		opts = append(opts, option.WithAPIKey(ep.APIKey))
	}
	return &openAIProvider{chat: openai.NewChatCompletionService(opts...)}
}

func (p *openAIProvider) send(ctx context.Context, c Conversation, model string) (*Answer, Usage, *http.Response, error) {
	var raw *http.Response
	comp, err := p.chat.New(ctx, openAIParams(c, model), option.WithResponseInto(&raw))
	if err != nil {
		return nil, Usage{}, raw, err
	}
	u := Usage{PromptTokens: comp.Usage.PromptTokens, CompletionTokens: comp.Usage.CompletionTokens,
		CacheReadTokens: comp.Usage.PromptTokensDetails.CachedTokens}
	if len(comp.Choices) == 0 {
		// Tokens were still paid for; the Client counts them, then refuses the answer.
		return nil, u, raw, fmt.Errorf("%w: no choices", ErrMalformedResponse)
	}
	ch := comp.Choices[0]
	msg := ch.Message
	a := &Answer{Model: comp.Model, Text: msg.Content, StopDetail: ch.FinishReason, Replay: msg.ToParam()}
	for _, call := range msg.ToolCalls {
		name, args := call.Function.Name, call.Function.Arguments
		if call.Type == "custom" {
			name, args = call.Custom.Name, call.Custom.Input
		}
		a.Calls = append(a.Calls, ToolCallRequest{ID: call.ID, Name: name, Arguments: args})
	}
	switch {
	case msg.Refusal != "" && msg.Content == "":
		a.Stop, a.Text = StopRefusal, msg.Refusal
	case ch.FinishReason == "content_filter":
		a.Stop = StopSafety
	case len(a.Calls) > 0:
		a.Stop = StopToolUse
	case ch.FinishReason == "length":
		a.Stop = StopMaxTokens
	case ch.FinishReason == "stop" || ch.FinishReason == "":
		a.Stop = StopEnd
	default:
		a.Stop = StopOther
	}
	return a, u, raw, nil
}

// openAIParams is the Chat Completions request of a conversation.
func openAIParams(c Conversation, model string) openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{Model: model}
	if c.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(c.System))
	}
	for _, m := range c.Messages {
		switch m.Role {
		case RoleUser:
			p.Messages = append(p.Messages, openai.UserMessage(m.Text))
		case RoleTool:
			p.Messages = append(p.Messages, openai.ToolMessage(m.Text, m.CallID))
		case RoleAssistant:
			if r, ok := m.Replay.(openai.ChatCompletionMessageParamUnion); ok {
				p.Messages = append(p.Messages, r)
				continue
			}
			am := openai.ChatCompletionAssistantMessageParam{}
			if m.Text != "" {
				am.Content.OfString = openai.String(m.Text)
			}
			for _, call := range m.Calls {
				am.ToolCalls = append(am.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: call.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: call.Name, Arguments: call.Arguments}}})
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &am})
		}
	}
	for _, t := range c.Tools {
		def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: t.Parameters}
		if t.Description != "" {
			def.Description = openai.String(t.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(def))
	}
	if c.Temperature != nil {
		p.Temperature = openai.Float(*c.Temperature)
	}
	if c.MaxOutput > 0 {
		p.MaxCompletionTokens = openai.Int(c.MaxOutput)
	}
	if s := c.Schema; s != nil {
		js := shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: s.Name, Strict: openai.Bool(true), Schema: s.Schema}
		if s.Description != "" {
			js.Description = openai.String(s.Description)
		}
		p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{JSONSchema: js}}
	}
	return p
}

func (p *openAIProvider) retryable(status int, _ error) bool { return retryable(status) }

func (p *openAIProvider) message(err error) string {
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		return ""
	}
	return apiErr.Message
}
