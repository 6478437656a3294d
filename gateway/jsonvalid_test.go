package gateway

import (
	"encoding/json"
	"strings"
	"testing"
)

// validJSONCases are texts scanValue (validJSON) must judge as json.Valid does: the events of each
// protocol, and hostile or broken ones.
var validJSONCases = []string{
	`{"choices":[{"index":0,"delta":{"content":"relay relay "}}]}`,
	`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":100000}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`,
	`{"candidates":[{"content":{"parts":[{"text":"x"}],"role":"model"}}],"usageMetadata":{"promptTokenCount":3}}`,
	` {"a" : [ 1 , -2.5e+10 , true , false , null , "x" , { } , [ ] ] } `,
	"\t\r\n[]\n",
	`"just a string"`, `0`, `-0`, `1.5`, `1e5`, `1E-5`, `-12.34e+56`, `true`, `false`, `null`,
	`{}`, `[]`, `[[[]]]`, `{"a":{"b":{"c":[{}]}}}`,
	// Escapes, unicode and invalid UTF-8 (which json.Valid accepts).
	`"\" \\ \/ \b \f \n \r \t \u00e9 \uD83D\uDE00 \uABCD"`,
	`"sk-\u0070roj-split\"key"`, `"é ü 日本語 😀"`, "\"\xff\xfe raw bytes\"", "\"\x7f\"",
	`{"\u0063ontent":"x"}`, `{"CONTENT":"x","content":"y","content":"z"}`,
	// Broken: each of these json.Valid refuses.
	``, ` `, `{`, `}`, `[`, `]`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[,1]`, `{,}`,
	`{"a":1 "b":2}`, `[1 2]`, `{"a" 1}`, `{1:2}`, `{'a':1}`, `{a:1}`, `[1]]`, `[1]}`, `{"a":1]`,
	`"unterminated`, `"bad \x escape"`, `"\u12"`, `"\u12G4"`, `"\`, "\"tab\tin string\"", "\"nl\nx\"",
	`01`, `-`, `-a`, `1.`, `.5`, `1e`, `1e+`, `+1`, `0x10`, `1.5.5`, `NaN`, `Infinity`,
	`tru`, `truex`, `nul`, `nullx`, `True`, `[true false]`, `{} {}`, `1 2`, `""""`,
	`{"a":1}x`, "{\"a\":1}\x00", "\x00", `[1,2,3`, `{"a":[1,{"b":2}}`, `{"a":"b"`,
}

func TestValidJSONAsValid(t *testing.T) {
	for _, c := range validJSONCases {
		if got, want := validJSON([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("validJSON(%q) = %v, json.Valid %v", c, got, want)
		}
	}
}

func TestValidJSONSpecialAtEachOffset(t *testing.T) {
	// A string's plain text is skipped eight bytes at a time: a quote, a backslash or a
	// control byte must be found at any offset in a word, beside any other byte.
	for n := range 20 {
		for _, special := range []string{`"`, `\\`, `\"`, `\u00e9`, "\x00", "\x1f", "\n", "\x20", "\x7f", "\x80", "\xff", "é", `\x`} {
			for _, fill := range []string{"a", "\xff", "!"} {
				c := []byte(`["` + strings.Repeat(fill, n) + special + strings.Repeat(fill, 17-n%3) + `"]`)
				if got, want := validJSON(c), json.Valid(c); got != want {
					t.Errorf("validJSON(%q) = %v, json.Valid %v", c, got, want)
				}
			}
		}
	}
}

func TestValidJSONDepth(t *testing.T) {
	// json.Valid takes 10000 nested arrays and objects and refuses 10001.
	for _, n := range []int{validMaxDepth - 1, validMaxDepth, validMaxDepth + 1} {
		for _, open := range []string{"[", `{"a":`} {
			close := "]"
			if open != "[" {
				close = "}"
			}
			c := []byte(strings.Repeat(open, n) + "1" + strings.Repeat(close, n))
			if got, want := validJSON(c), json.Valid(c); got != want {
				t.Errorf("depth %d of %s: validJSON %v, json.Valid %v", n, open, got, want)
			}
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, c := range validJSONCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Errorf("validJSON(%q) = %v, json.Valid %v", b, got, want)
		}
	})
}

// validJSON is scanValue's judgement of a whole text: one JSON value, whitespace around it
// allowed, as json.Valid judges it.
func validJSON(b []byte) bool {
	i := scanValue(b, skipSpace(b, 0), 0)
	return i >= 0 && skipSpace(b, i) == len(b)
}
