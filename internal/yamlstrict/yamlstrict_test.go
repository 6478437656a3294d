package yamlstrict

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) + "\n" }
	tests := []struct {
		name     string
		text     string
		opts     Options
		problems []Problem
		root     bool
	}{
		{name: "mapping", text: "a: 1\nb: [x]\n", root: true},
		{name: "empty", text: ""},
		{name: "only comments", text: "# nothing\n\n"},
		{name: "too large", text: "a: 1\n", opts: Options{MaxBytes: 4}, problems: []Problem{{Kind: TooLarge}}},
		{name: "at the size bound", text: "a: 1\n", opts: Options{MaxBytes: 5}, root: true},
		{name: "anchor", text: "a: 1\nb: &x 2\n", problems: []Problem{{Kind: Alias, Line: 2, Message: "anchor &x"}}},
		{name: "unknown alias", text: "a: [*x]\n", problems: []Problem{{Kind: Syntax, Line: 1, Message: "unknown anchor 'x' referenced", Located: "unknown anchor 'x' referenced"}}},
		{name: "merge key", text: "b: &b {c: 1}\nd: {<<: *b}\n", problems: []Problem{{Kind: Alias, Line: 1, Message: "anchor &b"}}},
		{name: "depth at the bound", text: deep(3), opts: Options{MaxDepth: 3}, root: true},
		{name: "depth beyond the bound", text: deep(4), opts: Options{MaxDepth: 3}, problems: []Problem{{Kind: TooDeep, Line: 1}}},
		{name: "duplicates reported", text: "a: 1\nb: 2\na: 3\n", opts: Options{DuplicateKeys: true}, root: true,
			problems: []Problem{{Kind: DuplicateKey, Line: 3, Message: "a", FirstLine: 1}}},
		{name: "duplicates ignored", text: "a: 1\na: 3\n", root: true},
		{name: "duplicates then an anchor", text: "a: 1\na: 2\nb: &c 3\n", opts: Options{DuplicateKeys: true},
			problems: []Problem{{Kind: DuplicateKey, Line: 2, Message: "a", FirstLine: 1}, {Kind: Alias, Line: 3, Message: "anchor &c"}}},
		{name: "scanner error at the end of the stream", text: "a: \"x\nb: 1\n", problems: []Problem{{Kind: Syntax, Line: 2, Message: "found unexpected end of stream", Located: "line 2: found unexpected end of stream"}}},
		{name: "parser error numbered from 0", text: "a:\n  b: 1\n c: 2\n", problems: []Problem{{Kind: Syntax, Line: 3, Message: "did not find expected key", Located: "line 3: did not find expected key"}}},
		{name: "first line has no number", text: ": :\n", problems: []Problem{{Kind: Syntax, Line: 1, Message: "did not find expected key", Located: "did not find expected key"}}},
		{name: "end of stream after the last break", text: "a: [1,\n", problems: []Problem{{Kind: Syntax, Line: 1, Message: "did not find expected node content", Located: "line 1: did not find expected node content"}}},
		{name: "lone CR is no editor line", text: "a: 1\rb: &x 2\n", problems: []Problem{{Kind: Alias, Line: 1, Message: "anchor &x"}}},
		{name: "CRLF", text: "a: 1\r\nb: &x 2\r\n", problems: []Problem{{Kind: Alias, Line: 2, Message: "anchor &x"}}},
		{name: "LS is no editor line", text: "a: 1\u2028\nb: 2\nc: &x 3\n", problems: []Problem{{Kind: Alias, Line: 3, Message: "anchor &x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, problems := Parse([]byte(tt.text), tt.opts)
			if !reflect.DeepEqual(problems, tt.problems) {
				t.Errorf("problems\n got %+v\nwant %+v", problems, tt.problems)
			}
			if (root != nil) != tt.root {
				t.Errorf("root %v, want one: %v", root, tt.root)
			}
		})
	}
}

// TestParseRenumbersNodes checks that the tree's lines are editor lines, so readers can quote
// a node's Line as is.
func TestParseRenumbersNodes(t *testing.T) {
	root, problems := Parse([]byte("a: 1\rb: 2\nc: 3\n"), Options{})
	if len(problems) > 0 || root == nil {
		t.Fatalf("Parse: %v", problems)
	}
	var lines []int
	for i := 0; i < len(root.Content); i += 2 {
		lines = append(lines, root.Content[i].Line)
	}
	if want := []int{1, 1, 2}; !reflect.DeepEqual(lines, want) {
		t.Errorf("key lines %v, want %v", lines, want)
	}
}

func TestDecode(t *testing.T) {
	type settings struct {
		A int `yaml:"a"`
	}
	tests := []struct {
		name, text string
		line       int
		err        string
	}{
		{"known field", "a: 1\n", 0, ""},
		{"empty", "", 0, ""},
		{"unknown field", "a: 1\nb: 2\n", 2, "field b not found"},
		{"repeated key", "a: 1\na: 2\n", 2, `mapping key "a" already defined at line 1`},
		{"wrong type", "a: x\n", 1, "cannot unmarshal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s settings
			line, err := Decode([]byte(tt.text), &s)
			if line != tt.line || (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("Decode = %d, %v; want %d, %q", line, err, tt.line, tt.err)
			}
			if err != nil && errors.Unwrap(err) != nil {
				t.Errorf("unexpected wrapped error %v", err)
			}
		})
	}
}
