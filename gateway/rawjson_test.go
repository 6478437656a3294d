package gateway

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/skillfleet/skillfleet/internal/jsonscan"
)

// decodeTargets are the types the gateway decodes parts of a checked body into, each as a
// fresh pointer.
var decodeTargets = []func() any{
	func() any { return new(any) },
	func() any { return new(string) },
	func() any { return new(bool) },
	func() any { return new(int64) },
	func() any { return new(float64) },
	func() any { return new(json.RawMessage) },
	func() any { return new([]json.RawMessage) },
	func() any { return new(map[string]json.RawMessage) },
	func() any { return new([]string) },
	func() any { return new([]map[string]json.RawMessage) },
	func() any { return new(anthropicBlock) },
	func() any { return new(anthropicMessage) },
	func() any { return new(chatMessage) },
	func() any { return new(responsesItem) },
	func() any { return new(geminiContent) },
	func() any { return new(geminiPart) },
	func() any { return new(struct{ Name string }) },
	func() any { return new(json.Number) },
	func() any {
		return new(struct {
			A string `json:"x"`
			B string `json:"X"`
		})
	},
	func() any { return new([]byte) },
	func() any { return new(uint8) },
}

// checkDecodes says decodeChecked reads raw into every target as json.Unmarshal does: the
// same value, an error alike.
func checkDecodes(t *testing.T, raw []byte) {
	t.Helper()
	for _, target := range decodeTargets {
		want, got := target(), target()
		werr, gerr := json.Unmarshal(raw, want), decodeChecked(raw, got)
		if (werr == nil) != (gerr == nil) || !reflect.DeepEqual(want, got) {
			t.Errorf("%.80s into %T: got %v (%v), json.Unmarshal %v (%v)", raw, got, reflect.ValueOf(got).Elem(), gerr,
				reflect.ValueOf(want).Elem(), werr)
		}
	}
}

// eachValue calls f with raw and every value nested in it.
func eachValue(raw []byte, f func([]byte)) {
	f(raw)
	eachMember(raw, func(_ string, v []byte) bool { eachValue(v, f); return true })
	eachElement(raw, func(_ int, v []byte) bool { eachValue(v, f); return true })
}

// The checked reading of a body decodes every value of the CLIs' real requests, and the
// cases where encoding/json has rules of its own, as json.Unmarshal does.
func TestDecodeCheckedAsUnmarshal(t *testing.T) {
	files, err := filepath.Glob("testdata/cli/*.json")
	if err != nil || len(files) == 0 {
		t.Fatal(files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var g cliGolden
		if err := json.Unmarshal(b, &g); err != nil {
			t.Fatal(err)
		}
		eachValue(g.Body, func(v []byte) { checkDecodes(t, v) })
	}
	for _, in := range []string{
		`"plain"`, `"tab\tnew\nline \"q\" back\\slash \/ \b\f\r"`, `"\u00e9\ud83d\ude00"`, `"lone \ud800 surrogate"`,
		"\"invalid \xff utf-8\"", `"é 😀 raw"`, `""`, `null`, `true`, `false`, `0`, `-12`, `1.5`, `1e3`, `1e400`,
		`9223372036854775808`, `[]`, `{}`, `[null,1,"a",{"b":[]}]`, ` { "a" : 1 , "b" : [ 2 , 3 ] } `,
		`{"type":"text","text":"t","TEXT":null}`, `{"Type":"tool_use","ID":"x","input":{"a":1}}`, `{"type":5,"text":"kept"}`,
		`{"role":"user","content":null}`, `{"role":["no"],"content":"c"}`, `{"functionCall":{"id":"1","args":null}}`,
		`{"functionResponse":null,"text":"t","thought":true}`, `{"name":"k\u0065y","na\u006de":1}`, `{"NAME":"upper"}`,
		`{"ſtatus":1,"ﬀ":2}`, `[1,2,"3"]`, `{"X":"b"}`, `{"x":"a"}`, `"123"`, `{"a":{"b":{"c":[{"d":"e"}]}}}`,
	} {
		if err := jsonscan.Check([]byte(in), jsonscan.Options{}); err != nil {
			// Only what the gateway's check accepts is read this way.
			continue
		}
		eachValue([]byte(in), func(v []byte) { checkDecodes(t, v) })
	}
}

// A number too large for a float64 does not hide, from the fetch check, content beside it:
// json.Unmarshal refuses the whole value for it.
func TestFetchCheckReadsPastHugeNumbers(t *testing.T) {
	raw := json.RawMessage(`[{"role":"user","content":[{"type":"text","text":"x","n":1e400},{"type":"image","source":{"type":"url","url":"http://x"}}]}]`)
	if err := fetchedContent(raw, "messages", anthropicFetched); err == nil {
		t.Error("an image by URL beside 1e400 was not refused")
	}
}

// So for the Responses API's untyped items: an item without a type or a role beside such a
// number is still refused.
func TestUntypedReferencesPastHugeNumbers(t *testing.T) {
	for in, refused := range map[string]bool{
		`[{"role":"user","content":"x","n":1e400},{"id":"msg_1"}]`: true,
		`[{"ROLE":"user","content":"x"},{"Type":"message"}]`:       false,
		`[{"type":5,"role":"user"},{"type":"","role":null}]`:       true,
		`"a string input"`: false,
	} {
		if err := untypedReferences(json.RawMessage(in)); (err != nil) != refused {
			t.Errorf("%s: %v, want refused %v", in, err, refused)
		}
	}
}

// Gemini's one-pass canonical spelling writes what the member-by-member one does, for the
// CLI's bodies and a body of every spelling.
func TestGeminiCanonicalFastAsExact(t *testing.T) {
	bodies := []string{
		`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generation_config":{"max_output_tokens":5,"thinking_config":{"thinking_budget":-1}},"system_instruction":{"parts":[{"text":"S"}]},"tools":[{"function_declarations":[{"name":"f","parameters":{"snake_key":{"a_b":1}}}]}]}`,
		`{"a":[[[[[[[[[[[[[[[[[[{"b_c":1}]]]]]]]]]]]]]]]]]]}`,
	}
	for _, f := range []string{"gemini-cli-0.56.stream.json", "gemini-cli-0.56.count-tokens.json"} {
		bodies = append(bodies, string(loadGolden(t, f).Body))
	}
	for _, body := range bodies {
		fast, ok := appendGeminiCanonicalFast(nil, []byte(body), 0)
		exact, err := appendGeminiCanonical(nil, []byte(body), "", 0)
		if !ok || err != nil || string(fast) != string(exact) {
			t.Errorf("%.60s: one pass %v %s\nmember by member %v %s", body, ok, fast, err, exact)
		}
	}
	for _, body := range []string{`{"contents":[{"parts":[{"file_data":{}}]}]}`, `{"generationConfig":{},"generation_config":{}}`, `{"a":{"FileData":1}}`} {
		if _, ok := appendGeminiCanonicalFast(nil, []byte(body), 0); ok {
			t.Errorf("%s: accepted by the one pass", body)
		}
		if _, err := appendGeminiCanonical(nil, []byte(body), "", 0); err == nil {
			t.Errorf("%s: accepted member by member", body)
		}
	}
}
