package jsonscan

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	nest := func(n int) string { return strings.Repeat(`{"a":[`, n) + "1" + strings.Repeat("]}", n) }
	arrays := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	many := func(n int, dup string) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			b.WriteString(`"k` + strconv.Itoa(i) + `":` + strconv.Itoa(i) + ",")
		}
		b.WriteString(dup + `"end":[` + strings.Repeat(`{"x":1,"y":"z"},`, n) + `null]}`)
		return b.String()
	}
	tests := []struct {
		name string
		in   string
		opts Options
		// want is the error expected; nil means accepted.
		want *Error
	}{
		// Accepted.
		{name: "empty object", in: `{}`},
		{name: "empty array", in: `[]`},
		{name: "scalars at top level", in: ` -1.5e+3 `},
		{name: "string at top level", in: `"x"`},
		{name: "literals", in: "[true,false,null]"},
		{name: "whitespace everywhere", in: " \t\r\n{ \"a\" : [ 1 , 2 ] , \"b\" : { } }\n"},
		{name: "same key in sibling objects", in: `{"tools":[{"type":"a"},{"type":"b"}]}`},
		{name: "same key at different depths", in: `{"type":{"type":{"type":1}}}`},
		{name: "key equal to a value", in: `{"type":"type","x":"type"}`},
		{name: "escaped key unlike the rest", in: `{"typ\u0065s":1,"type":2}`},
		{name: "empty and escaped-empty differ from nothing", in: `{"":1,"a":2}`},
		{name: "escape forms of distinct keys", in: `{"a\"b":1,"a\\b":2,"a/b":3,"a\/c":4}`},
		{name: "numbers", in: `[0,-0,1,12,0.5,-0.5e-7,1E9,1e+09,123456789012345678901234567890]`},
		{name: "all escapes", in: `"\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00"`},
		{name: "lone surrogate in a value", in: `"\ud800"`},
		{name: "invalid UTF-8 in a value", in: "\"\xff\xfe\""},
		{name: "UTF-8 in keys", in: `{"é":1,"e":2,"😀":3}`},
		{name: "many keys, map path", in: many(100, "")},
		{name: "large array", in: "[" + strings.Repeat(`{"type":"text","text":"hi"},`, 10000) + "1]"},
		{name: "depth at the limit", in: arrays(64)},
		{name: "depth at a custom limit", in: arrays(3), opts: Options{MaxDepth: 3}},
		{name: "objects at the limit", in: nest(32)},

		// Duplicate keys.
		{name: "duplicate at top level", in: `{"type":"a","type":"b"}`,
			want: &Error{Offset: 12, Path: "", Msg: `duplicate key "type"`}},
		// encoding/json matches struct fields case-insensitively, the upstream does not: keys
		// equal under its folding are duplicates too.
		{name: "keys differing in case", in: `{"type":"mcp","TYPE":"function"}`,
			want: &Error{Offset: 14, Path: "", Msg: `duplicate key "TYPE"`}},
		{name: "kelvin sign folds to k", in: `{"kind":"a","\u212Aind":"b"}`,
			want: &Error{Offset: 12, Path: "", Msg: "duplicate key \"\u212aind\""}},
		{name: "duplicate not adjacent", in: `{"a":1,"type":2,"b":3,"type":4}`,
			want: &Error{Offset: 22, Path: "", Msg: `duplicate key "type"`}},
		{name: "duplicate in an array element", in: `{"tools":[{"type":"a"},{"type":"b","name":"x","type":"c"}]}`,
			want: &Error{Offset: 46, Path: "tools[1]", Msg: `duplicate key "type"`}},
		{name: "duplicate in a nested object", in: `{"a":{"b":{"c":1,"c":2}}}`,
			want: &Error{Offset: 17, Path: "a.b", Msg: `duplicate key "c"`}},
		{name: "duplicate after a nested object", in: `{"a":{"x":1,"y":2},"a":3}`,
			want: &Error{Offset: 19, Path: "", Msg: `duplicate key "a"`}},
		{name: "escaped duplicate", in: `{"type":"a","\u0074ype":"b"}`,
			want: &Error{Offset: 12, Path: "", Msg: `duplicate key "type"`}},
		{name: "escaped first", in: `{"typ\u0065":"a","type":"b"}`,
			want: &Error{Offset: 17, Path: "", Msg: `duplicate key "type"`}},
		{name: "two escape forms", in: `{"\u0074ype":1,"\u0074yp\u0065":2}`,
			want: &Error{Offset: 15, Path: "", Msg: `duplicate key "type"`}},
		{name: "upper and lower hex", in: `{"\u00E9":1,"\u00e9":2}`,
			want: &Error{Offset: 12, Path: "", Msg: `duplicate key "é"`}},
		{name: "escape against raw UTF-8", in: `{"é":1,"\u00e9":2}`,
			want: &Error{Offset: 8, Path: "", Msg: `duplicate key "é"`}},
		{name: "surrogate pair against raw UTF-8", in: `{"😀":1,"\ud83d\ude00":2}`,
			want: &Error{Offset: 10, Path: "", Msg: `duplicate key "😀"`}},
		{name: "solidus escape", in: `{"a/b":1,"a\/b":2}`,
			want: &Error{Offset: 9, Path: "", Msg: `duplicate key "a/b"`}},
		{name: "lone surrogates decode alike", in: `{"\ud800":1,"\udfff":2}`,
			want: &Error{Offset: 12, Path: "", Msg: "duplicate key \"\ufffd\""}},
		{name: "lone surrogate against U+FFFD", in: `{"x\ud800":1,"x\ufffd":2}`,
			want: &Error{Offset: 13, Path: "", Msg: "duplicate key \"x\ufffd\""}},
		{name: "high surrogate then a non-low escape", in: `{"\ud800\u0041":1,"\ufffdA":2}`,
			want: &Error{Offset: 18, Path: "", Msg: "duplicate key \"\ufffdA\""}},
		{name: "invalid UTF-8 decodes as U+FFFD", in: "{\"a\xff\":1,\"a\xfe\":2}",
			want: &Error{Offset: 8, Path: "", Msg: "duplicate key \"a\ufffd\""}},
		{name: "invalid UTF-8 against an escape", in: "{\"a\xff\":1,\"a\\ufffd\":2}",
			want: &Error{Offset: 8, Path: "", Msg: "duplicate key \"a\ufffd\""}},
		{name: "empty keys", in: `{"":1,"":2}`,
			want: &Error{Offset: 6, Path: "", Msg: `duplicate key ""`}},
		{name: "duplicate among many keys", in: many(100, `"k57":0,`),
			want: &Error{Offset: int64(len(many(100, ""))) - int64(len(`"end":[`+strings.Repeat(`{"x":1,"y":"z"},`, 100)+`null]}`)), Path: "", Msg: `duplicate key "k57"`}},
		{name: "escaped duplicate among many keys", in: many(20, `"k\u0031\u0037":0,`),
			want: &Error{Offset: 161, Msg: `duplicate key "k17"`}},
		{name: "invalid UTF-8 duplicate among many keys", in: many(20, "\"a\xff\":0,\"a\\ufffd\":0,"),
			want: &Error{Offset: 168, Msg: "duplicate key \"a\ufffd\""}},
		{name: "path with odd keys", in: `{"a.b":[{"x y":{"c":1,"c":2}}]}`,
			want: &Error{Offset: 22, Path: `["a.b"][0]["x y"]`, Msg: `duplicate key "c"`}},

		// Nesting.
		{name: "depth over the limit", in: arrays(65),
			want: &Error{Offset: 64, Path: strings.Repeat("[0]", 64), Msg: "nesting deeper than 64"}},
		{name: "depth over a custom limit", in: arrays(4), opts: Options{MaxDepth: 3},
			want: &Error{Offset: 3, Path: "[0][0][0]", Msg: "nesting deeper than 3"}},
		{name: "objects over the limit", in: nest(33),
			want: &Error{Offset: 6 * 32, Path: strings.TrimSuffix(strings.Repeat("a[0].", 32), "."), Msg: "nesting deeper than 64"}},
		{name: "negative limit is the default", in: arrays(65), opts: Options{MaxDepth: -1},
			want: &Error{Offset: 64, Path: strings.Repeat("[0]", 64), Msg: "nesting deeper than 64"}},

		// Invalid JSON.
		{name: "empty", in: "", want: &Error{Offset: 0, Msg: "unexpected end of input looking for a value"}},
		{name: "only whitespace", in: " \n", want: &Error{Offset: 2, Msg: "unexpected end of input looking for a value"}},
		{name: "trailing garbage", in: `{"a":1}x`, want: &Error{Offset: 7, Msg: "invalid character 'x' after the top-level value"}},
		{name: "two values", in: `1 2`, want: &Error{Offset: 2, Msg: "invalid character '2' after the top-level value"}},
		{name: "trailing comma in object", in: `{"a":1,}`, want: &Error{Offset: 7, Msg: "invalid character '}' looking for an object key"}},
		{name: "trailing comma in array", in: `[1,]`, want: &Error{Offset: 3, Path: "[1]", Msg: "invalid character ']' looking for a value"}},
		{name: "missing colon", in: `{"a" 1}`, want: &Error{Offset: 5, Path: "a", Msg: "invalid character '1' after an object key"}},
		{name: "missing comma", in: `{"a":1 "b":2}`, want: &Error{Offset: 7, Path: "a", Msg: "invalid character '\"' after an object member"}},
		{name: "unquoted key", in: `{a:1}`, want: &Error{Offset: 1, Msg: "invalid character 'a' looking for an object key"}},
		{name: "single quotes", in: `{'a':1}`, want: &Error{Offset: 1, Msg: `invalid character '\'' looking for an object key`}},
		{name: "mismatched bracket", in: `[1}`, want: &Error{Offset: 2, Path: "[0]", Msg: "invalid character '}' after an array element"}},
		{name: "unterminated array", in: `[1`, want: &Error{Offset: 2, Path: "[0]", Msg: "unexpected end of input in an array"}},
		{name: "unterminated object", in: `{"a":1`, want: &Error{Offset: 6, Path: "a", Msg: "unexpected end of input in an object"}},
		{name: "unterminated string", in: `{"a":"bcd`, want: &Error{Offset: 9, Path: "a", Msg: "unexpected end of input in a string"}},
		{name: "unterminated long string", in: `"` + strings.Repeat("x", 100), want: &Error{Offset: 101, Msg: "unexpected end of input in a string"}},
		{name: "unterminated key", in: `{"tools":[{"ty`, want: &Error{Offset: 14, Path: "tools[0]", Msg: "unexpected end of input in an object key"}},
		{name: "control character in string", in: "\"a\nb\"", want: &Error{Offset: 2, Msg: "control character byte 0xa in a string"}},
		{name: "control character in key", in: "{\"a\tb\":1}", want: &Error{Offset: 3, Msg: "control character byte 0x9 in an object key"}},
		{name: "control character after 8 bytes", in: "\"abcdefghij\x01\"", want: &Error{Offset: 11, Msg: "control character byte 0x1 in a string"}},
		{name: "DEL is allowed", in: "\"\x7f\""},
		{name: "bad escape", in: `"\x"`, want: &Error{Offset: 2, Msg: "invalid character 'x' in a string escape"}},
		{name: "single-quote escape", in: `"\'"`, want: &Error{Offset: 2, Msg: `invalid character '\'' in a string escape`}},
		{name: "short unicode escape", in: `"\u12"`, want: &Error{Offset: 5, Msg: `invalid character '"' in a \u escape`}},
		{name: "bad hex", in: `{"\u00g0":1}`, want: &Error{Offset: 6, Msg: `invalid character 'g' in a \u escape`}},
		{name: "escape at the end", in: `"\`, want: &Error{Offset: 2, Msg: "unexpected end of input in a string escape"}},
		{name: "unicode escape at the end", in: `"\u00`, want: &Error{Offset: 5, Msg: "unexpected end of input in a string escape"}},
		{name: "leading zero", in: `01`, want: &Error{Offset: 1, Msg: "invalid character '1' after the top-level value"}},
		{name: "leading zero in array", in: `[-012]`, want: &Error{Offset: 3, Path: "[0]", Msg: "invalid character '1' after an array element"}},
		{name: "plus sign", in: `+1`, want: &Error{Offset: 0, Msg: "invalid character '+' looking for a value"}},
		{name: "bare minus", in: `-`, want: &Error{Offset: 1, Msg: "unexpected end of input in a number"}},
		{name: "minus letter", in: `-a`, want: &Error{Offset: 1, Msg: "invalid character 'a' in a number"}},
		{name: "dot without digits", in: `1.`, want: &Error{Offset: 2, Msg: "unexpected end of input in a number"}},
		{name: "dot first", in: `.5`, want: &Error{Offset: 0, Msg: "invalid character '.' looking for a value"}},
		{name: "exponent without digits", in: `1e+`, want: &Error{Offset: 3, Msg: "unexpected end of input in a number"}},
		{name: "exponent letter", in: `[1Ex]`, want: &Error{Offset: 3, Path: "[0]", Msg: "invalid character 'x' in a number"}},
		{name: "hex number", in: `0x10`, want: &Error{Offset: 1, Msg: "invalid character 'x' after the top-level value"}},
		{name: "NaN", in: `NaN`, want: &Error{Offset: 0, Msg: "invalid character 'N' looking for a value"}},
		{name: "truncated literal", in: `tru`, want: &Error{Offset: 3, Msg: "unexpected end of input in literal true"}},
		{name: "misspelled literal", in: `[nul1]`, want: &Error{Offset: 4, Path: "[0]", Msg: "invalid character '1' in literal null"}},
		{name: "literal with trailing letters", in: `truex`, want: &Error{Offset: 4, Msg: "invalid character 'x' after the top-level value"}},
		{name: "byte order mark", in: "\xef\xbb\xbf{}", want: &Error{Offset: 0, Msg: "invalid character byte 0xef looking for a value"}},
		{name: "NUL after the value", in: "{}\x00", want: &Error{Offset: 2, Msg: "invalid character byte 0x0 after the top-level value"}},
		{name: "comment", in: "{} // x", want: &Error{Offset: 3, Msg: "invalid character '/' after the top-level value"}},
		{name: "form feed is no whitespace", in: "\f1", want: &Error{Offset: 0, Msg: "invalid character byte 0xc looking for a value"}},
		{name: "duplicate after a syntax error is not reached", in: `{"a":1,"a":}`, want: &Error{Offset: 7, Msg: `duplicate key "a"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check([]byte(tt.in), tt.opts)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Check(%q) = %v, want nil", tt.in, err)
				}
				if !json.Valid([]byte(tt.in)) {
					t.Errorf("json.Valid refuses %q, which Check accepts", tt.in)
				}
				return
			}
			var got *Error
			if !errors.As(err, &got) {
				t.Fatalf("Check(%q) = %v, want an *Error", tt.in, err)
			}
			if *got != *tt.want {
				t.Errorf("Check(%.40q)\n got %+v\nwant %+v", tt.in, *got, *tt.want)
			}
			if strings.HasPrefix(got.Msg, "duplicate") || strings.HasPrefix(got.Msg, "nesting") {
				return
			}
			if json.Valid([]byte(tt.in)) {
				t.Errorf("json.Valid accepts %q, which Check calls a syntax error", tt.in)
			}
		})
	}
}

func TestErrorString(t *testing.T) {
	tests := []struct {
		err  Error
		want string
	}{
		{Error{Offset: 1234, Path: "tools[2]", Msg: `duplicate key "type"`}, `duplicate key "type" at tools[2] (byte 1234)`},
		{Error{Offset: 12, Msg: `duplicate key "type"`}, `duplicate key "type" at top level (byte 12)`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

// TestCheckClipsLongKeys checks that a hostile key of megabytes does not end up whole in an
// error message that is logged and sent back.
func TestCheckClipsLongKeys(t *testing.T) {
	long := strings.Repeat("é", 1<<20)
	in := `{"` + long + `":{"k":1,"k":2}}`
	err := Check([]byte(in), Options{})
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Check = %v, want an *Error", err)
	}
	want := `[` + strconv.Quote(strings.Repeat("é", 32)+"…") + `]`
	if e.Path != want || e.Msg != `duplicate key "k"` {
		t.Errorf("Path %q, Msg %q; want %q, duplicate key \"k\"", e.Path, e.Msg, want)
	}
	if len(e.Error()) > 200 {
		t.Errorf("message of %d bytes", len(e.Error()))
	}
}

// TestCheckAllocations checks the promise that scalars and small objects cost no
// allocation: a request's size must not turn into garbage.
func TestCheckAllocations(t *testing.T) {
	body := []byte(`{"model":"m","messages":[` + strings.Repeat(`{"role":"user","content":"hello \u00e9 world","n":[1,2.5e3,true,null]},`, 1000) + `{}]}`)
	allocs := testing.AllocsPerRun(20, func() {
		if err := Check(body, Options{}); err != nil {
			t.Fatal(err)
		}
	})
	// The scanner state, its frame stack and key slice growing to their size, and the key
	// arena once: a handful, whatever the number of values.
	if allocs > 10 {
		t.Errorf("%v allocations for %d bytes", allocs, len(body))
	}
}
