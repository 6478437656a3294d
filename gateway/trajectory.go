package gateway

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/atif"
)

// The gateway records an agent CLI's run in ATIF as the built-in agent does, from what crosses
// the model boundary: agents resend the whole conversation with every request, so the last
// main request's conversation plus the answer to it is the run, and the session keeps only
// those (bounded by MaxBodyBytes and maxAnswerText) and each answered request's usage. The
// protocols turn their conversations into Messages and their answers into Turns; what follows
// knows no protocol.

// Trajectory bounds.
const (
	// maxTrajectoryRequests bounds the per-request usage a session keeps; a session without a
	// budget could otherwise grow it without end.
	maxTrajectoryRequests = 10000
	// maxAnswerText bounds the text kept of the last answer (its message, reasoning and its
	// calls' arguments together), streamed or not.
	maxAnswerText = 1 << 20
	// maxAnswerCalls bounds the tool calls kept of the last answer.
	maxAnswerCalls = 256
	// maxDroppedHeaders bounds the dropped header values named; a CLI sends a handful.
	maxDroppedHeaders = 64
	// maxDroppedHeader bounds one named value; real betas are a few dozen bytes.
	maxDroppedHeader = 128
)

// The extra keys by which a gateway trajectory says it does not hold the whole conversation,
// or what the gateway took out of it.
const (
	extraUnmatched  = "unmatched_requests"    // requests no step of the last conversation matches
	extraSkipped    = "skipped_messages"      // messages that could not be read
	extraIncomplete = "incomplete"            // an answer cut at a cap (on its step)
	extraRemoved    = "removed_hosted_tools"  // hosted tools the gateway took out of requests
	extraDropped    = "dropped_headers"       // client header values not forwarded (headerFilter)
	extraSide       = "side_requests"         // a CLI's side queries and token counts, not turns
	extraStop       = atif.ExtraStopReason    // a refusal or safety stop (on its step)
	extraAPI        = "api"                   // the protocol the CLI spoke
	extraCacheWrite = "cache_creation_tokens" // prompt tokens the provider's cache stored (on a step)
	// an answer ended at its max output (on its step: that max; on the trajectory: the largest)
	extraMaxOutput  = atif.ExtraMaxOutputReached
	extraMaxAnswers = atif.ExtraMaxOutputAnswers // how many answers ended at their max output
)

// trajectoryState is what a session keeps to build its trajectory. Guarded by Session.mu.
type trajectoryState struct {
	// forwarded counts the requests forwarded; seq is the one whose conversation is kept.
	forwarded, seq int
	// sawTools: a request offered tools, so requests that offer none are side queries.
	sawTools bool
	// counts is how many token counts were forwarded.
	counts int
	// conv is the request whose conversation is kept (nil: none yet). A Request is not
	// changed once parsed: reading it outside s.mu is safe.
	conv Request
	// removed are the hosted tools taken out of any request, once each.
	removed []string
	// dropped are the header values left out of any forwarded request, once each.
	dropped []string
	// answer is the answer to request seq, when the CLI got one.
	answer *Turn
	// usage is each answered request's tokens; unkept counts those past the bound.
	usage  []requestUsage
	unkept int
	// atMax counts the answers ended at their max output, and atMaxTokens is the largest of
	// those max outputs.
	atMax       int
	atMaxTokens int64
}

// requestUsage is one answered request's tokens, keyed by the order it was forwarded in.
type requestUsage struct {
	seq    int
	tokens Tokens
	// tools: the request offered tools (see Session.Turns).
	tools bool
	// atMax is the max output the answer ended at (0: it did not).
	atMax int64
}

// remember keeps a main request as the session's latest: its conversation is read when a
// trajectory is built. Called with s.mu held.
func (s *Session) remember(seq int, req Request, removed []string) {
	t := &s.traj
	t.seq, t.conv, t.answer = seq, req, nil
	for _, r := range removed {
		if !slices.Contains(t.removed, r) {
			t.removed = append(t.removed, r)
		}
	}
}

// noteDropped keeps the header values left out of a forwarded request (headerFilter), once
// each, bounded: a client could send a new value with every request.
func (s *Session) noteDropped(values []string) {
	if len(values) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		if len(v) > maxDroppedHeader {
			v = v[:maxDroppedHeader] + "…"
		}
		if len(s.traj.dropped) < maxDroppedHeaders && !slices.Contains(s.traj.dropped, v) {
			s.traj.dropped = append(s.traj.dropped, v)
		}
	}
}

// recordAnswer books an answer the CLI got: its usage, whether it ended at its max output
// (maxOutput, the one sent; 0 when the upstream's default applied), and the answer itself
// when it answers the kept request.
func (s *Session) recordAnswer(seq int, tools bool, u Tokens, ans *Turn, maxOutput int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u = u.bounded()
	var atMax int64
	if ans != nil && ans.MaxOutput {
		// The upstream's default max is not known here: what the answer wrote is.
		atMax = max(cmp.Or(maxOutput, u.Completion), 1)
		s.traj.atMax++
		s.traj.atMaxTokens = max(s.traj.atMaxTokens, atMax)
	}
	if len(s.traj.usage) < maxTrajectoryRequests {
		s.traj.usage = append(s.traj.usage, requestUsage{seq: seq, tokens: u, tools: tools, atMax: atMax})
	} else {
		s.traj.unkept++
	}
	if seq == s.traj.seq && ans != nil {
		ans.bound()
		s.traj.answer = ans
	}
}

// Record is the session's trajectory (see Trajectory), built once, and whether it holds every
// call the model asked for (see ToolCallsComplete).
func (s *Session) Record() (*atif.Trajectory, bool) {
	t := s.Trajectory()
	return t, complete(t)
}

// ToolCallsComplete reports whether the trajectory holds every call the model asked for: one
// conversation matching every main request, no message skipped, no answer cut. A CLI that
// compacts its history or runs sub-agents leaves calls out of sight, and an incomplete list
// could pass tool_not_called.
func (s *Session) ToolCallsComplete() bool { return complete(s.Trajectory()) }

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

// Trajectory is the session's run in ATIF: the conversation of the last main request
// forwarded, as steps, then the answer to it as the last agent step, with that request's
// usage. The i-th agent step of the conversation gets the usage of the i-th answered main
// request before it: agents resend their whole conversation, so each assistant message in it
// is an earlier request's answer. That holds for one conversation run straight; a CLI that
// compacts its history or runs sub-agents has requests no step matches, counted in
// extra.unmatched_requests. Side queries and token counts are counted apart
// (extra.side_requests). Safe to call at any time.
func (s *Session) Trajectory() *atif.Trajectory {
	s.mu.Lock()
	st := s.traj
	st.usage = slices.Clone(st.usage)
	st.removed = slices.Clone(st.removed)
	st.dropped = slices.Clone(st.dropped)
	side := st.counts
	s.mu.Unlock()

	b := &trajectoryBuilder{
		t: &atif.Trajectory{SchemaVersion: atif.SchemaVersion, Steps: []atif.Step{},
			Agent: atif.Agent{Name: s.g.agentName, Version: cmp.Or(s.AgentVersion(), agent.CommandAgentVersion), ModelName: s.g.cfg.Model,
				Extra: map[string]any{extraAPI: s.g.api.Name()}}},
		byCall: map[string]int{}, open: -1,
	}
	var conv []Message
	if st.conv != nil {
		conv = st.conv.Conversation()
	}
	b.conversation(conv)
	convSteps := len(b.t.Steps)
	if st.answer != nil {
		b.answer(st.answer)
	}
	if st.forwarded == 0 {
		b.t.Notes = "no model request reached the gateway"
	}
	// Side queries offer no tools once the main loop did; their usage matches no step.
	if st.sawTools {
		n := 0
		st.usage = slices.DeleteFunc(st.usage, func(u requestUsage) bool {
			if !u.tools {
				n++
			}
			return !u.tools
		})
		side += n
	}
	metrics := func(u requestUsage) *atif.Metrics {
		return &atif.Metrics{PromptTokens: u.tokens.Prompt, CompletionTokens: u.tokens.Completion,
			CachedTokens: u.tokens.CacheRead, CostUSD: s.g.usage(u.tokens).Cost}
	}
	setMetrics := func(step *atif.Step, u requestUsage) {
		step.Metrics = metrics(u)
		if u.tokens.CacheWrite > 0 {
			if step.Extra == nil {
				step.Extra = map[string]any{}
			}
			step.Extra[extraCacheWrite] = u.tokens.CacheWrite
		}
		if u.atMax > 0 {
			// An earlier answer the CLI kept in its conversation although it was cut.
			if step.Extra == nil {
				step.Extra = map[string]any{}
			}
			step.Extra[extraMaxOutput] = u.atMax
		}
	}
	if st.answer != nil {
		if k := slices.IndexFunc(st.usage, func(u requestUsage) bool { return u.seq == st.seq }); k >= 0 {
			setMetrics(&b.t.Steps[len(b.t.Steps)-1], st.usage[k])
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
		setMetrics(step, st.usage[used])
		used++
	}
	extra := map[string]any{}
	if n := len(st.usage) - used + st.unkept; n > 0 {
		extra[extraUnmatched] = n
	}
	if b.skipped > 0 {
		extra[extraSkipped] = b.skipped
	}
	if len(st.removed) > 0 {
		extra[extraRemoved] = st.removed
	}
	if len(st.dropped) > 0 {
		extra[extraDropped] = st.dropped
	}
	if side > 0 {
		extra[extraSide] = side
	}
	if st.atMax > 0 {
		extra[extraMaxAnswers] = st.atMax
		extra[extraMaxOutput] = st.atMaxTokens
	}
	if len(extra) > 0 {
		b.t.Extra = extra
	}
	b.t.Finish()
	return b.t
}

// redactTurn removes the real key from an answer kept for the trajectory, as from everything
// the gateway answers: the deltas of a stream, joined, could spell it where no event did.
func (g *Gateway) redactTurn(t *Turn) *Turn {
	if t == nil || g.cfg.APIKey == "" {
		return t
	}
	t.Text, t.Model, t.Reasoning = g.redact(t.Text), g.redact(t.Model), g.redact(t.Reasoning)
	for i, c := range t.Calls {
		t.Calls[i] = Call{ID: g.redact(c.ID), Name: g.redact(c.Name), Args: g.redactBytes(c.Args)}
	}
	return t
}

// trajectoryBuilder turns a conversation into steps.
type trajectoryBuilder struct {
	t *atif.Trajectory
	// byCall is the index of the step that made each tool call, for its result.
	byCall map[string]int
	// open is the agent step a joining message continues (-1: none).
	open    int
	skipped int
}

func (b *trajectoryBuilder) add(source, message string) int {
	b.t.Add(source, message)
	return len(b.t.Steps) - 1
}

// conversation adds a protocol's messages as steps.
func (b *trajectoryBuilder) conversation(msgs []Message) {
	for _, m := range msgs {
		switch m.Role {
		case System:
			b.open = -1
			b.add(atif.SourceSystem, m.Text)
		case User:
			b.open = -1
			b.add(atif.SourceUser, m.Text)
		case Agent:
			i := b.open
			if !m.Join || i < 0 {
				i = b.add(atif.SourceAgent, m.Text)
			} else if m.Text != "" {
				step := &b.t.Steps[i]
				step.Message = strings.TrimPrefix(step.Message+"\n"+m.Text, "\n")
			}
			if m.Reasoning != "" {
				step := &b.t.Steps[i]
				step.ReasoningContent = strings.TrimPrefix(step.ReasoningContent+"\n"+m.Reasoning, "\n")
			}
			for _, c := range m.Calls {
				b.call(i, c)
			}
			b.open = i
		case ToolResult:
			b.open = -1
			b.result(m.CallID, m.Text)
		default:
			b.skipped++
		}
	}
}

// call adds a tool call to step i. A call without a name is dropped (its result then goes to
// the nearest agent step), one without an id gets one, so that its result can name it.
func (b *trajectoryBuilder) call(i int, c Call) {
	if c.Name == "" {
		return
	}
	step := &b.t.Steps[i]
	if c.ID == "" {
		c.ID = fmt.Sprintf("step%d-call%d", step.StepID, len(step.ToolCalls)+1)
	}
	step.ToolCalls = append(step.ToolCalls, atif.ToolCall{ToolCallID: c.ID, FunctionName: c.Name, Arguments: arguments(c.Args)})
	b.byCall[c.ID] = i
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

// answer adds the last answer as the final agent step.
func (b *trajectoryBuilder) answer(a *Turn) {
	i := b.add(atif.SourceAgent, a.Text)
	step := &b.t.Steps[i]
	step.ModelName = a.Model
	step.ReasoningContent = a.Reasoning
	for _, c := range a.Calls {
		b.call(i, c)
	}
	if a.Streamed || a.Incomplete || a.Stop != "" {
		step.Extra = map[string]any{}
		if a.Streamed {
			step.Extra["streamed"] = true
		}
		if a.Incomplete {
			step.Extra[extraIncomplete] = true
		}
		if a.Stop != "" {
			step.Extra[extraStop] = a.Stop
		}
	}
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

// atMaxOutput marks the turn as ended at its max output, when it was.
func (t *Turn) atMaxOutput(hit bool) {
	if hit {
		t.MaxOutput, t.Incomplete = true, true
	}
}

// bound cuts a turn to maxAnswerText bytes of text, reasoning and arguments, and
// maxAnswerCalls calls.
func (t *Turn) bound() {
	if len(t.Text) > maxAnswerText {
		t.Text = clipText(t.Text, maxAnswerText)
		t.Incomplete = true
	}
	left := maxAnswerText - len(t.Text)
	if len(t.Reasoning) > left {
		t.Reasoning = clipText(t.Reasoning, left)
		t.Incomplete = true
	}
	left -= len(t.Reasoning)
	if len(t.Calls) > maxAnswerCalls {
		t.Calls = t.Calls[:maxAnswerCalls]
		t.Incomplete = true
	}
	for i, c := range t.Calls {
		if len(c.Args) > left {
			// Cut arguments are not JSON any more: kept as a string, which arguments wraps.
			s := string(c.Args)
			var str string
			if json.Unmarshal(c.Args, &str) == nil {
				s = str
			}
			t.Calls[i].Args, _ = json.Marshal(clipText(s, max(left, 0)))
			t.Incomplete = true
		}
		left = max(left-len(c.Args), 0)
	}
}

// clipText cuts s to n bytes on a rune boundary.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// answerBuf is what a stream reader assembles a Turn in, bounded as a whole.
type answerBuf struct {
	model      string
	text       strings.Builder
	reasoning  strings.Builder
	calls      []Call
	incomplete bool
	// size is the bytes of text, reasoning and arguments kept so far.
	size int
}

// fits says n more bytes fit the bound, and marks the answer incomplete when not.
func (a *answerBuf) fits(n int) bool {
	if a.size+n > maxAnswerText {
		a.incomplete = true
		return false
	}
	a.size += n
	return true
}

func (a *answerBuf) appendText(s string) {
	if a.fits(len(s)) {
		growFor(&a.text, len(s)).WriteString(s)
	}
}

func (a *answerBuf) appendReasoning(s string) {
	if a.fits(len(s)) {
		growFor(&a.reasoning, len(s)).WriteString(s)
	}
}

// appendTextBytes and appendReasoningBytes are appendText and appendReasoning for a delta
// read in place (chunkText): no string is made of it on the way.
func (a *answerBuf) appendTextBytes(b []byte) {
	if a.fits(len(b)) {
		_, _ = growFor(&a.text, len(b)).Write(b)
	}
}

func (a *answerBuf) appendReasoningBytes(b []byte) {
	if a.fits(len(b)) {
		_, _ = growFor(&a.reasoning, len(b)).Write(b)
	}
}

// growFor makes room for n more bytes in b, at least doubling it when it runs out (Grow makes
// it twice the capacity and n), and returns b: append grows a large slice by a quarter at a
// time, which for a long answer streamed in small deltas copied the text five times over
// (issue 31's relay).
func growFor(b *strings.Builder, n int) *strings.Builder {
	if b.Cap()-b.Len() < n {
		b.Grow(n)
	}
	return b
}

// call returns the i-th call, growing the list; nil past maxAnswerCalls.
func (a *answerBuf) call(i int) *Call {
	if i < 0 || i >= maxAnswerCalls {
		a.incomplete = true
		return nil
	}
	for len(a.calls) <= i {
		a.calls = append(a.calls, Call{})
	}
	return &a.calls[i]
}

func (a *answerBuf) appendArgs(c *Call, s string) {
	if c != nil && a.fits(len(s)) {
		c.Args = append(c.Args, s...)
	}
}

func (a *answerBuf) appendArgsBytes(c *Call, b []byte) {
	if c != nil && a.fits(len(b)) {
		c.Args = append(c.Args, b...)
	}
}

// turn is the assembled answer; cut says the client did not get all of it.
func (a *answerBuf) turn(cut bool) *Turn {
	return &Turn{Model: a.model, Text: a.text.String(), Reasoning: a.reasoning.String(), Calls: a.calls,
		Streamed: true, Incomplete: a.incomplete || cut}
}

// jsonText returns every string in a JSON value, decoded, one per line: a message's text,
// whatever shape its content takes (a string, content parts, tool results, tool call
// arguments).
func jsonText(m json.RawMessage) string {
	var v any
	if decodeChecked(m, &v) != nil {
		return ""
	}
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			b.WriteString(x)
			b.WriteByte('\n')
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return b.String()
}
