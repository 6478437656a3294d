package gateway

// anthropicEvent is any event of a Messages stream, as the gateway reads it. Its tags say how
// json.Unmarshal would fill it, which decodeAnthropicEvent does by hand: content_block_delta
// comes every few tokens, tens of thousands an answer.
type anthropicEvent struct {
	Type         string                 `json:"type"`
	Index        int                    `json:"index"`
	Message      *anthropicEventMessage `json:"message"`
	ContentBlock *anthropicBlock        `json:"content_block"`
	Delta        *anthropicDelta        `json:"delta"`
	Usage        *anthropicUsage        `json:"usage"`
}

// anthropicEventMessage is message_start's message: the model and the prompt's usage.
type anthropicEventMessage struct {
	Model string          `json:"model"`
	Usage *anthropicUsage `json:"usage"`
}

// anthropicDelta is content_block_delta's delta (a piece of text, thinking or a tool's input,
// read in place) or message_delta's (the stop reason).
type anthropicDelta struct {
	Type        string    `json:"type"`
	Text        chunkText `json:"text"`
	Thinking    chunkText `json:"thinking"`
	PartialJSON chunkText `json:"partial_json"`
	StopReason  string    `json:"stop_reason"`
}

// The JSON names of each type's fields, in the order decodeAnthropicEvent numbers them, and
// the types most events and deltas have: read without making a string of each.
var (
	anthropicEventNames = []string{"type", "index", "message", "content_block", "delta", "usage"}
	anthropicDeltaNames = []string{"type", "text", "thinking", "partial_json", "stop_reason"}
	anthropicEventTypes = []string{"content_block_delta", "content_block_start", "content_block_stop", "ping"}
	anthropicDeltaTypes = []string{"text_delta", "thinking_delta", "input_json_delta", "signature_delta"}
)

// decodeAnthropicEvent is json.Unmarshal(data, ev) == nil into a zero ev, read in one pass as
// decodeChatChunk reads a chunk (see there). The delta, when there is one, is delta, which
// the stream reuses from event to event; the members an answer carries once (message,
// content_block, usage) are read by reflection (decodeRare). Its tests check it against
// json.Unmarshal.
func decodeAnthropicEvent(data []byte, ev *anthropicEvent, delta *anthropicDelta) bool {
	i, f, ok := objectField(data, skipSpace(data, 0), 0, anthropicEventNames, true)
	for ok && f >= 0 {
		switch f {
		case 0:
			i, ok = decodeName(data, i, &ev.Type, anthropicEventTypes)
		case 1:
			i, ok = decodeInt(data, i, &ev.Index)
		case 2:
			i, ok = decodeRare(data, i, 1, &ev.Message)
		case 3:
			i, ok = decodeRare(data, i, 1, &ev.ContentBlock)
		case 4:
			i, ok = decodePtr(data, i, 1, &ev.Delta, delta, nil, decodeAnthropicDelta)
		default:
			i, ok = decodeRare(data, i, 1, &ev.Usage)
		}
		if ok {
			i, f, ok = objectField(data, i, 0, anthropicEventNames, false)
		}
	}
	return ok && skipSpace(data, i) == len(data)
}

func decodeAnthropicDelta(b []byte, i, depth int, d *anthropicDelta) (int, bool) {
	i, f, ok := objectField(b, i, depth, anthropicDeltaNames, true)
	for ok && f >= 0 {
		switch f {
		case 0:
			i, ok = decodeName(b, i, &d.Type, anthropicDeltaTypes)
		case 1:
			i, ok = decodeText(b, i, &d.Text)
		case 2:
			i, ok = decodeText(b, i, &d.Thinking)
		case 3:
			i, ok = decodeText(b, i, &d.PartialJSON)
		default:
			i, ok = decodeString(b, i, &d.StopReason)
		}
		if ok {
			i, f, ok = objectField(b, i, depth, anthropicDeltaNames, false)
		}
	}
	return i, ok
}
