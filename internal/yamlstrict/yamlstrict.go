// Package yamlstrict is the one YAML reader of the project's untrusted inputs: SKILL.md
// frontmatter, case files and skillfleet.yaml. It parses into a yaml.Node tree under one policy
// (a size bound, a depth bound, no anchors or aliases, optionally no repeated keys) and numbers
// lines the way editors do, and it reports what it refuses as Problems. The callers turn a
// Problem into their own diagnostic (rule id and wording), so each file keeps its vocabulary
// while all of them share the same bounds.
//
// It is internal because it is a mechanism of the readers, not a concept a user of the module
// meets: nothing outside skill, suite and config should read YAML on their behalf.
package yamlstrict

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Kind says what a Problem is.
type Kind int

// The problems Parse reports.
const (
	// Syntax is a YAML syntax error; the tree is not built.
	Syntax Kind = iota + 1
	// TooLarge is a text beyond Options.MaxBytes; it is not parsed.
	TooLarge
	// Alias is the first anchor or alias in the tree. Walking a yaml.Node tree expands nothing,
	// but every consumer would have to guard against aliases (the source of billion-laughs
	// expansion), so they are refused outright.
	Alias
	// TooDeep is the first node nested deeper than Options.MaxDepth.
	TooDeep
	// DuplicateKey is a mapping key that repeats an earlier key of the same mapping. It is the
	// only problem that does not stop the reading: the first value is the one that counts.
	DuplicateKey
)

// Options are the bounds a reader applies. Zero values disable a bound.
type Options struct {
	// MaxBytes bounds the text; it also bounds the node count (a node takes at least two bytes
	// of source) and so the memory the parser allocates.
	MaxBytes int
	// MaxDepth bounds nesting: the document's value is at depth 1.
	MaxDepth int
	// DuplicateKeys reports repeated mapping keys as DuplicateKey problems. Readers that report
	// them in their own words while walking the tree leave it off.
	DuplicateKeys bool
}

// Problem is one thing Parse refused or found. Lines are 1-based and count "\n" line breaks
// as editors do.
type Problem struct {
	Kind Kind
	// Line is where the problem is; 0 for TooLarge.
	Line int
	// Message is the parser's message for Syntax (without the "yaml: " and "line N: " prefixes);
	// "anchor &a" or "alias *a" for Alias; the key for DuplicateKey; empty otherwise.
	Message string
	// Located is the parser's message as it words it, "line N: message" with N corrected to
	// Line, or just the message when the parser gave no line. Syntax only.
	Located string
	// FirstLine is the line of the first occurrence of a DuplicateKey.
	FirstLine int
}

// Fatal reports whether the problem stops the reading (every kind but DuplicateKey).
func (p Problem) Fatal() bool { return p.Kind != DuplicateKey }

// Parse parses text into a node tree under o. It returns the document's value, or nil when
// the text holds no document (only comments or blank lines) or a fatal problem was found.
// Problems come in the order they appear in the tree; the last one is the fatal one, if any.
// The Line of every returned node is an editor line. The common shapes of case files and
// frontmatter are read by the fast reader (fast.go), which builds the tree yaml.v3 would;
// yaml.v3 reads the rest, and so words every syntax error.
func Parse(text []byte, o Options) (*yaml.Node, []Problem) {
	return parse(text, o, &fastParser{})
}

// parse is Parse with the fast reader's memory f.
func parse(text []byte, o Options, f *fastParser) (*yaml.Node, []Problem) {
	if o.MaxBytes > 0 && len(text) > o.MaxBytes {
		return nil, []Problem{{Kind: TooLarge}}
	}
	root, ok := f.parse(text)
	if !ok {
		table := lineTable(text)
		var doc yaml.Node
		if err := yaml.Unmarshal(text, &doc); err != nil {
			return nil, []Problem{syntaxProblem(err, text, table)}
		}
		if doc.Kind == 0 || len(doc.Content) == 0 {
			return nil, nil
		}
		root = doc.Content[0]
		if table != nil {
			renumber(root, table)
		}
	}
	c := checker{o: o}
	if !c.check(root, 1) {
		return nil, c.problems
	}
	return root, c.problems
}

// Decode decodes text into v refusing fields v does not have (and, as yaml.v3 does, repeated
// keys). An empty document decodes to nothing. line is the first line the error names, or 0.
// Callers run Parse first, so that decoding never meets an alias.
func Decode(text []byte, v any) (line int, err error) {
	dec := yaml.NewDecoder(bytes.NewReader(text))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		if m := anyLineRE.FindStringSubmatch(err.Error()); m != nil {
			line, _ = strconv.Atoi(m[1])
		}
		return line, err
	}
	return 0, nil
}

var (
	leadingLineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)
	anyLineRE     = regexp.MustCompile(`line (\d+)`)
)

// parserProblems are the problems yaml.v3's parser (as opposed to its scanner) reports. For
// these the library prints a 0-based line, the start of the construct being parsed.
var parserProblems = []string{
	"did not find expected <stream-start>",
	"did not find expected <document start>",
	"found undefined tag handle",
	"did not find expected node content",
	"did not find expected '-' indicator",
	"did not find expected key",
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found duplicate %TAG directive",
}

// syntaxProblem turns a yaml.v3 syntax error into a Problem on the editor line. The library
// omits the line when it is the first one, numbers parser errors from 0 and scanner errors
// from 1, and reports an error found at the end of the stream on the line after a final line
// break, a line editors do not show.
func syntaxProblem(err error, text []byte, table []int) Problem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line, given := 0, false
	if m := leadingLineRE.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = strings.TrimPrefix(err.Error(), m[0])
		given = true
	}
	for _, p := range parserProblems {
		if msg == p {
			line++
			break
		}
	}
	line = min(max(line, 1), max(lastLine(text, table), 1))
	line = editorLine(line, table)
	located := msg
	if given {
		located = "line " + strconv.Itoa(line) + ": " + msg
	}
	return Problem{Kind: Syntax, Line: line, Message: msg, Located: located}
}

// lastLine is the last YAML line an error can be on: the number of YAML line breaks, plus one
// when the text does not end with a break.
func lastLine(text []byte, table []int) int {
	breaks := bytes.Count(text, []byte("\n"))
	if table != nil {
		breaks = len(table) - 2
	}
	if len(text) > 0 && !endsWithBreak(text) {
		breaks++
	}
	return breaks
}

func endsWithBreak(text []byte) bool {
	return bytes.HasSuffix(text, []byte("\n")) || bytes.HasSuffix(text, []byte("\r")) ||
		bytes.HasSuffix(text, []byte("\u0085")) || bytes.HasSuffix(text, []byte("\u2028")) ||
		bytes.HasSuffix(text, []byte("\u2029"))
}

// editorLine converts a yaml.v3 line to an editor line.
func editorLine(yamlLine int, table []int) int {
	if table == nil || yamlLine < 1 {
		return yamlLine
	}
	return table[min(yamlLine, len(table)-1)]
}

// lineTable maps yaml.v3's line numbers to lines counted by "\n", as editors and diagnostics
// count them. yaml.v3 also breaks lines at a lone CR and at NEL, LS and PS; the table is nil
// when the text has none of those and the numbers agree.
func lineTable(text []byte) []int {
	extra := false
	for i, b := range text {
		if (b == '\r' && (i+1 == len(text) || text[i+1] != '\n')) || b == 0xC2 || b == 0xE2 {
			extra = true
			break
		}
	}
	if !extra {
		return nil
	}
	table := []int{0, 1} // table[yamlLine] = line; index 0 unused
	line := 1
	for i := 0; i < len(text); {
		width := 0 // of a YAML line break at i
		switch {
		case text[i] == '\r' && i+1 < len(text) && text[i+1] == '\n', text[i] == '\n':
			line++
			width = 1
			if text[i] == '\r' {
				width = 2
			}
		case text[i] == '\r':
			width = 1
		case bytes.HasPrefix(text[i:], []byte("\u0085")):
			width = 2
		case bytes.HasPrefix(text[i:], []byte("\u2028")), bytes.HasPrefix(text[i:], []byte("\u2029")):
			width = 3
		}
		if width == 0 {
			i++
			continue
		}
		i += width
		table = append(table, line)
	}
	return table
}

// renumber rewrites the lines of the tree under n to editor lines. yaml.v3 bounds nesting, and
// so the recursion; an alias node has no Content, so nothing is visited twice.
func renumber(n *yaml.Node, table []int) {
	n.Line = editorLine(n.Line, table)
	for _, c := range n.Content {
		renumber(c, table)
	}
}

type checker struct {
	o        Options
	problems []Problem
}

// check walks the tree, refusing the first anchor or alias and the first node beyond the depth
// bound, and noting repeated keys. It returns false when reading must stop.
func (c *checker) check(n *yaml.Node, depth int) bool {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		what := "anchor &" + n.Anchor
		if n.Kind == yaml.AliasNode {
			what = "alias *" + n.Value
		}
		c.problems = append(c.problems, Problem{Kind: Alias, Line: n.Line, Message: what})
		return false
	}
	if c.o.MaxDepth > 0 && depth > c.o.MaxDepth {
		c.problems = append(c.problems, Problem{Kind: TooDeep, Line: n.Line})
		return false
	}
	if c.o.DuplicateKeys && n.Kind == yaml.MappingNode {
		c.duplicateKeys(n)
	}
	for _, child := range n.Content {
		if !c.check(child, depth+1) {
			return false
		}
	}
	return true
}

// duplicateKeys notes keys that repeat an earlier key of mapping m. Most mappings are small,
// so a quadratic scan beats a map until they are not.
func (c *checker) duplicateKeys(m *yaml.Node) {
	var seen map[string]int
	if len(m.Content) > 32 {
		seen = make(map[string]int, len(m.Content)/2)
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if k.Kind != yaml.ScalarNode {
			continue // the reader reports a non-scalar key where it decodes the mapping
		}
		first := 0
		if seen != nil {
			first = seen[k.Value]
		} else {
			for j := 0; j < i; j += 2 {
				if p := m.Content[j]; p.Kind == yaml.ScalarNode && p.Value == k.Value {
					first = p.Line
					break
				}
			}
		}
		if first > 0 {
			c.problems = append(c.problems, Problem{Kind: DuplicateKey, Line: k.Line, Message: k.Value, FirstLine: first})
			continue
		}
		if seen != nil {
			seen[k.Value] = k.Line
		}
	}
}
