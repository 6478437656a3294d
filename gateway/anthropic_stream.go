package gateway

import (
	"bytes"
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
	// ev, delta and piece are the event being read, its delta and a delta's text when it
	// has more than one: the stream's, reused, so that reading an event allocates nothing.
	ev    anthropicEvent
	delta anthropicDelta
	piece []byte
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

func (s *anthropicStream) Event(_ string, data []byte) bool {
	s.ev = anthropicEvent{}
	ev := &s.ev
	if !decodeAnthropicEvent(data, ev, &s.delta) {
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
			// A delta has one of its texts; were it to have more, they are one piece.
			piece := d.Text
			if len(d.Thinking)+len(d.PartialJSON) > 0 {
				s.piece = append(append(append(s.piece[:0], d.Text...), d.Thinking...), d.PartialJSON...)
				piece = s.piece
			}
			s.ans.delta(ev.Index, d.Type, piece)
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
			// Cloned: the event's text is the relay's buffer, which the next read reuses.
			a.inputs = append(a.inputs, bytes.Clone(b.Input))
		}
	}
	a.blocks[i] = blk
}

// delta adds a piece to block i: text, thinking, or a piece of a tool's input object.
// Signatures and citations are not the answer's text.
func (a *anthropicAnswer) delta(i int, typ string, piece []byte) {
	blk, ok := a.blocks[i]
	if !ok {
		return
	}
	switch typ {
	case "text_delta":
		a.appendTextBytes(piece)
	case "thinking_delta":
		a.appendReasoningBytes(piece)
	case "input_json_delta":
		if blk.call >= 0 {
			a.appendArgsBytes(&a.calls[blk.call], piece)
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
