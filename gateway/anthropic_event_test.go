package gateway

import (
	"strings"
	"testing"
)

// anthropicEventCases are Messages stream events decodeAnthropicEvent must read as
// json.Unmarshal does: the stream's real events, then hostile ones (escapes, keys in other
// cases, repeats, nulls, values of the wrong type), then hostileEvents.
var anthropicEventCases = append([]string{
	`{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":2100,"cache_read_input_tokens":9800,"output_tokens":1,"service_tier":"standard"}}}`,
	`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me think"}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM"}}`,
	`{"type":"content_block_stop","index":0}`,
	`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"relay relay "}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"a\"b\\c\/d\n\t\u00e9\u65e5 \uD83D\uDE00 \uDE00 sk-\u0070roj é 日本 😀"}}`,
	"{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"invalid \xff\xfe utf-8\"}}",
	`{"type":"content_block_delta","index":1,"delta":{"type":"citations_delta","citation":{"type":"char_location","cited_text":"x","document_index":0}}}`,
	`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01","name":"Bash","input":{}}}`,
	`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"command\": \""}}`,
	`{"type":"content_block_start","index":3,"content_block":{"type":"redacted_thinking","data":"EmwKAhgB"}}`,
	`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":100000}}`,
	`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":12,"cache_read_input_tokens":9800,"output_tokens":15}}`,
	`{"type":"message_stop"}`, `{"type":"ping"}`,
	`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
	// Keys in other cases, escaped, repeated; nulls.
	`{"TYPE":"content_block_delta","Index":1,"DELTA":{"Type":"text_delta","TEXT":"upper","Partial_JSON":"p"}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"a"},"delta":{"thinking":"b"}}`,
	`{"type":"content_block_delta","index":1,"delta":{"text":"a"},"delta":null,"delta":{"thinking":"fresh"}}`,
	`{"type":"content_block_delta","delta":{"text":"a","text":null,"thinking":"t","partial_json":"p"}}`,
	`{"type":"content_block_delta","index":1,"index":null,"index":-0,"delta":null}`,
	`{"type":"message_start","message":{"model":"a","usage":{"input_tokens":1}},"message":{"usage":{"output_tokens":2}}}`,
	`{"type":"content_block_start","content_block":{"type":"tool_use","input":{"a":1}},"content_block":{"id":"x"}}`,
	`{"type":"message_delta","usage":{"output_tokens":1},"usage":null}`, `{"\u0064elta":{"\u0074ext":"escaped"}}`,
	`{"type":null,"index":null,"message":null,"content_block":null,"delta":null,"usage":null}`,
	`{"delta":{"type":null,"text":null,"thinking":null,"partial_json":null,"stop_reason":null}}`, `{"delta":{}}`,
	`{"indeX":3,"ındex":4,"deltA":{"tEXT":"folded"}}`,
	// Values of the wrong type: the event is unreadable.
	`{"type":"content_block_delta","index":"1"}`, `{"index":1.5}`, `{"index":1e2}`, `{"index":99999999999999999999}`,
	`{"delta":"text"}`, `{"delta":[]}`, `{"delta":{"text":1}}`, `{"delta":{"text":["a"]}}`, `{"delta":{"stop_reason":{}}}`,
	`{"delta":{"type":true}}`, `{"message":[]}`, `{"message":{"usage":{"input_tokens":"1"}}}`, `{"usage":{"output_tokens":-1.5}}`,
	`{"content_block":{"type":1}}`, `{"content_block":{"input":{"a":1},"text":2}}`, `{"usage":[]}`,
	// Not JSON inside the members read and skipped.
	`{"type":"content_block_delta","delta":{"text":"x",}}`, `{"delta":{"text":"x"},"delta":}`, `{"message":{"content":[,]}}`,
	`{"delta":{"citation":{"a":}},"index":0}`, `{"delta":{"text":"x"} "index":0}`,
}, hostileEvents...)

func TestDecodeAnthropicEventAsUnmarshal(t *testing.T) {
	for _, c := range anthropicEventCases {
		checkAsUnmarshal(t, c, &anthropicEvent{}, anthropicDecoder(&anthropicDelta{}), nil)
	}
	for _, n := range []int{validMaxDepth - 1, validMaxDepth} {
		nested := strings.Repeat("[", n) + strings.Repeat("]", n)
		checkAsUnmarshal(t, `{"skipped":`+nested+`,"type":"ping"}`, &anthropicEvent{}, anthropicDecoder(&anthropicDelta{}), nil)
		checkAsUnmarshal(t, `{"delta":{"citation":`+nested[1:len(nested)-1]+`}}`, &anthropicEvent{}, anthropicDecoder(&anthropicDelta{}), nil)
	}
	// One delta through all of them, as a stream reuses it: nothing of an event is left in
	// the next.
	delta := &anthropicDelta{}
	for range 2 {
		for _, c := range anthropicEventCases {
			checkAsUnmarshal(t, c, &anthropicEvent{}, anthropicDecoder(delta), nil)
		}
	}
}

// anthropicDecoder is decodeAnthropicEvent with delta as its delta's store.
func anthropicDecoder(delta *anthropicDelta) func([]byte, *anthropicEvent) bool {
	return func(data []byte, ev *anthropicEvent) bool { return decodeAnthropicEvent(data, ev, delta) }
}

func FuzzDecodeAnthropicEvent(f *testing.F) {
	for _, c := range anthropicEventCases {
		f.Add(c)
	}
	delta := &anthropicDelta{}
	f.Fuzz(func(t *testing.T, data string) {
		checkAsUnmarshal(t, data, &anthropicEvent{}, anthropicDecoder(delta), nil)
	})
}
