package gateway

import (
	"strings"
	"testing"
)

// responsesEventCases are Responses API events decodeResponsesEvent must read as
// json.Unmarshal does: the stream's real events, then hostile ones (escapes, keys in other
// cases, repeats, nulls, values of the wrong type), then hostileEvents.
var responsesEventCases = append([]string{
	`{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","created_at":1756300000,"model":"gpt-5-codex","status":"in_progress","output":[],"usage":null}}`,
	`{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"rs_01","type":"reasoning","summary":[]}}`,
	`{"type":"response.reasoning_summary_text.delta","sequence_number":4,"item_id":"rs_01","output_index":0,"summary_index":0,"delta":"**Reading**","obfuscation":"4dVqSxn2"}`,
	`{"type":"response.output_text.delta","sequence_number":9,"item_id":"msg_01","output_index":1,"content_index":0,"delta":"relay relay ","logprobs":[],"obfuscation":"Qm3kT"}`,
	`{"type":"response.output_text.delta","sequence_number":9,"item_id":"msg_01","output_index":1,"content_index":0,"delta":"a\"b\\c\/d\n\t\u00e9\u65e5 \uD83D\uDE00 \uDE00 sk-\u0070roj é 日本 😀","logprobs":[{"token":"a","logprob":-0.1,"bytes":[97],"top_logprobs":[]}]}`,
	"{\"type\":\"response.output_text.delta\",\"delta\":\"invalid \xff\xfe utf-8\"}",
	`{"type":"response.function_call_arguments.delta","sequence_number":11,"item_id":"fc_01","output_index":2,"delta":"{\"command\":[\"bash\"","obfuscation":"a9"}`,
	`{"type":"response.output_text.done","sequence_number":12,"item_id":"msg_01","output_index":1,"content_index":0,"text":"relay relay ","logprobs":[]}`,
	`{"type":"response.completed","sequence_number":20,"response":{"id":"resp_1","model":"gpt-5-codex","status":"completed","output":[{"id":"msg_01","type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]},{"type":"function_call","call_id":"call_1","name":"shell","arguments":"{}"}],"usage":{"input_tokens":12000,"input_tokens_details":{"cached_tokens":11000},"output_tokens":100,"output_tokens_details":{"reasoning_tokens":90},"total_tokens":12100}}}`,
	`{"type":"response.incomplete","response":{"model":"m","output":[],"incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":1,"output_tokens":2}}}`,
	`{"type":"error","code":"server_error","message":"The server had an error","param":null,"sequence_number":3}`,
	`{"type":"response.failed","response":{"status":"failed","error":{"code":"rate_limit_exceeded","message":"slow down"},"usage":null}}`,
	// Keys in other cases, escaped, repeated; nulls.
	`{"Type":"response.output_text.delta","DELTA":"upper","Response":null}`,
	`{"type":"response.output_text.delta","delta":"a","delta":"b","delta":null}`,
	`{"type":"response.output_text.delta","type":"response.reasoning_summary_text.delta","delta":"x"}`,
	`{"type":"response.completed","response":{"model":"a","usage":{"input_tokens":1}},"response":{"output":[{}],"usage":{"output_tokens":2}}}`,
	`{"type":"response.completed","response":{"model":"a"},"response":null,"response":{"output":null}}`,
	`{"\u0064elta":"escaped key","type":"response.output_text.delta"}`, `{"deltä":"not the key","delta":"k"}`,
	`{"type":null,"delta":null,"response":null}`, `{"type":"response.completed","response":{"incomplete_details":null,"usage":{"input_tokens_details":null}}}`,
	// Values of the wrong type: the event is unreadable.
	`{"type":"response.output_text.delta","delta":{"text":"object"}}`, `{"type":"response.output_text.delta","delta":["x"]}`,
	`{"type":"response.output_text.delta","delta":1}`, `{"response":[]}`, `{"response":"x"}`, `{"response":{"model":1}}`,
	`{"response":{"output":{}}}`, `{"response":{"usage":{"input_tokens":"1"}}}`, `{"response":{"usage":{"input_tokens":1.5}}}`,
	`{"response":{"incomplete_details":{"reason":false}}}`, `{"response":{"output":[1,"x",null,{"type":"message"}]}}`,
	// Not JSON inside the members read and skipped.
	`{"type":"response.output_text.delta","delta":"x","logprobs":[,]}`, `{"type":"response.output_text.delta","delta":"x\"}`,
	`{"response":{"output":[}}`, `{"response":{"usage":{"input_tokens":1,}}}`, `{"response":{"model":"m"} }x`,
}, hostileEvents...)

func TestDecodeResponsesEventAsUnmarshal(t *testing.T) {
	for _, c := range responsesEventCases {
		checkAsUnmarshal(t, c, &responsesEvent{}, decodeResponsesEvent, nil)
	}
	for _, n := range []int{validMaxDepth - 1, validMaxDepth} {
		nested := strings.Repeat("[", n) + strings.Repeat("]", n)
		checkAsUnmarshal(t, `{"logprobs":`+nested+`,"delta":"x"}`, &responsesEvent{}, decodeResponsesEvent, nil)
		checkAsUnmarshal(t, `{"response":{"output":`+nested[1:len(nested)-1]+`}}`, &responsesEvent{}, decodeResponsesEvent, nil)
	}
}

func FuzzDecodeResponsesEvent(f *testing.F) {
	for _, c := range responsesEventCases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, data string) {
		checkAsUnmarshal(t, data, &responsesEvent{}, decodeResponsesEvent, nil)
	})
}
