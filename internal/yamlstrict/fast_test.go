package yamlstrict

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// sameTree describes the first difference between two trees in every field a node has, or
// returns "".
func sameTree(got, want *yaml.Node, at string) string {
	if (got == nil) != (want == nil) {
		return fmt.Sprintf("%s: node %v, want %v", at, got, want)
	}
	if got == nil {
		return ""
	}
	type fields struct {
		kind                                 yaml.Kind
		style                                yaml.Style
		tag, value, anchor, head, line, foot string
		l, c                                 int
	}
	g := fields{got.Kind, got.Style, got.Tag, got.Value, got.Anchor, got.HeadComment, got.LineComment, got.FootComment, got.Line, got.Column}
	w := fields{want.Kind, want.Style, want.Tag, want.Value, want.Anchor, want.HeadComment, want.LineComment, want.FootComment, want.Line, want.Column}
	if g != w {
		return fmt.Sprintf("%s: node\n got %+v\nwant %+v", at, g, w)
	}
	if len(got.Content) != len(want.Content) || (got.Content == nil) != (want.Content == nil) {
		return fmt.Sprintf("%s: %d children (nil %v), want %d (nil %v)", at, len(got.Content), got.Content == nil, len(want.Content), want.Content == nil)
	}
	for i := range got.Content {
		if d := sameTree(got.Content[i], want.Content[i], fmt.Sprintf("%s/%d", at, i)); d != "" {
			return d
		}
	}
	return sameTree(got.Alias, want.Alias, at+"/alias")
}

// fastIsV3 reads text with the fast reader and, when it reads it, fails t unless yaml.v3 reads
// the same tree from it. It reports whether the fast reader read it.
func fastIsV3(t testing.TB, text string) bool {
	t.Helper()
	root, ok := (&fastParser{}).parse([]byte(text))
	if !ok {
		return false
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		t.Errorf("the fast reader read %q, which yaml.v3 refuses: %v", text, err)
		return true
	}
	if len(doc.Content) == 0 {
		t.Errorf("the fast reader read %q, in which yaml.v3 finds no document", text)
		return true
	}
	if d := sameTree(root, doc.Content[0], ""); d != "" {
		t.Errorf("tree of %q differs from yaml.v3's: %s", text, d)
	}
	return true
}

func TestFastParseIsYAMLv3(t *testing.T) {
	tests := []struct {
		text string
		fast bool // whether the fast reader reads it (else yaml.v3 does)
	}{
		{"a: 1\nb: [x]\n", true},
		{"cases:\n  - name: case_0001\n    description: synthetic case 1\n    input: \"Say READY for case 1 of skill-00001\"\n    runs: 3\n    confidence: 0.6\n    assertions:\n      output_contains: [\"READY\"]\n      output_not_contains: [\"error\"]\n      output_matches: [\"(?i)\\\\bready\\\\b\"]\n", true},
		{"a:\nb: 1", true},
		{"a:   \n  \nb: 1", true},
		{"a:", true},
		{"- \n- b", true},
		{"-\n  x: 1", true},
		{"a:\n- x\n-\nb:", true},
		{"k: [a, \"b\", c ]", true},
		{"k: []", true},
		{"k: [ ]\n", true},
		{"a:\n  - x\n  -", true},
		{"- a: 1\n  b: [2, '3']\n- c\n", true},
		{"-   a: 1\n    b: 2\n", true},
		{"  a: 1\n  b:\n    c: d\n", true},
		{"a:\n - x\n - y\nb: 1\n", true},
		{"- a:\n  - x\n  b: 1\n", true},
		{"\"a b\": 1\n'c''d' : e\n", true},
		{"a: \"x\\ty\\\"z\\\\\"\nb: 'it''s'\n", true},
		{"a: true\nb: ~\nc: null\nd: .5\ne: .inf\nf: 0\ng: 12\nh: 1.25\ni: yes\nj: Off\nk: .x\n", true},
		{"true: 1\n12: x\n", true},
		{"a: b c, d [e] {f}\n", true},
		{"a: x:y\nb: http://example.com/x\n", true},
		{"a:b: c\n", true},
		{"a: b\n\n\n", true},
		{"a: b   \nc: 'd'   \n", true},
		{"a: [b, c]   \n", true},
		// What the fast reader leaves to yaml.v3.
		{"", false},
		{"\n  \n", false},
		{"# comment\na: 1\n", false},
		{"a: 1 # comment\n", false},
		{"a: |\n  text\n", false},
		{"a: >\n  text\n", false},
		{"a: {b: c}\n", false},
		{"a: &x 1\nb: *x\n", false},
		{"a: !!str 1\n", false},
		{"a: b\n  c\n", false},
		{"a: \"b\n  c\"\n", false},
		{"---\na: 1\n", false},
		{"a: 1\n...\n", false},
		{"%YAML 1.2\n---\na: 1\n", false},
		{"a: 007\n", false},
		{"a: 0x1F\n", false},
		{"a: 1e3\n", false},
		{"a: 1_000\n", false},
		{"a: 2024-01-01\n", false},
		{"a: -1\n", false},
		{"a: +1\n", false},
		{"a: 1.0.0\n", false},
		{"<<: x\n", false},
		{"a: [b,]\n", false},
		{"a: [b, [c]]\n", false},
		{"a: [b: c]\n", false},
		{"a: [b\n", false},
		{"a: \"\\u00e9\"\n", false},
		{"a: \"\\x41\"\n", false},
		{"a:\tb\n", false},
		{"a: b\r\nc: d\r\n", false},
		{"a: café\n", false},
		{"- - a\n", false},
		{"a: - b\n", false},
		{"a: b: c\n", false},
		{"a: b:\n", false},
		{"a\n", false},
		{"a:\n  b: 1\n c: 2\n", false},
		{"a: 1\n- b\n", false},
		{"- a\nb: 1\n", false},
		{"? a\n: b\n", false},
		{"a: @b\n", false},
		{"a: `b\n", false},
		{strings.Repeat("k", 1001) + ": v\n", false},
	}
	for _, tt := range tests {
		if got := fastIsV3(t, tt.text); got != tt.fast {
			t.Errorf("fast reader read %q: %v, want %v", tt.text, got, tt.fast)
		}
	}
}

// TestFastParseCorpus reads the case files, frontmatter and settings of the repository's
// examples and test data both ways.
func TestFastParseCorpus(t *testing.T) {
	var files, fast int
	for _, dir := range []string{"../../examples", "../../suite/testdata", "../../skill/testdata", "../../config/testdata"} {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			text, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			switch {
			case strings.HasSuffix(path, ".md"):
				front, ok := frontmatter(string(text))
				if !ok {
					return nil
				}
				text = []byte(front)
			case !strings.HasSuffix(path, ".yaml") && !strings.HasSuffix(path, ".yml"):
				return nil
			}
			files++
			if fastIsV3(t, string(text)) {
				fast++
			}
			return nil
		})
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	t.Logf("%d of %d files read by the fast reader", fast, files)
	if fast == 0 {
		t.Fatal("the fast reader read none of the corpus")
	}
}

// frontmatter is the YAML between a Markdown file's opening and closing "---" lines.
func frontmatter(text string) (string, bool) {
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		return "", false
	}
	front, _, ok := strings.Cut(rest, "\n---")
	return front + "\n", ok
}

// TestFastParseRandom reads documents put together at random from YAML's pieces, valid and
// not, both ways.
func TestFastParseRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	fast := 0
	for i := range n {
		text := randomYAML(r)
		if i%2 == 1 {
			text = mutate(r, randomDocument(r))
		}
		if fastIsV3(t, text) {
			fast++
		}
		if t.Failed() {
			return
		}
	}
	t.Logf("%d of %d random documents read by the fast reader", fast, n)
	if fast < n/5 {
		t.Fatalf("the fast reader read only %d of %d random documents: the generator misses its subset", fast, n)
	}
}

var (
	randomIndents = []string{"", "", "", " ", "  ", "  ", "    ", "      "}
	randomKeys    = []string{"a", "b", "name", "input", "\"q k\"", "'s k'", "'it''s'", "\"e\\\"k\"", "1", "true", "a b", "x:y", "k ", "-k", "? k", "[k]", "~"}
	randomValues  = []string{"", " ", "x", "Say READY", "0", "7", "07", "1.5", "0.6", "1.0.0", "1e3", "-1", "+2", ".5", ".inf", ".x", "true", "False", "yes", "null", "~",
		"\"q\"", "\"a\\nb\\t\\\\ \\\"c\\\"\"", "\"\\u00e9\"", "'s'", "'it''s'", "''", "\"\"", "[a, \"b\", 'c']", "[]", "[ ]", "[a,]", "[a, [b]]", "[a: b]", "{a: b}",
		"a: b", "a:b", "a, b", "- x", "-", "|", ">", "&a x", "*a", "!!str x", "x # c", "<<", "@x", "`x", "\"open", "'open", "[open", "x  ", "2024-01-01", "0x10"}
)

// readableValues are values within the fast reader's subset.
var readableValues = []string{"x", "Say READY", "0", "7", "1.5", "true", "null", "~", ".5", "yes", "\"q\"", "\"a\\nb\\t\\\\ \\\"c\\\"\"", "'it''s'", "''", "[a, \"b\", 'c']", "[]", "a:b", "a, b", "x  ", "(?i)\\bready\\b"}

// value is mostly a readable value, sometimes any.
func value(r *rand.Rand) string {
	if r.IntN(12) == 0 {
		return randomValues[r.IntN(len(randomValues))]
	}
	return readableValues[r.IntN(len(readableValues))]
}

// randomYAML is a few lines of mapping entries and sequence entries at random indentations,
// with keys and values from the lists above.
func randomYAML(r *rand.Rand) string {
	var b strings.Builder
	for range 1 + r.IntN(8) {
		b.WriteString(randomIndents[r.IntN(len(randomIndents))])
		switch r.IntN(6) {
		case 0, 1:
			b.WriteString("- ")
			if r.IntN(2) == 0 {
				b.WriteString(randomKeys[r.IntN(len(randomKeys))] + ":")
				if v := randomValues[r.IntN(len(randomValues))]; v != "" {
					b.WriteString(" " + v)
				}
			} else {
				b.WriteString(randomValues[r.IntN(len(randomValues))])
			}
		case 2:
			b.WriteString(randomValues[r.IntN(len(randomValues))])
		default:
			b.WriteString(randomKeys[r.IntN(len(randomKeys))] + ":")
			if v := randomValues[r.IntN(len(randomValues))]; v != "" {
				b.WriteString(" " + v)
			}
		}
		if r.IntN(10) > 0 {
			b.WriteString("\n")
		}
		if r.IntN(8) == 0 {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// randomDocument is a well-formed block document of mappings and sequences nested at random
// indentations, with scalars from randomValues.
func randomDocument(r *rand.Rand) string {
	var b strings.Builder
	randomBlock(r, &b, r.IntN(3), 0)
	return b.String()
}

func randomBlock(r *rand.Rand, b *strings.Builder, indent, depth int) {
	pad := strings.Repeat(" ", indent)
	seq := r.IntN(2) == 0
	for i := range 1 + r.IntN(4) {
		b.WriteString(pad)
		if seq {
			b.WriteString("-")
		} else {
			b.WriteString(randomKeys[r.IntN(5+i%3)] + ":")
		}
		switch k := r.IntN(10); {
		case k < 3 && depth < 4:
			b.WriteString("\n")
			next := indent + 1 + r.IntN(3)
			if !seq && r.IntN(3) == 0 {
				next = indent // a sequence at its key's indentation
				b.WriteString(pad + "- " + value(r) + "\n")
				continue
			}
			randomBlock(r, b, next, depth+1)
		case k < 5 && seq && depth < 4:
			// A mapping begun on the entry's line.
			b.WriteString(" " + randomKeys[r.IntN(3)] + ": " + value(r) + "\n")
			b.WriteString(pad + "  " + randomKeys[3+r.IntN(2)] + ": " + value(r) + "\n")
		default:
			b.WriteString(" " + value(r) + "\n")
		}
	}
}

// mutate changes one byte of text one time in four: a space, a colon, a dash, a quote or a
// line break inserted, or a byte removed.
func mutate(r *rand.Rand, text string) string {
	if len(text) == 0 || r.IntN(4) > 0 {
		return text
	}
	i := r.IntN(len(text))
	if r.IntN(2) == 0 {
		return text[:i] + text[i+1:]
	}
	return text[:i] + string(" :-\"'\n["[r.IntN(7)]) + text[i:]
}

// FuzzFastParseIsYAMLv3 holds the fast reader to yaml.v3's trees on any text it reads.
func FuzzFastParseIsYAMLv3(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 64 {
		f.Add(randomYAML(r))
		f.Add(randomDocument(r))
	}
	f.Add("cases:\n  - name: c\n    input: \"x\"\n    assertions:\n      output_contains: [\"READY\"]\n")
	f.Fuzz(func(t *testing.T, text string) {
		fastIsV3(t, text)
	})
}

// TestReaderReusesMemory: a Reader's trees are Parse's, text after text, in memory it reuses
// within a bound.
func TestReaderReusesMemory(t *testing.T) {
	big := strings.Repeat("- name: x\n  input: \"y\"\n  n: [1, 2]\n", 20000)
	texts := []string{
		"cases:\n  - name: a\n    input: \"Say READY\"\n    assertions:\n      output_contains: [READY]\n",
		big,
		"a: [x, 'y']\nb:\n  - c: 1\n",
		"# a comment sends this one to yaml.v3\na: 1\n",
		"cases:\n  - name: b\n    input: \"Say READY again\"\n",
	}
	r := NewReader()
	for _, text := range texts {
		got, gotProblems := r.Parse([]byte(text), Options{})
		want, wantProblems := Parse([]byte(text), Options{})
		if len(gotProblems) > 0 || len(wantProblems) > 0 {
			t.Fatalf("problems %v, %v", gotProblems, wantProblems)
		}
		if d := sameTree(got, want, ""); d != "" {
			t.Fatalf("Reader's tree of %.40q differs from Parse's: %s", text, d)
		}
		if len(r.fast.slabs) > maxKeptChunks || len(r.fast.ptrSlabs) > maxKeptChunks {
			t.Fatalf("after %.40q the Reader keeps %d and %d slabs, more than %d", text, len(r.fast.slabs), len(r.fast.ptrSlabs), maxKeptChunks)
		}
	}
	if allocs := testing.AllocsPerRun(10, func() { r.Parse([]byte(texts[0]), Options{}) }); allocs > 1 {
		t.Errorf("reading a text again allocates %v times, want at most 1 (the checker of the tree)", allocs)
	}
}
