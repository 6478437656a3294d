package gateway

import (
	"cmp"
	"encoding/json"
)

// anthropicStream reads a Messages stream: message_start (the model, the prompt's tokens with
// the cache's parts, an output count of one or so), content_block_start/delta/stop for each
// text, thinking and tool_use block, message_delta (the stop reason and the cumulative output
// count; newer API versions repeat the input counts there), message_stop, ping and error.
// Nothing is dropped or held back.
//
// The usage counts only once message_delta showed its output count, and the prompt's count
// was seen (in message_start, or repeated in message_delta): a stream cut before
// message_delta reported its prompt but not what the model wrote, and metering it at
// message_start's output count would let the budget leak; it is metered at its reservation
// instead.
type anthropicStream struct {
	ans anthropicAnswer
	// usage merges message_start's and message_delta's counts, each the largest seen: they
	// are totals so far, never increments.
	usage          anthropicUsage
	started, ended bool
	stop           string
	// errored: the upstream ended the stream with an error event.
	errored bool
}

// anthropicAnswer is a turn assembled from content blocks, by their index in the stream.
type anthropicAnswer struct {
	answerBuf
	// blocks is each open or finished block's kind, and for a tool_use the position of its
	// call in calls.
	blocks map[int]anthropicStreamBlock
	// inputs are the calls' inputs as content_block_start gave them, for a call whose input
	// came without input_json_delta pieces.
	inputs []json.RawMessage
}

type anthropicStreamBlock struct {
	kind string
	call int
}

// anthropicEvent is any event of a Messages stream.
type anthropicEvent struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message *struct {
		Model string          `json:"model"`
		Usage *anthropicUsage `json:"usage"`
	} `json:"message"`
	ContentBlock *anthropicBlock `json:"content_block"`
	Delta        *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *anthropicUsage `json:"usage"`
}

func (s *anthropicStream) Event(_ string, data []byte) bool {
	var ev anthropicEvent
	if json.Unmarshal(data, &ev) != nil {
		return false
	}
	switch ev.Type {
	case "message_start":
		if m := ev.Message; m != nil {
			s.ans.model = cmp.Or(s.ans.model, m.Model)
			if m.Usage != nil {
				s.started = true
				s.usage = s.usage.max(*m.Usage)
			}
		}
	case "content_block_start":
		if ev.ContentBlock != nil {
			s.ans.start(ev.Index, *ev.ContentBlock)
		}
	case "content_block_delta":
		if d := ev.Delta; d != nil {
			s.ans.delta(ev.Index, d.Type, d.Text+d.Thinking+d.PartialJSON)
		}
	case "message_delta":
		if ev.Delta != nil && ev.Delta.StopReason != "" {
			s.stop = ev.Delta.StopReason
		}
		if ev.Usage != nil {
			s.ended = true
			s.usage = s.usage.max(*ev.Usage)
		}
	case "error":
		s.errored = true
	}
	return false
}

// max merges two reports of the same answer's usage.
func (u anthropicUsage) max(o anthropicUsage) anthropicUsage {
	return anthropicUsage{InputTokens: max(u.InputTokens, o.InputTokens),
		CacheCreationInputTokens: max(u.CacheCreationInputTokens, o.CacheCreationInputTokens),
		CacheReadInputTokens:     max(u.CacheReadInputTokens, o.CacheReadInputTokens),
		OutputTokens:             max(u.OutputTokens, o.OutputTokens)}
}

// start opens block i. Blocks of a kind are joined by newlines, as in a JSON answer.
func (a *anthropicAnswer) start(i int, b anthropicBlock) {
	if a.blocks == nil {
		a.blocks = map[int]anthropicStreamBlock{}
	}
	blk := anthropicStreamBlock{kind: b.Type, call: -1}
	switch b.Type {
	case "text":
		if a.text.Len() > 0 {
			a.appendText("\n")
		}
		a.appendText(b.Text)
	case "thinking", "redacted_thinking":
		if a.reasoning.Len() > 0 {
			a.appendReasoning("\n")
		}
		if b.Type == "redacted_thinking" {
			a.appendReasoning("[redacted thinking]")
		}
		a.appendReasoning(b.Thinking)
	case "tool_use":
		pos := len(a.calls)
		if c := a.call(pos); c != nil {
			c.ID, c.Name = b.ID, b.Name
			blk.call = pos
			a.inputs = append(a.inputs, b.Input)
		}
	}
	a.blocks[i] = blk
}

// delta adds a piece to block i: text, thinking, or a piece of a tool's input object.
// Signatures and citations are not the answer's text.
func (a *anthropicAnswer) delta(i int, typ, piece string) {
	blk, ok := a.blocks[i]
	if !ok {
		return
	}
	switch typ {
	case "text_delta":
		a.appendText(piece)
	case "thinking_delta":
		a.appendReasoning(piece)
	case "input_json_delta":
		if blk.call >= 0 {
			a.appendArgs(&a.calls[blk.call], piece)
		}
	}
}

func (s *anthropicStream) Usage() (Tokens, bool) {
	prompt := s.usage.InputTokens + s.usage.CacheReadInputTokens + s.usage.CacheCreationInputTokens
	if !s.ended || (!s.started && prompt == 0) {
		return Tokens{}, false
	}
	return s.usage.tokens(), true
}

// Turn is the answer as assembled; a tool's input is the JSON object its pieces make (the
// object content_block_start gave, when no piece came).
func (s *anthropicStream) Turn(cut bool) *Turn {
	t := s.ans.turn(cut || s.errored)
	for i := range t.Calls {
		if len(t.Calls[i].Args) == 0 {
			t.Calls[i].Args = s.ans.inputs[i]
		}
		if len(t.Calls[i].Args) == 0 {
			t.Calls[i].Args = json.RawMessage("{}")
		}
	}
	if s.stop == "refusal" {
		t.Stop = s.stop
	}
	t.atMaxOutput(s.stop == anthropicMaxTokens)
	return t
}

func (s *anthropicStream) End() []byte { return nil }
