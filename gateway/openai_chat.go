package gateway

import (
	"bytes"
	"cmp"
	"encoding/json"
	"maps"
	"strings"
)

// chatFields are the Chat Completions fields the gateway forwards. Not among them: n (more
// than one choice multiplies the output a reservation must cover, and no agent loop needs
// it; n: 1 is accepted), store: true (stored completions outlive the job), audio, modalities,
// prediction, web_search_options (a hosted search), functions / function_call (the legacy
// form of tools), logit_bias, logprobs, metadata. service_tier is dropped, or pinned by the
// agent's config (Config.ServiceTier).
var chatFields = map[string]fieldCheck{
	"model":                 isString,
	"messages":              isArray,
	"tools":                 isArray, // checked by openAITools
	"tool_choice":           openAIToolChoice,
	"parallel_tool_calls":   isBool,
	"temperature":           isNumber,
	"top_p":                 isNumber,
	"frequency_penalty":     isNumber,
	"presence_penalty":      isNumber,
	"max_tokens":            isMaxOutput,
	"max_completion_tokens": isMaxOutput,
	"stream":                isBool,
	"stream_options":        isObject,
	"stop":                  isStop,
	"seed":                  isInt,
	"response_format":       isObject,
	"reasoning_effort":      isString,
	"verbosity":             isString,
	"user":                  isString,
	"prompt_cache_key":      isString,
	"n":                     isOne,
	"store":                 isFalse("stored completions outlive the job"),
}

// chatRequest is a parsed Chat Completions request.
type chatRequest struct {
	requestInfo
	params map[string]json.RawMessage
	// clientWantsUsage: the CLI asked for the usage chunk itself, so it is passed on.
	clientWantsUsage bool
	// maxOutputField is where the client's max output (maxOutput) came, and where the
	// gateway's goes.
	maxOutputField string
	serviceTier    string
}

// parseChat checks a Chat Completions body. chatMaxField is where a max output goes when the
// client named none (Config.MaxTokensField).
func parseChat(body []byte, chatMaxField, serviceTier string) (*chatRequest, *Refusal) {
	params, ref := parseObject(body)
	if ref != nil {
		return nil, ref
	}
	if ref := checkFields(params, chatFields, nil, []string{"service_tier"}, "messages"); ref != nil {
		return nil, ref
	}
	p := &chatRequest{params: params, maxOutputField: chatMaxField, serviceTier: serviceTier}
	if p.tools, p.removed, ref = openAICommon(params, "messages", &p.model, &p.stream); ref != nil {
		return nil, ref
	}
	// The client's own max output (the smaller, if it named two), under the field it used;
	// one the gateway sets goes under chatMaxField.
	for _, f := range []string{"max_completion_tokens", "max_tokens"} {
		if raw, ok := params[f]; ok {
			var n int64
			_ = decodeChecked(raw, &n)
			if p.maxOutput == 0 || n < p.maxOutput {
				p.maxOutput, p.maxOutputField = n, f
			}
		}
	}
	if p.stream {
		if raw, ok := params["stream_options"]; ok {
			var opts map[string]json.RawMessage
			_ = decodeChecked(raw, &opts)
			if iu, ok := opts["include_usage"]; ok && decodeChecked(iu, &p.clientWantsUsage) != nil {
				return nil, badRequest(`"stream_options.include_usage" must be a boolean`)
			}
		}
	}
	return p, nil
}

// Build is the body sent upstream: the checked fields, the configured model, maxOutput under
// the request's field, the configured service tier, and for a stream the usage chunk asked
// for (without it a stream could not be metered).
func (p *chatRequest) Build(model string, maxOutput int64) ([]byte, error) {
	out := maps.Clone(p.params)
	// The configured model, whatever the CLI named: CLIs name their own defaults, and the job's
	// owner chose the model (and its price) in the config.
	out["model"] = mustJSON(model)
	delete(out, "store")
	delete(out, "n")
	if p.serviceTier != "" {
		out["service_tier"] = mustJSON(p.serviceTier)
	}
	if maxOutput > 0 {
		// One max, the one reserved: a second, larger one could win upstream.
		delete(out, "max_tokens")
		delete(out, "max_completion_tokens")
		out[p.maxOutputField] = mustJSON(maxOutput)
	}
	if p.stream {
		opts := map[string]json.RawMessage{}
		if raw, ok := out["stream_options"]; ok {
			_ = decodeChecked(raw, &opts)
		}
		opts["include_usage"] = json.RawMessage("true")
		out["stream_options"] = mustJSON(opts)
	} else {
		// stream_options without stream is an error upstream.
		delete(out, "stream_options")
	}
	return marshalObject(out)
}

// chatMessage is a Chat Completions message, the request's and the answer's.
type chatMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	Refusal          string          `json:"refusal"`
	ReasoningContent string          `json:"reasoning_content"`
	ToolCalls        []chatToolCall  `json:"tool_calls"`
	ToolCallID       string          `json:"tool_call_id"`
}

type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
	Custom struct {
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"custom"`
}

func (c chatToolCall) call() Call {
	if c.Type == "custom" {
		return Call{ID: c.ID, Name: c.Custom.Name, Args: c.Custom.Input}
	}
	return Call{ID: c.ID, Name: c.Function.Name, Args: c.Function.Arguments}
}

func (p *chatRequest) RawConversation() []json.RawMessage {
	return appendElements(nil, p.params["messages"])
}

// Conversation converts the messages; a message that is not one is Unreadable.
func (p *chatRequest) Conversation() []Message {
	var raws []json.RawMessage
	_ = decodeChecked(p.params["messages"], &raws) // checked by parseChat
	out := make([]Message, 0, len(raws))
	for _, raw := range raws {
		msg := Message{Raw: raw}
		var m chatMessage
		if decodeChecked(raw, &m) != nil {
			out = append(out, msg)
			continue
		}
		text, ok := contentText(m.Content)
		if !ok {
			out = append(out, msg)
			continue
		}
		msg.Text = text
		switch m.Role {
		case "system", "developer":
			msg.Role = System
		case "user":
			msg.Role = User
		case "assistant":
			msg.Role = Agent
			msg.Text = cmp.Or(text, m.Refusal)
			msg.Reasoning = m.ReasoningContent
			for _, c := range m.ToolCalls {
				msg.Calls = append(msg.Calls, c.call())
			}
		case "tool":
			msg.Role, msg.CallID = ToolResult, m.ToolCallID
		}
		out = append(out, msg)
	}
	return out
}

// chatAnswer reads a non-streamed answer for the trajectory; nil when it holds none.
func chatAnswer(body []byte) *Turn {
	var a struct {
		Model   string `json:"model"`
		Choices []struct {
			Message      chatMessage `json:"message"`
			FinishReason string      `json:"finish_reason"`
		} `json:"choices"`
	}
	if json.Unmarshal(body, &a) != nil || len(a.Choices) == 0 {
		return nil
	}
	m := a.Choices[0].Message
	text, _ := contentText(m.Content)
	t := &Turn{Model: a.Model, Text: cmp.Or(text, m.Refusal), Reasoning: m.ReasoningContent}
	t.atMaxOutput(a.Choices[0].FinishReason == chatLength)
	if m.Refusal != "" || a.Choices[0].FinishReason == "content_filter" {
		t.Stop = cmp.Or(a.Choices[0].FinishReason, "refusal")
	}
	for _, c := range m.ToolCalls {
		t.Calls = append(t.Calls, c.call())
	}
	return t
}

// chatStream reads a Chat Completions stream: the content and tool call deltas of choice 0,
// the usage chunk (dropped when the client did not ask for it), and [DONE], held back until
// the stream is metered.
type chatStream struct {
	req   *chatRequest
	ans   answerBuf
	usage *openAIUsage
	done  bool
	// chunk is the chunk being read, and choices the array decodeChatChunk reuses from chunk
	// to chunk: a stream of small chunks allocates for neither (a chunk of its own escaped
	// to the heap, one allocation an event).
	chunk   chatChunk
	choices []chatChoice
	// length: choice 0 finished at the max output.
	length bool
}

// chatLength is the finish_reason of an answer cut at its max output.
const chatLength = "length"

func (s *chatStream) Event(_ string, data []byte) bool {
	if string(data) == "[DONE]" {
		s.done = true
		return true
	}
	// The choices' array is the last chunk's, cleared.
	clear(s.choices[:cap(s.choices)])
	s.chunk = chatChunk{Choices: s.choices[:0]}
	chunk := &s.chunk
	if !decodeChatChunk(data, chunk) {
		return false
	}
	if cap(chunk.Choices) > cap(s.choices) {
		s.choices = chunk.Choices[:0]
	}
	s.ans.model = cmp.Or(s.ans.model, chunk.Model)
	for _, c := range chunk.Choices {
		if c.Index != 0 {
			continue
		}
		s.length = s.length || c.FinishReason == chatLength
		s.ans.appendTextBytes(c.Delta.Content)
		s.ans.appendTextBytes(c.Delta.Refusal)
		s.ans.appendReasoningBytes(c.Delta.ReasoningContent)
		for _, tc := range c.Delta.ToolCalls {
			call := s.ans.call(tc.Index)
			if call == nil {
				continue
			}
			call.ID = cmp.Or(call.ID, tc.ID)
			call.Name = cmp.Or(call.Name, tc.Function.Name)
			s.ans.appendArgsBytes(call, tc.Function.Arguments)
		}
	}
	if chunk.Usage != nil {
		s.usage = chunk.Usage
		return !s.req.clientWantsUsage && len(chunk.Choices) == 0
	}
	return false
}

func (s *chatStream) Usage() (Tokens, bool) {
	if s.usage == nil {
		return Tokens{}, false
	}
	return s.usage.tokens(), true
}

func (s *chatStream) Turn(cut bool) *Turn {
	t := s.ans.turn(cut)
	t.atMaxOutput(s.length)
	for i, c := range t.Calls {
		// Chat streams carry arguments as pieces of one string.
		t.Calls[i].Args = mustJSON(string(c.Args))
	}
	return t
}

func (s *chatStream) End() []byte {
	if s.done {
		return []byte("data: [DONE]\n\n")
	}
	return nil
}

// contentText is a message's text: a string, or content parts (strings, or objects with a
// text, refusal or output string) joined by newlines. ok is false for anything else.
func contentText(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", true
	}
	var s string
	if decodeChecked(raw, &s) == nil {
		return s, true
	}
	var parts []json.RawMessage
	if decodeChecked(raw, &parts) != nil {
		return "", false
	}
	var texts []string
	for _, p := range parts {
		if decodeChecked(p, &s) == nil {
			texts = append(texts, s)
			continue
		}
		var part struct {
			Text    *string `json:"text"`
			Refusal *string `json:"refusal"`
		}
		if decodeChecked(p, &part) != nil {
			continue
		}
		// Images, audio and files have no text: left out.
		if t := cmp.Or(part.Text, part.Refusal); t != nil {
			texts = append(texts, *t)
		}
	}
	return strings.Join(texts, "\n"), true
}
