package gateway

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// chatChunkCases are Chat Completions chunks decodeChatChunk must read as json.Unmarshal
// does: real ones, and hostile ones (escapes, unicode, keys in other cases, repeated keys,
// nulls, values of the wrong type, a key split by escapes).
var chatChunkCases = []string{
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-x","system_fingerprint":"fp","choices":[{"index":0,"delta":{"role":"assistant","content":"relay "},"logprobs":null,"finish_reason":null}]}`,
	`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":100000,"prompt_tokens_details":{"cached_tokens":4}}}`,
	`{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"shell","arguments":""}}]}}]}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"command\":[\"ls\"]}"}},{"index":1,"id":"c2","function":{"name":"x","arguments":"{}"}}]}}]}`,
	`{"choices":[{"index":1,"delta":{"content":"other choice"}},{"index":0,"delta":{"content":"mine","reasoning_content":"think","refusal":"no"}}]}`,
	// Escapes and unicode, in values and keys.
	`{"choices":[{"index":0,"delta":{"content":"a\"b\\c\/d\n\t\r\b\f \u00e9\u65e5 \uD83D\uDE00 \uDE00 lone"}}]}`,
	`{"choices":[{"index":0,"delta":{"content":"sk-\u0070roj-SECRET é 日本 😀"}}]}`,
	"{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"invalid \xff\xfe utf-8\"}}]}",
	`{"choices":[{"index":0,"delta":{"\u0063ontent":"escaped key","conte\u006et":"again"}}]}`,
	`{"model":"a","MODEL":"b","Choices":[{"INDEX":0,"Delta":{"Content":"case","TOOL_CALLS":[{"Index":0,"ID":"i","Function":{"NAME":"n","Arguments":"a"}}]},"Finish_Reason":"length"}]}`,
	`{"choices":[{"index":0,"delta":{"tool_callſ":[{"index":0,"id":"long s"}]}}]}`,
	`{"choices":[{"index":0,"delta":{"conteKt":"kelvin? no","content":"x"}}],"modeK":"no"}`,
	// Repeated keys: the last value wins, a repeated object's fields merge, a repeated
	// array's elements decode into the earlier ones.
	`{"model":"a","model":"b","choices":[{"index":0,"delta":{"content":"x"}}],"choices":[{"index":0,"delta":{"refusal":"y"}}]}`,
	`{"choices":[{"index":0,"delta":{"content":"x"},"delta":{"reasoning_content":"y"},"delta":null}]}`,
	`{"choices":[{"index":5},{"index":6}],"choices":[{"delta":{"content":"z"}}]}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"a"},{"id":"b"}],"tool_calls":[{"function":{"name":"n"}}]}}]}`,
	`{"choices":[{"index":0}],"choices":[],"choices":[{"index":0,"delta":{"content":"after empty"}}]}`,
	// Nulls.
	`null`, `{}`, `{"model":null,"usage":null,"choices":null}`,
	`{"choices":[null,{"index":null,"finish_reason":null,"delta":{"content":null,"tool_calls":null}}]}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":[null,{"index":null,"id":null,"function":null}]}}]}`,
	`{"usage":{"prompt_tokens":null,"completion_tokens":3}}`,
	// Values of the wrong type: the chunk is unreadable.
	`[]`, `"chunk"`, `1`, `true`, `{"model":1}`, `{"choices":{}}`, `{"choices":"x"}`, `{"choices":[1]}`,
	`{"choices":[{"index":"0"}]}`, `{"choices":[{"index":1.5}]}`, `{"choices":[{"index":1e2}]}`,
	`{"choices":[{"index":99999999999999999999}]}`, `{"choices":[{"index":-0,"delta":{"content":"neg zero"}}]}`,
	`{"choices":[{"index":0,"delta":{"content":["part"]}}]}`, `{"choices":[{"index":0,"delta":"text"}]}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":{}}}]}`, `{"choices":[{"index":0,"delta":{"tool_calls":[{"function":[]}]}}]}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":{"a":1}}}]}}]}`,
	`{"choices":[{"finish_reason":false}]}`, `{"usage":{"prompt_tokens":"10"}}`, `{"usage":[]}`,
	// Text that is not JSON, in the members read and in those skipped: unreadable, as
	// decodeChatChunk validates as it reads.
	``, ` `, `{`, `{"choices":[`, `{"choices":[{"index":0}`, `{"model":"m"`, `{"model":"m",}`, `{"model" "m"}`,
	`{"model":"m"}}`, `{"model":"m"} x`, `{"model":"m"}{}`, `{model:"m"}`, `{"model":'m'}`, `{"choices":[,]}`,
	`{"choices":[{"index":0},]}`, `{"choices":[{"index":0} {"index":1}]}`, `{"choices":[{"index":01}]}`,
	`{"choices":[{"index":-}]}`, `{"choices":[{"index":0.}]}`, `{"choices":[{"index":nul}]}`, `{"model":nulL}`,
	`{"choices":nulx}`, `{"choices":[{"index":0,"delta":{"content":"bad \x escape"}}]}`,
	"{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tab\tinside\"}}]}",
	`{"choices":[{"index":0,"delta":{"content":"\u12G4"}}]}`, `{"choices":[{"index":0,"delta":{"content":"unterminated}}]}`,
	`{"skipped":[1,2,}`, `{"skipped":{"a":1,}}`, `{"skipped":tru, "model":"m"}`, `{"skipped":"\q","model":"m"}`,
	`{"skipped":[{"deep":[[[[[]]]]]}],"model":"m"}`, `{"skipped":1e,"model":"m"}`, `{"usage":{"prompt_tokens":1,}}`,
	`{"choices":[{"index":0,"logprobs":{"content":[{"token":"x","bytes":[1,2]}]},"delta":{"content":"ok"}}]}`,
	`{"choices":[{"index":0,"delta":{"content":"x"}}]}` + "\x00", "\ufeff{}", `{"\u006dodel":"escaped key read"}`,
	// Whitespace everywhere.
	" { \"choices\" : [ { \"index\" : 0 , \"delta\" : { \"content\" : \" spaced \" } } ] , \"model\" : \"m\" } ",
}

// normalChunk makes empty slices nil: json.Unmarshal leaves an absent array nil where a
// reused buffer is empty, which no reader of a chunk tells apart.
func normalChunk(c chatChunk) chatChunk {
	if len(c.Choices) == 0 {
		c.Choices = nil
	}
	for i := range c.Choices {
		if len(c.Choices[i].Delta.ToolCalls) == 0 {
			c.Choices[i].Delta.ToolCalls = nil
		}
	}
	return c
}

func checkChatChunk(t *testing.T, data string, buf []chatChoice) []chatChoice {
	t.Helper()
	var want chatChunk
	wantOK := json.Unmarshal([]byte(data), &want) == nil
	clear(buf[:cap(buf)])
	got := chatChunk{Choices: buf[:0]}
	gotOK := decodeChatChunk([]byte(data), &got)
	if gotOK != wantOK {
		t.Errorf("%q: decodeChatChunk ok %v, json.Unmarshal ok %v", data, gotOK, wantOK)
		return buf
	}
	if wantOK && !reflect.DeepEqual(normalChunk(got), normalChunk(want)) {
		t.Errorf("%q:\n decodeChatChunk %+v\n json.Unmarshal  %+v", data, got, want)
	}
	if cap(got.Choices) > cap(buf) {
		buf = got.Choices[:0]
	}
	return buf
}

func TestDecodeChatChunkAsUnmarshal(t *testing.T) {
	for _, c := range chatChunkCases {
		checkChatChunk(t, c, nil)
	}
	// At encoding/json's depth limit and one past it, in a member skipped and in one read.
	for _, n := range []int{validMaxDepth - 1, validMaxDepth} {
		nested := strings.Repeat("[", n) + strings.Repeat("]", n)
		checkChatChunk(t, `{"skipped":`+nested+`,"model":"m"}`, nil)
		checkChatChunk(t, `{"usage":{"x":`+nested[2:len(nested)-2]+`}}`, nil)
		checkChatChunk(t, `{"choices":[{"index":0,"logprobs":`+nested[2:len(nested)-2]+`}]}`, nil)
	}
	// One buffer through all of them, as a stream reuses it: nothing of a chunk is left in
	// the next.
	var buf []chatChoice
	for range 2 {
		for _, c := range chatChunkCases {
			buf = checkChatChunk(t, c, buf)
		}
	}
}

func FuzzDecodeChatChunk(f *testing.F) {
	for _, c := range chatChunkCases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, data string) {
		checkChatChunk(t, data, nil)
	})
}
