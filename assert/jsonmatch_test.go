package assert

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// doc decodes a JSON literal the way a worker decodes the wire form of an expected document.
func doc(t *testing.T, s string) any {
	t.Helper()
	v, err := DecodeJSON([]byte(s))
	if err != nil {
		t.Fatalf("DecodeJSON(%q): %v", s, err)
	}
	return v
}

func TestEvaluateJSON(t *testing.T) {
	tests := []struct {
		name     string
		expected string // JSON
		stdout   string
		passed   bool
		path     string
		message  string
		actual   string
	}{
		// Objects: partial.
		{name: "equal", expected: `{"a":1}`, stdout: `{"a":1}`, passed: true,
			message: "stdout JSON matches the expected document", actual: `{"a":1}`},
		{name: "extra keys are fine", expected: `{"user":{"name":"ann"}}`,
			stdout: `{"ok":true,"user":{"id":7,"name":"ann"}}`, passed: true,
			message: "stdout JSON matches the expected document", actual: `{"ok":true,"user":{"id":7,"name":"ann"}}`},
		{name: "missing key", expected: `{"user":{"name":"ann"}}`, stdout: `{"user":{"id":7}}`,
			path: "$.user.name", message: `stdout JSON differs at $.user.name: the key is missing; expected string "ann"`,
			actual: `{"id":7}`},
		{name: "nested value differs", expected: `{"items":[{"name":"x"},{"name":"y"},{"name":"a"}]}`,
			stdout: `{"items":[{"name":"x"},{"name":"y"},{"name":"b"}]}`,
			path:   "$.items[2].name", message: `stdout JSON differs at $.items[2].name: expected "a", got "b"`, actual: `"b"`},
		{name: "first difference in key order, others counted", expected: `{"b":1,"a":1,"c":1}`, stdout: `{"a":2,"b":2,"c":1}`,
			path: "$.a", message: `stdout JSON differs at $.a: expected 1, got 2 (and 1 more difference)`, actual: `2`},
		{name: "keys that are not identifiers", expected: `{"a b":{"":{"1x":true}}}`, stdout: `{"a b":{"":{"1x":false}}}`,
			path: `$["a b"][""]["1x"]`, message: `stdout JSON differs at $["a b"][""]["1x"]: expected true, got false`, actual: `false`},

		// Arrays: positional, same length, elements partial.
		{name: "array elements partial", expected: `[{"id":1},{"id":2}]`, stdout: `[{"id":1,"x":0},{"id":2}]`, passed: true,
			message: "stdout JSON matches the expected document", actual: `[{"id":1,"x":0},{"id":2}]`},
		{name: "actual array longer", expected: `{"items":[1,2]}`, stdout: `{"items":[1,2,3]}`,
			path: "$.items", message: "stdout JSON differs at $.items: expected an array of 2 elements, got 3 elements", actual: `[1,2,3]`},
		{name: "actual array shorter", expected: `{"items":[1,2]}`, stdout: `{"items":[1]}`,
			path: "$.items", message: "stdout JSON differs at $.items: expected an array of 2 elements, got 1 element", actual: `[1]`},
		{name: "order matters", expected: `[{"id":1},{"id":2}]`, stdout: `[{"id":2},{"id":1}]`,
			path: "$[0].id", message: "stdout JSON differs at $[0].id: expected 1, got 2 (and 1 more difference)", actual: `2`},
		{name: "empty array matches only empty", expected: `{"a":[]}`, stdout: `{"a":[0]}`,
			path: "$.a", message: "stdout JSON differs at $.a: expected an array of 0 elements, got 1 element", actual: `[0]`},
		{name: "nested arrays", expected: `[[1,[2]],[]]`, stdout: `[[1,[3]],[]]`,
			path: "$[0][1][0]", message: "stdout JSON differs at $[0][1][0]: expected 2, got 3", actual: `3`},
		{name: "{} placeholder matches any object", expected: `[{},{"id":2}]`, stdout: `[{"id":1},{"id":2}]`, passed: true,
			message: "stdout JSON matches the expected document", actual: `[{"id":1},{"id":2}]`},
		{name: "{} does not match a non-object", expected: `[{}]`, stdout: `[1]`,
			path: "$[0]", message: "stdout JSON differs at $[0]: expected an object {}, got number 1", actual: `1`},

		// null.
		{name: "null matches null", expected: `{"a":null}`, stdout: `{"a":null}`, passed: true,
			message: "stdout JSON matches the expected document", actual: `{"a":null}`},
		{name: "null does not match a missing key", expected: `{"a":null}`, stdout: `{}`,
			path: "$.a", message: "stdout JSON differs at $.a: the key is missing; expected null", actual: `{}`},
		{name: "null does not match 0", expected: `{"a":null}`, stdout: `{"a":0}`,
			path: "$.a", message: "stdout JSON differs at $.a: expected null, got number 0", actual: `0`},
		{name: "a value does not match null", expected: `{"a":""}`, stdout: `{"a":null}`,
			path: "$.a", message: `stdout JSON differs at $.a: expected string "", got null`, actual: `null`},

		// Numbers and types.
		{name: "1 equals 1.0", expected: `{"n":1}`, stdout: `{"n":1.0}`, passed: true,
			message: "stdout JSON matches the expected document", actual: `{"n":1.0}`},
		{name: "1.0 equals 1e0 and 10e-1", expected: `[1.0,1.0]`, stdout: `[1e0,10e-1]`, passed: true,
			message: "stdout JSON matches the expected document", actual: `[1e0,10e-1]`},
		{name: "big integers keep their precision", expected: `{"id":12345678901234567890}`, stdout: `{"id":12345678901234567891}`,
			path: "$.id", message: "stdout JSON differs at $.id: expected 12345678901234567890, got 12345678901234567891",
			actual: `12345678901234567891`},
		{name: "-0 equals 0", expected: `[0]`, stdout: `[-0.0]`, passed: true,
			message: "stdout JSON matches the expected document", actual: `[-0.0]`},
		{name: "string 1 is not number 1", expected: `{"n":1}`, stdout: `{"n":"1"}`,
			path: "$.n", message: `stdout JSON differs at $.n: expected number 1, got string "1"`, actual: `"1"`},
		{name: "true is not \"true\"", expected: `{"ok":true}`, stdout: `{"ok":"true"}`,
			path: "$.ok", message: `stdout JSON differs at $.ok: expected boolean true, got string "true"`, actual: `"true"`},
		{name: "object is not array", expected: `{"a":{"b":1}}`, stdout: `{"a":[1]}`,
			path: "$.a", message: `stdout JSON differs at $.a: expected an object {"b":1}, got an array [1]`, actual: `[1]`},
		{name: "top-level scalar", expected: `42`, stdout: "42\n", passed: true,
			message: "stdout JSON matches the expected document", actual: `42`},
		{name: "composed and decomposed strings are equal", expected: `{"s":"caf\u00e9"}`, stdout: `{"s":"cafe\u0301"}`, passed: true,
			message: "stdout JSON matches the expected document", actual: "{\"s\":\"cafe\u0301\"}"},
		{name: "strings are case-sensitive", expected: `{"env":"DEV"}`, stdout: `{"env":"dev"}`,
			path: "$.env", message: `stdout JSON differs at $.env: expected "DEV", got "dev"`, actual: `"dev"`},

		// Stdout that is not one JSON document.
		{name: "surrounding whitespace and BOM are fine", expected: `{"a":1}`, stdout: "\uFEFF \n\t{\"a\":1}\r\n  ", passed: true,
			message: "stdout JSON matches the expected document", actual: `{"a":1}`},
		{name: "not JSON", expected: `{"a":1}`, stdout: "Result:\n{\"a\":1}",
			message: "stdout is not valid JSON: invalid character 'R' looking for beginning of value (line 1, column 1)",
			actual:  `Result:\n{"a":1}`},
		{name: "syntax error inside", expected: `{"a":1}`, stdout: "{\n  \"a\": 1,\n}",
			message: "stdout is not valid JSON: invalid character '}' looking for beginning of object key string (line 3, column 1)",
			actual:  `{\n  "a": 1,\n}`},
		{name: "trailing data", expected: `{"a":1}`, stdout: `{"a":1} {"b":2}`,
			message: "stdout is not valid JSON: more data after the JSON document (line 1, column 9)",
			actual:  `{"a":1} {"b":2}`},
		{name: "cut short", expected: `{"a":1}`, stdout: `{"a":[1,2`,
			message: "stdout is not valid JSON: the JSON document ends early (line 1, column 10)",
			actual:  `{"a":[1,2`},
		{name: "empty stdout", expected: `{"a":1}`, stdout: " \n",
			message: "stdout is empty; expected a JSON document", actual: ` \n`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Assertion{Type: StdoutJSON, JSON: doc(t, tt.expected)}
			if err := Compile(&a); err != nil {
				t.Fatalf("Compile: %v", err)
			}
			got, err := Evaluate(a, Observation{Stdout: tt.stdout})
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			want := Result{Type: StdoutJSON, Passed: tt.passed, Expected: "stdout JSON matches " + renderJSON(a.JSON, maxExcerpt-20),
				Actual: tt.actual, Message: tt.message, Path: tt.path}
			if got != want {
				t.Errorf("Evaluate\n got %#v\nwant %#v", got, want)
			}
			checkResult(t, got)
		})
	}
}

func TestEvaluateJSONTruncatedStdout(t *testing.T) {
	a := Assertion{Type: StdoutJSON, JSON: map[string]any{"a": 1}}
	got, err := Evaluate(a, Observation{Stdout: `{"a":[1,2`, OutputTruncated: true})
	if err != nil {
		t.Fatal(err)
	}
	want := "stdout is not valid JSON: the JSON document ends early (line 1, column 10); stdout was truncated, which may have cut the document short"
	if got.Passed || got.Message != want {
		t.Errorf("Message = %q, want %q", got.Message, want)
	}
}

// TestEvaluateJSONFromYAMLValues feeds what a YAML decoder produces, without calling Compile
// first: Evaluate canonicalises a copy.
func TestEvaluateJSONFromYAMLValues(t *testing.T) {
	exp := map[string]any{
		"count": 3, "ratio": 0.5, "big": uint64(18446744073709551615), "neg": int64(-7),
		"tags": []any{"a", map[any]any{"k": float32(1.5)}}, "none": nil, "ok": true,
	}
	stdout := `{"count":3.0,"ratio":5e-1,"big":18446744073709551615,"neg":-7,"tags":["a",{"k":1.50,"z":0}],"none":null,"ok":true}`
	got, err := Evaluate(Assertion{Type: StdoutJSON, JSON: exp}, Observation{Stdout: stdout})
	if err != nil || !got.Passed {
		t.Fatalf("Evaluate = %+v, %v", got, err)
	}
	// The caller's document is not modified by Evaluate.
	if _, ok := exp["count"].(int); !ok {
		t.Errorf("Evaluate changed the caller's document: %T", exp["count"])
	}
}

func TestCompileCanonicalisesJSON(t *testing.T) {
	a := Assertion{Type: StdoutJSON, JSON: map[string]any{"n": 1, "f": 2.5, "m": map[any]any{"x": []any{int8(1)}}}}
	if err := Compile(&a); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"n": json.Number("1"), "f": json.Number("2.5"), "m": map[string]any{"x": []any{json.Number("1")}}}
	if got, _ := json.Marshal(a.JSON); string(got) != mustMarshal(t, want) {
		t.Errorf("canonical = %s, want %s", got, mustMarshal(t, want))
	}
	if _, ok := a.JSON.(map[string]any)["n"].(json.Number); !ok {
		t.Errorf("n is %T, want json.Number", a.JSON.(map[string]any)["n"])
	}
	// An already canonical document is kept as is.
	canon := doc(t, `{"a":[1,{"b":null}]}`)
	b := Assertion{Type: StdoutJSON, JSON: canon}
	if err := Compile(&b); err != nil {
		t.Fatal(err)
	}
	if b.JSON.(map[string]any)["a"].([]any)[1].(map[string]any)["b"] != nil {
		t.Errorf("canonical document changed: %v", b.JSON)
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNumberKey(t *testing.T) {
	equal := [][]string{
		{"1", "1.0", "1e0", "1E+0", "10e-1", "0.1e1", "100e-2", "1.000"},
		{"0", "-0", "0.0", "0e10", "-0.0e-5"},
		{"-1.5", "-15e-1", "-0.15E1"},
		{"12345678901234567890", "1234567890123456789e1", "1.234567890123456789e19"},
		{"1e999999999999999999999", "10e999999999999999999998", "0.1e1000000000000000000000"},
		{"1e-999999999999999999999", "0.1e-999999999999999999998"},
	}
	for _, group := range equal {
		for _, a := range group {
			for _, b := range group {
				if !numbersEqual(a, b) {
					t.Errorf("numbersEqual(%s, %s) = false, want true", a, b)
				}
			}
		}
	}
	different := [][2]string{
		{"1", "-1"}, {"1", "1.0000000000000000001"}, {"12345678901234567890", "12345678901234567891"},
		{"1e999999999999999999999", "1e999999999999999999998"}, {"0.1", "0.01"}, {"10", "1"}, {"1", "abc"},
	}
	for _, d := range different {
		if numbersEqual(d[0], d[1]) {
			t.Errorf("numbersEqual(%s, %s) = true, want false", d[0], d[1])
		}
	}
	for _, bad := range []string{"", "-", "01", "+1", "1.", ".5", "1e", "1e+", "0x10", "1_000", "NaN", "Infinity", " 1"} {
		if _, ok := numberKey(bad); ok {
			t.Errorf("numberKey(%q) ok, want not a JSON number", bad)
		}
	}
}

func TestDecodeJSON(t *testing.T) {
	tests := []struct {
		in     string
		offset int // -1: no error
		msg    string
	}{
		{in: `{"a":1}`, offset: -1},
		{in: "\uFEFF[1]\n", offset: -1},
		{in: "", offset: 0, msg: "no JSON document, only whitespace"},
		{in: "  ", offset: 2, msg: "no JSON document, only whitespace"},
		{in: `{"a":1}}`, offset: 7, msg: "more data after the JSON document"},
		{in: "\uFEFF{x}", offset: 4, msg: "invalid character 'x' looking for beginning of object key string"},
		{in: `[1,`, offset: 3, msg: "the JSON document ends early"},
		{in: strings.Repeat("[", 10001) + strings.Repeat("]", 10001), offset: 0, msg: "exceeded max depth"},
	}
	for _, tt := range tests {
		_, err := DecodeJSON([]byte(tt.in))
		if tt.offset < 0 {
			if err != nil {
				t.Errorf("DecodeJSON(%.20q): %v", tt.in, err)
			}
			continue
		}
		var je *JSONError
		if !errors.As(err, &je) {
			t.Errorf("DecodeJSON(%.20q) = %v, want a *JSONError", tt.in, err)
			continue
		}
		if !strings.Contains(je.Error(), tt.msg) || (tt.offset > 0 && je.Offset != tt.offset) {
			t.Errorf("DecodeJSON(%.20q) = %q at %d, want %q at %d", tt.in, je.Error(), je.Offset, tt.msg, tt.offset)
		}
	}
	v, _ := DecodeJSON([]byte(`{"n":12345678901234567890}`))
	if n := v.(map[string]any)["n"]; n != json.Number("12345678901234567890") {
		t.Errorf("number decoded as %T %v, want json.Number", n, n)
	}
}

func TestJSONPathRendering(t *testing.T) {
	var p pathStack
	if p.String() != "$" {
		t.Errorf("root = %q", p.String())
	}
	p.pushKey("items")
	p.pushIndex(2)
	p.pushKey("first name")
	p.pushKey(`q"<`)
	p.pushKey("_ok9")
	if got, want := p.String(), `$.items[2]["first name"]["q\"<"]._ok9`; got != want {
		t.Errorf("path = %s, want %s", got, want)
	}
}

func TestRenderJSONIsBounded(t *testing.T) {
	big := make([]any, 10000)
	for i := range big {
		big[i] = map[string]any{"name": strings.Repeat("x", 100)}
	}
	got := renderJSON(big, 60)
	if n := len([]rune(got)); n > 60 || !strings.HasSuffix(got, "…") || !strings.HasPrefix(got, `[{"name":"xxx`) {
		t.Errorf("renderJSON = %q (%d runes)", got, n)
	}
	if got := renderJSON(map[string]any{"s": "a\u202eb\x00"}, 60); got != `{"s":"a\u202eb\u0000"}` {
		t.Errorf("renderJSON = %q, want control characters escaped", got)
	}
}
