package gateway

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// responsesFields are the Responses API fields the gateway forwards. store is always sent as
// false (the API's default is true); previous_response_id and conversation need stored
// state and are refused with a reason. What current Codex always sends but no upstream
// needs (client_metadata, stream_options) is accepted and dropped, and so is service_tier
// (Codex's fast mode), which the agent's config pins or leaves out.
var responsesFields = map[string]fieldCheck{
	"model":               isString,
	"input":               isStringOrArray,
	"instructions":        isString,
	"tools":               isArray, // checked by openAITools
	"tool_choice":         openAIToolChoice,
	"parallel_tool_calls": isBool,
	"max_output_tokens":   isMaxOutput,
	"stream":              isBool,
	"temperature":         isNumber,
	"top_p":               isNumber,
	"text":                isObject,
	"reasoning":           isObject,
	"include":             isInclude,
	"prompt_cache_key":    isString,
	"user":                isString,
	"safety_identifier":   isString,
	"truncation":          isString,
	"store":               isFalse("stored responses outlive the job; the gateway sends store: false"),
	"background":          isFalse("a background response runs on after the job and escapes its budget"),
}

// responsesDropped are accepted and never forwarded.
// access_programs is Codex's opt-in to a provider-side usage program: a matter for the key's
// owner, not for a sandboxed CLI.
var responsesDropped = []string{"client_metadata", "stream_options", "service_tier", "access_programs"}

// refusedResponsesFields name a reason for fields a CLI may well send.
var refusedResponsesFields = map[string]string{
	"previous_response_id": "it needs a stored response, and the gateway sends store: false; send the whole input instead",
	"conversation":         "it needs stored state, and the gateway sends store: false; send the whole input instead",
	"prompt":               "a stored prompt template is state outside the job; send instructions instead",
}

// allowedIncludes are the Responses API's include values that add nothing a hosted tool or
// stored state would produce: Codex asks for encrypted reasoning when store is false.
var allowedIncludes = []string{"reasoning.encrypted_content", "message.output_text.logprobs"}

func isInclude(name string, raw json.RawMessage) error {
	var inc []string
	if decodeChecked(raw, &inc) != nil {
		return fmt.Errorf("%q must be an array of strings", name)
	}
	for _, v := range inc {
		if !slices.Contains(allowedIncludes, v) {
			return fmt.Errorf("%q value %q is not forwarded (allowed: %s)", name, v, strings.Join(allowedIncludes, ", "))
		}
	}
	return nil
}

// responsesRequest is a parsed Responses API request (or a compaction of one).
type responsesRequest struct {
	requestInfo
	params      map[string]json.RawMessage
	compact     bool
	serviceTier string
}

func parseResponses(body []byte, compact bool, serviceTier string) (*responsesRequest, *Refusal) {
	params, ref := parseObject(body)
	if ref != nil {
		return nil, ref
	}
	if ref := checkFields(params, responsesFields, refusedResponsesFields, responsesDropped, "input"); ref != nil {
		return nil, ref
	}
	p := &responsesRequest{params: params, compact: compact, serviceTier: serviceTier}
	if p.tools, p.removed, ref = openAICommon(params, "input", &p.model, &p.stream); ref != nil {
		return nil, ref
	}
	if err := untypedReferences(params["input"]); err != nil {
		return nil, badRequest("%v", err)
	}
	if raw, ok := params["max_output_tokens"]; ok {
		_ = decodeChecked(raw, &p.maxOutput)
	}
	return p, nil
}

// untypedReferences refuses an input item with neither a type nor a role: the API reads it as
// an item_reference (whose type is optional), which needs stored state. Messages may leave
// their type out, never their role.
func untypedReferences(input json.RawMessage) error {
	var err error
	eachElement(input, func(i int, raw []byte) bool {
		// Only the keys jsonString could read as type or role are decoded: the items are
		// most of the body.
		obj := map[string]any{}
		if !eachMember(raw, func(k string, v []byte) bool {
			if strings.EqualFold(k, "type") || strings.EqualFold(k, "role") {
				obj[k], _ = decodeAny(v)
			}
			return true
		}) {
			return true
		}
		if jsonString(obj, "type") == "" && jsonString(obj, "role") == "" {
			err = fmt.Errorf("input[%d]: an item without a type or a role is an item_reference, which needs stored state, and the gateway sends store: false; send the item itself", i)
			return false
		}
		return true
	})
	return err
}

// Build is the body sent upstream: the checked fields, the configured model, store: false
// and maxOutput as max_output_tokens. A compaction carries no store flag or max output: the
// endpoint takes neither.
func (p *responsesRequest) Build(model string, maxOutput int64) ([]byte, error) {
	out := maps.Clone(p.params)
	out["model"] = mustJSON(model)
	delete(out, "background")
	if p.serviceTier != "" {
		out["service_tier"] = mustJSON(p.serviceTier)
	}
	if p.compact {
		delete(out, "store")
		delete(out, "stream")
		delete(out, "max_output_tokens")
		return marshalObject(out)
	}
	out["store"] = json.RawMessage("false")
	if maxOutput > 0 {
		out["max_output_tokens"] = mustJSON(maxOutput)
	}
	return marshalObject(out)
}

// responsesItem is an item of a Responses API input or output.
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Summary   json.RawMessage `json:"summary"`
	ID        string          `json:"id"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	Action    json.RawMessage `json:"action"`
	Output    json.RawMessage `json:"output"`
}

// call is the tool call an item makes, if it makes one.
func (it responsesItem) call() (Call, bool) {
	switch it.Type {
	case "function_call":
		return Call{ID: it.CallID, Name: it.Name, Args: it.Arguments}, true
	case "custom_tool_call":
		return Call{ID: it.CallID, Name: it.Name, Args: it.Input}, true
	case "local_shell_call":
		return Call{ID: cmp.Or(it.CallID, it.ID), Name: "local_shell", Args: it.Action}, true
	}
	return Call{}, false
}

// reasoningText is a reasoning item's readable summary (its encrypted content is not text).
func (it responsesItem) reasoningText() string {
	s, _ := contentText(it.Summary)
	return s
}

// Conversation converts the instructions and input. A turn's output items come one after
// the other, its calls after its message, so calls (and reasoning) join the agent message
// before them. Items that are not messages or calls are Unreadable, reasoning is kept as
// reasoning.
func (p *responsesRequest) RawConversation() []json.RawMessage {
	var out []json.RawMessage
	if raw, ok := p.params["instructions"]; ok {
		out = append(out, raw)
	}
	in := p.params["input"]
	if len(in) > 0 && in[0] == '"' {
		return append(out, in)
	}
	return appendElements(out, in)
}

func (p *responsesRequest) Conversation() []Message {
	var out []Message
	if raw, ok := p.params["instructions"]; ok {
		var ins string
		if decodeChecked(raw, &ins) == nil && ins != "" {
			out = append(out, Message{Role: System, Text: ins, Raw: raw})
		}
	}
	in := p.params["input"]
	var s string
	if decodeChecked(in, &s) == nil {
		return append(out, Message{Role: User, Text: s, Raw: in})
	}
	var items []json.RawMessage
	_ = decodeChecked(in, &items)
	// A reasoning item comes before the message or calls of its turn: it is kept for them.
	pending := ""
	for _, raw := range items {
		msg := Message{Raw: raw}
		var it responsesItem
		if decodeChecked(raw, &it) != nil {
			out = append(out, msg)
			continue
		}
		if c, ok := it.call(); ok {
			msg.Role, msg.Join, msg.Calls, msg.Reasoning = Agent, pending == "", []Call{c}, pending
			pending = ""
			out = append(out, msg)
			continue
		}
		switch it.Type {
		case "", "message":
			text, ok := contentText(it.Content)
			if !ok {
				break
			}
			msg.Text = text
			switch it.Role {
			case "system", "developer":
				msg.Role = System
			case "user":
				msg.Role = User
			case "assistant":
				msg.Role, msg.Reasoning = Agent, pending
				pending = ""
			}
		case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
			text, ok := contentText(it.Output)
			if !ok {
				break
			}
			msg.Role, msg.Text, msg.CallID = ToolResult, text, cmp.Or(it.CallID, it.ID)
		case "reasoning":
			pending = strings.TrimPrefix(pending+"\n"+it.reasoningText(), "\n")
			continue
		case "compaction", "compaction_summary":
			// Codex's compacted history: opaque to the gateway, and the model's context.
			msg.Role, msg.Text = System, "[compacted history]"
		}
		out = append(out, msg)
	}
	return out
}

// responsesAnswer reads a non-streamed answer for the trajectory; nil when it holds none.
func responsesAnswer(body []byte) *Turn {
	var a struct {
		Model             string            `json:"model"`
		Output            []json.RawMessage `json:"output"`
		Status            string            `json:"status"`
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
	}
	if json.Unmarshal(body, &a) != nil {
		return nil
	}
	t := responsesTurn(a.Model, a.Output)
	if d := a.IncompleteDetails; d != nil && d.Reason == "content_filter" {
		t.Stop = d.Reason
	}
	t.atMaxOutput(a.Status == "incomplete" && a.IncompleteDetails != nil && a.IncompleteDetails.Reason == responsesMaxOutput)
	return t
}

// responsesMaxOutput is the incomplete_details.reason of a response cut at its max output.
const responsesMaxOutput = "max_output_tokens"

// responsesTurn is the turn a Responses API answer's output items make: its messages' text,
// its reasoning summaries and its tool calls.
func responsesTurn(model string, output []json.RawMessage) *Turn {
	t := &Turn{Model: model}
	var texts, reasoning []string
	for _, raw := range output {
		var it responsesItem
		if decodeChecked(raw, &it) != nil {
			continue
		}
		if c, ok := it.call(); ok {
			t.Calls = append(t.Calls, c)
			continue
		}
		switch it.Type {
		case "message":
			if s, ok := contentText(it.Content); ok && s != "" {
				texts = append(texts, s)
			}
			if strings.Contains(string(it.Content), `"refusal"`) {
				t.Stop = "refusal"
			}
		case "reasoning":
			if s := it.reasoningText(); s != "" {
				reasoning = append(reasoning, s)
			}
		}
	}
	t.Text = strings.Join(texts, "\n")
	t.Reasoning = strings.Join(reasoning, "\n")
	return t
}

// responsesStream reads a Responses API stream: response.completed (or .incomplete) carries
// the whole response with its usage; without one, the text deltas make the answer.
type responsesStream struct {
	ans   answerBuf
	final *Turn
	usage *openAIUsage
	// ev is the event being read: the stream's, as one of each event's own escaped to the
	// heap (see chatStream's chunk).
	ev responsesEvent
}

func (s *responsesStream) Event(_ string, data []byte) bool {
	s.ev = responsesEvent{}
	ev := &s.ev
	if !decodeResponsesEvent(data, ev) {
		return false
	}
	switch {
	case ev.Type == "response.output_text.delta":
		s.ans.appendTextBytes(ev.Delta)
	case ev.Type == "response.reasoning_summary_text.delta":
		s.ans.appendReasoningBytes(ev.Delta)
	case ev.Response != nil && (ev.Type == "response.completed" || ev.Type == "response.incomplete"):
		s.final = responsesTurn(ev.Response.Model, ev.Response.Output)
		for i, c := range s.final.Calls {
			// A call's arguments are the event's own text, the relay's read buffer, which
			// the reads after it overwrite.
			s.final.Calls[i].Args = bytes.Clone(c.Args)
		}
		s.final.Incomplete = ev.Type == "response.incomplete"
		d := ev.Response.IncompleteDetails
		s.final.atMaxOutput(s.final.Incomplete && d != nil && d.Reason == responsesMaxOutput)
	}
	if ev.Response != nil && ev.Response.Usage != nil {
		s.usage = ev.Response.Usage
	}
	return false
}

func (s *responsesStream) Usage() (Tokens, bool) {
	if s.usage == nil {
		return Tokens{}, false
	}
	return s.usage.tokens(), true
}

func (s *responsesStream) Turn(cut bool) *Turn {
	if s.final == nil {
		return s.ans.turn(cut)
	}
	t := s.final
	t.Streamed, t.Incomplete = true, t.Incomplete || cut
	return t
}

func (s *responsesStream) End() []byte { return nil }
