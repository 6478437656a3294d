package agent

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/skillfleet/skillfleet/atif"
)

// The gateway records an agent CLI's run in ATIF as the built-in agent does, from what crosses
// the model boundary: agents resend the whole conversation with every request, so the last
// request's conversation plus the answer to it is the run, and the session keeps only those
// (bounded by MaxBodyBytes and maxAnswerText) and each answered request's usage.

// Trajectory bounds.
const (
	// CommandAgentName is the agent name of a gateway's trajectories when its config names none.
	CommandAgentName = "agent-cli"
	// CommandAgentVersion is the agent version of a gateway's trajectories: the gateway cannot
	// know which version of a CLI ran.
	CommandAgentVersion = "unknown"
	// maxTrajectoryRequests bounds the per-request usage a session keeps; a session without a
	// budget could otherwise grow it without end.
	maxTrajectoryRequests = 10000
	// maxAnswerText bounds the text kept of the last answer (its message and its calls'
	// arguments together), streamed or not.
	maxAnswerText = 1 << 20
	// maxAnswerCalls bounds the tool calls kept of the last answer.
	maxAnswerCalls = 256
)

// trajectoryState is what a session keeps to build its trajectory. Guarded by Session.mu.
type trajectoryState struct {
	// forwarded counts the requests observed; seq is the one whose conversation is kept.
	forwarded, seq int
	responsesAPI   bool
	// instructions and conv are the last request's Responses instructions and its
	// conversation (Chat Completions' messages or the Responses API's input), as sent.
	instructions, conv json.RawMessage
	// answer is the answer to request seq, when the CLI got one.
	answer *agentTurn
	// usage is each answered request's tokens; dropped counts those past the bound.
	usage   []requestUsage
	dropped int
}

// requestUsage is one answered request's tokens, keyed by the order it was forwarded in.
type requestUsage struct {
	seq                int
	prompt, completion int64
}

// agentTurn is one model answer as the trajectory records it.
type agentTurn struct {
	message, model string
	calls          []rawCall
	// streamed: assembled from a stream; incomplete: cut at a cap, or the stream was.
	streamed, incomplete bool
}

// rawCall is one tool call as the model wrote it; args is a JSON string or object.
type rawCall struct {
	id, name string
	args     json.RawMessage
}

// remember keeps req's conversation as the session's latest, and numbers the request. Called
// with s.mu held.
func (s *Session) remember(req *preparedRequest) {
	t := &s.traj
	t.forwarded++
	req.seq = t.forwarded
	t.seq, t.responsesAPI, t.answer = req.seq, req.responsesAPI, nil
	if req.responsesAPI {
		t.instructions, t.conv = req.params["instructions"], req.params["input"]
	} else {
		t.instructions, t.conv = nil, req.params["messages"]
	}
}

// recordAnswer books an answer the CLI got: its usage, and the answer itself when it answers
// the latest request.
func (s *Session) recordAnswer(req *preparedRequest, u *tokenUsage, ans *agentTurn) {
	var p, c int64
	if u != nil {
		p, c = u.counts()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.traj.usage) < maxTrajectoryRequests {
		s.traj.usage = append(s.traj.usage, requestUsage{seq: req.seq, prompt: p, completion: c})
	} else {
		s.traj.dropped++
	}
	if req.seq == s.traj.seq && ans != nil {
		s.traj.answer = ans
	}
}

// Trajectory is the session's run in ATIF: the conversation of the last request forwarded, as
// steps, then the answer to it as the last agent step, with that request's usage. The i-th
// agent step of the conversation gets the usage of the i-th answered request before it:
// agents resend their whole conversation, so each assistant message in it is an earlier
// request's answer. That holds for one conversation run straight; a CLI that compacts its
// history or talks to the model on the side (titles, sub-agents) has requests no step
// matches, counted in extra.unmatched_requests. Safe to call at any time.
func (s *Session) Trajectory() *atif.Trajectory {
	s.mu.Lock()
	st := s.traj
	st.usage = slices.Clone(st.usage)
	s.mu.Unlock()

	b := &trajectoryBuilder{
		t: &atif.Trajectory{SchemaVersion: atif.SchemaVersion, Steps: []atif.Step{},
			Agent: atif.Agent{Name: s.g.agentName, Version: CommandAgentVersion, ModelName: s.g.cfg.Model}},
		byCall: map[string]int{}, open: -1,
	}
	if st.responsesAPI {
		b.responses(st.instructions, st.conv)
	} else {
		b.chat(st.conv)
	}
	convSteps := len(b.t.Steps)
	if st.answer != nil {
		b.answer(st.answer)
	}
	if st.forwarded == 0 {
		b.t.Notes = "no model request reached the gateway"
	}

	metrics := func(u requestUsage) *atif.Metrics {
		return &atif.Metrics{PromptTokens: u.prompt, CompletionTokens: u.completion, CostUSD: s.g.cfg.Price.Cost(u.prompt, u.completion)}
	}
	if st.answer != nil {
		if k := slices.IndexFunc(st.usage, func(u requestUsage) bool { return u.seq == st.seq }); k >= 0 {
			b.t.Steps[len(b.t.Steps)-1].Metrics = metrics(st.usage[k])
			st.usage = slices.Delete(st.usage, k, k+1)
		}
	}
	// Forwarded order, not answered order: requests in flight together settle in any order.
	slices.SortStableFunc(st.usage, func(a, b requestUsage) int { return cmp.Compare(a.seq, b.seq) })
	used := 0
	for i := range b.t.Steps[:convSteps] {
		step := &b.t.Steps[i]
		if step.Source != atif.SourceAgent || used == len(st.usage) {
			continue
		}
		step.Metrics = metrics(st.usage[used])
		used++
	}
	extra := map[string]any{}
	if n := len(st.usage) - used + st.dropped; n > 0 {
		extra[extraUnmatched] = n
	}
	if b.skipped > 0 {
		extra[extraSkipped] = b.skipped
	}
	if len(extra) > 0 {
		b.t.Extra = extra
	}
	b.t.Finish()
	return b.t
}

// redactTurn removes the real key from an answer kept for the trajectory, as from everything
// the gateway answers: the deltas of a stream, joined, could spell it where no event did.
func (g *Gateway) redactTurn(t *agentTurn) *agentTurn {
	if t == nil || g.cfg.APIKey == "" {
		return t
	}
	t.message, t.model = g.redact(t.message), g.redact(t.model)
	for i, c := range t.calls {
		t.calls[i] = rawCall{id: g.redact(c.id), name: g.redact(c.name), args: g.redactBytes(c.args)}
	}
	return t
}

// trajectoryBuilder turns a conversation into steps.
type trajectoryBuilder struct {
	t *atif.Trajectory
	// byCall is the index of the step that made each tool call, for its result.
	byCall map[string]int
	// open is the agent step a Responses API function_call item joins (-1: none): a turn's
	// output items come one after the other, its calls after its message.
	open    int
	skipped int
}

func (b *trajectoryBuilder) add(source, message string) int {
	b.t.Add(source, message)
	return len(b.t.Steps) - 1
}

// call adds a tool call to step i. A call without a name is dropped (its result then goes to
// the nearest agent step), one without an id gets one, so that its result can name it.
func (b *trajectoryBuilder) call(i int, c rawCall) {
	if c.name == "" {
		return
	}
	step := &b.t.Steps[i]
	if c.id == "" {
		c.id = fmt.Sprintf("step%d-call%d", step.StepID, len(step.ToolCalls)+1)
	}
	step.ToolCalls = append(step.ToolCalls, atif.ToolCall{ToolCallID: c.id, FunctionName: c.name, Arguments: arguments(c.args)})
	b.byCall[c.id] = i
}

// result attaches a tool's output to the agent step that made the call. A result whose call is
// in no step goes to the latest agent step without a source_call_id (its id kept in extra),
// so that the output, which may be a skill's body, stays in the trajectory; before any agent
// step it is skipped.
func (b *trajectoryBuilder) result(callID, content string) {
	i, ok := b.byCall[callID]
	r := atif.Result{SourceCallID: callID, Content: content}
	if !ok {
		i = -1
		for j := len(b.t.Steps) - 1; j >= 0; j-- {
			if b.t.Steps[j].Source == atif.SourceAgent {
				i = j
				break
			}
		}
		if i < 0 {
			b.skipped++
			return
		}
		r.SourceCallID = ""
		if callID != "" {
			r.Extra = map[string]any{"call_id": callID}
		}
	}
	step := &b.t.Steps[i]
	if step.Observation == nil {
		step.Observation = &atif.Observation{}
	}
	step.Observation.Results = append(step.Observation.Results, r)
}

// chatMessage is a Chat Completions message, the request's and the answer's.
type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Refusal    string          `json:"refusal"`
	ToolCalls  []chatToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
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

func (c chatToolCall) raw() rawCall {
	if c.Type == "custom" {
		return rawCall{id: c.ID, name: c.Custom.Name, args: c.Custom.Input}
	}
	return rawCall{id: c.ID, name: c.Function.Name, args: c.Function.Arguments}
}

// chat converts Chat Completions messages; a message that is not one is skipped.
func (b *trajectoryBuilder) chat(conv json.RawMessage) {
	var msgs []json.RawMessage
	if json.Unmarshal(conv, &msgs) != nil {
		return
	}
	for _, raw := range msgs {
		var m chatMessage
		if json.Unmarshal(raw, &m) != nil {
			b.skipped++
			continue
		}
		text, ok := contentText(m.Content)
		if !ok {
			b.skipped++
			continue
		}
		switch m.Role {
		case "system", "developer":
			b.add(atif.SourceSystem, text)
		case "user":
			b.add(atif.SourceUser, text)
		case "assistant":
			if text == "" {
				text = m.Refusal
			}
			i := b.add(atif.SourceAgent, text)
			for _, c := range m.ToolCalls {
				b.call(i, c.raw())
			}
		case "tool":
			b.result(m.ToolCallID, text)
		default:
			b.skipped++
		}
	}
}

// responsesItem is an item of a Responses API input or output.
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ID        string          `json:"id"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	Action    json.RawMessage `json:"action"`
	Output    json.RawMessage `json:"output"`
}

// call is the tool call an item makes, if it makes one.
func (it responsesItem) call() (rawCall, bool) {
	switch it.Type {
	case "function_call":
		return rawCall{id: it.CallID, name: it.Name, args: it.Arguments}, true
	case "custom_tool_call":
		return rawCall{id: it.CallID, name: it.Name, args: it.Input}, true
	case "local_shell_call":
		return rawCall{id: cmp.Or(it.CallID, it.ID), name: "local_shell", args: it.Action}, true
	}
	return rawCall{}, false
}

// responses converts the Responses API's instructions and input; an item that is not one is
// skipped, reasoning items are left out.
func (b *trajectoryBuilder) responses(instructions, input json.RawMessage) {
	var ins string
	if json.Unmarshal(instructions, &ins) == nil && ins != "" {
		b.add(atif.SourceSystem, ins)
	}
	var s string
	if json.Unmarshal(input, &s) == nil {
		b.add(atif.SourceUser, s)
		return
	}
	var items []json.RawMessage
	if json.Unmarshal(input, &items) != nil {
		return
	}
	for _, raw := range items {
		var it responsesItem
		if json.Unmarshal(raw, &it) != nil {
			b.skipped++
			continue
		}
		if c, ok := it.call(); ok {
			if b.open < 0 {
				b.open = b.add(atif.SourceAgent, "")
			}
			b.call(b.open, c)
			continue
		}
		switch it.Type {
		case "", "message":
			text, ok := contentText(it.Content)
			if !ok {
				b.skipped++
				continue
			}
			b.open = -1
			switch it.Role {
			case "system", "developer":
				b.add(atif.SourceSystem, text)
			case "user":
				b.add(atif.SourceUser, text)
			case "assistant":
				b.open = b.add(atif.SourceAgent, text)
			default:
				b.skipped++
			}
		case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
			text, ok := contentText(it.Output)
			if !ok {
				b.skipped++
				continue
			}
			b.open = -1
			b.result(cmp.Or(it.CallID, it.ID), text)
		case "reasoning":
		default:
			b.skipped++
		}
	}
}

// answer adds the last answer as the final agent step.
// The extra keys by which a gateway trajectory says it does not hold the whole conversation.
const (
	extraUnmatched  = "unmatched_requests" // requests no step of the last conversation matches
	extraSkipped    = "skipped_messages"   // messages that could not be read
	extraIncomplete = "incomplete"         // an answer cut at a cap (on its step)
)

// complete reports whether a gateway trajectory holds every call the model asked for: one
// conversation matching every request, no message skipped, no answer cut.
func complete(t *atif.Trajectory) bool {
	if t == nil || t.Extra[extraUnmatched] != nil || t.Extra[extraSkipped] != nil {
		return false
	}
	for _, s := range t.Steps {
		if s.Extra[extraIncomplete] != nil {
			return false
		}
	}
	return true
}

func (b *trajectoryBuilder) answer(a *agentTurn) {
	i := b.add(atif.SourceAgent, a.message)
	step := &b.t.Steps[i]
	step.ModelName = a.model
	for _, c := range a.calls {
		b.call(i, c)
	}
	if a.streamed || a.incomplete {
		step.Extra = map[string]any{}
		if a.streamed {
			step.Extra["streamed"] = true
		}
		if a.incomplete {
			step.Extra[extraIncomplete] = true
		}
	}
}

// contentText is a message's text: a string, or content parts (strings, or objects with a
// text, refusal or output string) joined by newlines. ok is false for anything else.
func contentText(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var parts []json.RawMessage
	if json.Unmarshal(raw, &parts) != nil {
		return "", false
	}
	var texts []string
	for _, p := range parts {
		if json.Unmarshal(p, &s) == nil {
			texts = append(texts, s)
			continue
		}
		var part struct {
			Text    *string `json:"text"`
			Refusal *string `json:"refusal"`
		}
		if json.Unmarshal(p, &part) != nil {
			continue
		}
		// Images, audio and files have no text: left out.
		if t := cmp.Or(part.Text, part.Refusal); t != nil {
			texts = append(texts, *t)
		}
	}
	return strings.Join(texts, "\n"), true
}

// arguments is a tool call's arguments as ATIF wants them: a JSON object, from the string the
// model wrote or from an object sent as is; anything else is kept raw (see atif.Arguments).
func arguments(raw json.RawMessage) json.RawMessage {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return atif.Arguments(s)
	}
	return atif.Arguments(string(raw))
}

// chatReply and responsesReply are what the trajectory reads of a non-streamed answer (its
// usage is read apart, so that an answer the trajectory cannot read is still metered).
type chatReply struct {
	Model   string `json:"model"`
	Choices []struct {
		Message chatMessage `json:"message"`
	} `json:"choices"`
}

type responsesReply struct {
	Model  string            `json:"model"`
	Output []json.RawMessage `json:"output"`
}

// parseAnswer reads a non-streamed answer for the trajectory; nil when it holds none.
func parseAnswer(body []byte, responsesAPI bool) *agentTurn {
	if responsesAPI {
		var a responsesReply
		if json.Unmarshal(body, &a) != nil {
			return nil
		}
		return responsesTurn(a.Model, a.Output)
	}
	var a chatReply
	if json.Unmarshal(body, &a) != nil || len(a.Choices) == 0 {
		return nil
	}
	m := a.Choices[0].Message
	text, _ := contentText(m.Content)
	t := &agentTurn{model: a.Model, message: cmp.Or(text, m.Refusal)}
	for _, c := range m.ToolCalls {
		t.calls = append(t.calls, c.raw())
	}
	t.bound()
	return t
}

// responsesTurn is the turn a Responses API answer's output items make: its messages' text
// and its tool calls.
func responsesTurn(model string, output []json.RawMessage) *agentTurn {
	t := &agentTurn{model: model}
	var texts []string
	for _, raw := range output {
		var it responsesItem
		if json.Unmarshal(raw, &it) != nil {
			continue
		}
		if c, ok := it.call(); ok {
			t.calls = append(t.calls, c)
		} else if it.Type == "message" {
			if s, ok := contentText(it.Content); ok && s != "" {
				texts = append(texts, s)
			}
		}
	}
	t.message = strings.Join(texts, "\n")
	t.bound()
	return t
}

// bound cuts a turn to maxAnswerText bytes of message and arguments, and maxAnswerCalls.
func (t *agentTurn) bound() {
	if len(t.message) > maxAnswerText {
		t.message = clipText(t.message, maxAnswerText)
		t.incomplete = true
	}
	if len(t.calls) > maxAnswerCalls {
		t.calls = t.calls[:maxAnswerCalls]
		t.incomplete = true
	}
	left := maxAnswerText - len(t.message)
	for i, c := range t.calls {
		if len(c.args) > left {
			// Cut arguments are not JSON any more: kept as a string, which arguments wraps.
			s := string(c.args)
			var str string
			if json.Unmarshal(c.args, &str) == nil {
				s = str
			}
			t.calls[i].args, _ = json.Marshal(clipText(s, left))
			t.incomplete = true
		}
		left = max(left-len(c.args), 0)
	}
}

// clipText cuts s to n bytes on a rune boundary.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// streamAnswer assembles a streamed answer from its events: a Chat Completions stream's
// content and tool call deltas of choice 0, a Responses stream's completed response (or, when
// none comes, its text deltas).
type streamAnswer struct {
	responsesAPI bool
	model        string
	text         strings.Builder
	calls        []rawCall
	final        *agentTurn
	incomplete   bool
	// size is the bytes of text and arguments kept so far (maxAnswerText at most).
	size int
}

// add reads one event's data; what it does not know it ignores.
func (a *streamAnswer) add(data []byte) {
	if a.responsesAPI {
		var ev struct {
			Type     string `json:"type"`
			Delta    string `json:"delta"`
			Response *struct {
				Model  string            `json:"model"`
				Output []json.RawMessage `json:"output"`
			} `json:"response"`
		}
		if json.Unmarshal(data, &ev) != nil {
			return
		}
		switch {
		case ev.Type == "response.output_text.delta":
			a.appendText(ev.Delta)
		case ev.Response != nil && (ev.Type == "response.completed" || ev.Type == "response.incomplete"):
			a.final = responsesTurn(ev.Response.Model, ev.Response.Output)
			a.final.incomplete = a.final.incomplete || ev.Type == "response.incomplete"
		}
		return
	}
	var chunk struct {
		Model   string `json:"model"`
		Choices []struct {
			Index int `json:"index"`
			Delta struct {
				Content   string `json:"content"`
				Refusal   string `json:"refusal"`
				ToolCalls []struct {
					Index    int    `json:"index"`
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"delta"`
		} `json:"choices"`
	}
	if json.Unmarshal(data, &chunk) != nil {
		return
	}
	a.model = cmp.Or(a.model, chunk.Model)
	for _, c := range chunk.Choices {
		if c.Index != 0 {
			continue
		}
		a.appendText(c.Delta.Content + c.Delta.Refusal)
		for _, tc := range c.Delta.ToolCalls {
			if tc.Index < 0 || tc.Index >= maxAnswerCalls {
				a.incomplete = true
				continue
			}
			for len(a.calls) <= tc.Index {
				a.calls = append(a.calls, rawCall{})
			}
			call := &a.calls[tc.Index]
			call.id = cmp.Or(call.id, tc.ID)
			call.name = cmp.Or(call.name, tc.Function.Name)
			if a.size+len(tc.Function.Arguments) > maxAnswerText {
				a.incomplete = true
				continue
			}
			a.size += len(tc.Function.Arguments)
			call.args = append(call.args, tc.Function.Arguments...)
		}
	}
}

func (a *streamAnswer) appendText(s string) {
	if a.size+len(s) > maxAnswerText {
		a.incomplete = true
		return
	}
	a.size += len(s)
	a.text.WriteString(s)
}

// turn is the assembled answer; cut says the client did not get all of it.
func (a *streamAnswer) turn(cut bool) *agentTurn {
	t := a.final
	if t == nil {
		t = &agentTurn{model: a.model, message: a.text.String(), incomplete: a.incomplete}
		for _, c := range a.calls {
			// Chat streams carry arguments as pieces of one string.
			args, _ := json.Marshal(string(c.args))
			t.calls = append(t.calls, rawCall{id: c.id, name: c.name, args: args})
		}
	}
	t.streamed = true
	t.incomplete = t.incomplete || cut
	return t
}
