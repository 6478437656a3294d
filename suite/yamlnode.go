package suite

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/skillfleet/skillfleet/assert"
	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/internal/textdist"
	"github.com/skillfleet/skillfleet/internal/yamlstrict"
)

// maxDepth bounds nesting below a file's top-level value, so a deeply nested document is
// rejected instead of recursed into.
const maxDepth = 64

// Caps on a stdout-json document: its node count (mappings, lists and scalars) and the size of
// its canonical JSON. A real expected document is a few lines; these leave ample room and keep
// what every job of the case carries, and every comparison walks, small.
const (
	maxJSONNodes = 10000
	maxJSONBytes = 64 << 10
)

// Rule ids of the case-file reader.
const (
	// ruleAlias refuses YAML anchors and aliases in case files, as the frontmatter does
	// (skill.RuleFrontmatterAlias): an alias is the only way a small file becomes a large value.
	ruleAlias = "cases.alias"
	// ruleTooLarge refuses an assertion beyond a cap: a stdout-json document beyond
	// maxJSONNodes or maxJSONBytes, or a pattern or substring beyond assert's caps.
	ruleTooLarge = "assertion.tooLarge"
)

// reader walks yaml.Node trees of one file with strict, typed accessors, collecting diagnostics
// that name the file, the line and the rule.
type reader struct {
	file  string
	diags diag.Diagnostics
	// check validates assertions, remembering patterns across the files of one loader; nil
	// until the first assertion when the reader was made without one.
	check *assert.Checker
	// assertions is the buffer a prompt case's assertions are read into.
	assertions []Assertion
	// pairs is the stack mapping carves entries from; a reader of many mappings (a cases
	// file's prompt cases) pops what it is done with.
	pairs []pair
	// trees, when set, parses the reader's YAML into memory it reuses: only for a reader that
	// is done with one tree before it parses another (a graders' list holds nodes of its
	// case.yaml while it reads their frontmatter). nil parses afresh.
	trees *yamlstrict.Reader
	// nodes counts the nodes value has converted for the current stdout-json document.
	nodes int
}

func (r *reader) errorf(line int, rule, format string, args ...any) {
	r.diags = append(r.diags, diag.Diagnostic{
		Rule: rule, Severity: diag.SeverityError, Message: fmt.Sprintf(format, args...),
		File: r.file, Line: line,
	})
}

// deref guards every accessor against an alias node. parseYAML refuses files with anchors or
// aliases before any accessor runs, so this only reports (nil) and never follows one: following
// aliases is what turned a 215 KB file into gigabytes.
func (r *reader) deref(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.AliasNode {
		r.errorf(n.Line, ruleAlias, "YAML alias *%s: anchors and aliases are not allowed in case files; write the value out", n.Value)
		return nil
	}
	return n
}

// pair is one key: value entry of a mapping, with the key's line.
type pair struct {
	key  string
	line int
	val  *yaml.Node
}

// mapping returns the entries of a mapping node, reporting duplicate keys and keys outside
// allowed (nil allows any). what names the mapping in messages ("case", "assertions"). The
// entries are carved from the reader's stack of them (r.pairs), in a slice capped to their
// number: mappings are read nested, so a nested one's entries go above its parent's, and a
// new backing array leaves the parent's where they were.
func (r *reader) mapping(n *yaml.Node, what, rulePrefix string, allowed map[string]bool) ([]pair, bool) {
	n = r.deref(n)
	if n == nil {
		return nil, false
	}
	if n.Kind != yaml.MappingNode {
		r.errorf(n.Line, rulePrefix+".type", "%s must be a mapping, got %s", what, kindName(n))
		return nil, false
	}
	// A key's first occurrence is the first earlier string key of the same value: found by a
	// scan in the few keys of most mappings, in a map past a few dozen.
	var seen map[string]int
	if len(n.Content) > 64 {
		seen = make(map[string]int, len(n.Content)/2)
	}
	base := len(r.pairs)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := r.deref(n.Content[i])
		if k == nil {
			r.pairs = r.pairs[:base]
			return nil, false
		}
		if k.Kind != yaml.ScalarNode {
			r.errorf(k.Line, rulePrefix+".type", "%s keys must be strings", what)
			continue
		}
		first, dup := 0, false
		if seen != nil {
			first, dup = seen[k.Value]
		} else {
			for j := 0; j < i && !dup; j += 2 {
				if p := n.Content[j]; p.Kind == yaml.ScalarNode && p.Value == k.Value {
					first, dup = p.Line, true
				}
			}
		}
		if dup {
			r.errorf(k.Line, rulePrefix+".duplicateKey", "%s has key %q twice (first on line %d)", what, k.Value, first)
			continue
		}
		if seen != nil {
			seen[k.Value] = k.Line
		}
		if allowed != nil && !allowed[k.Value] {
			r.errorf(k.Line, rulePrefix+".unknownKey", "%s has unknown key %q%s", what, k.Value, suggest(k.Value, allowed))
			continue
		}
		r.pairs = append(r.pairs, pair{key: k.Value, line: k.Line, val: n.Content[i+1]})
	}
	return r.pairs[base:len(r.pairs):len(r.pairs)], true
}

// str reads a string scalar. YAML `null` is reported as a type error; numbers and booleans are
// refused too, because `input: 42` is a mistake more often than a prompt.
func (r *reader) str(n *yaml.Node, what, rule string) (string, bool) {
	n = r.deref(n)
	if n == nil {
		return "", false
	}
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!str" && n.Tag != "") {
		r.errorf(n.Line, rule, "%s must be a string, got %s", what, kindName(n))
		return "", false
	}
	return n.Value, true
}

// strList reads a list of strings; a single string is taken as a one-item list, since
// `output_contains: DEV` means exactly one thing.
func (r *reader) strList(n *yaml.Node, what, rule string) ([]string, []int, bool) {
	var vals []string
	var lines []int
	if n != nil && n.Kind == yaml.SequenceNode {
		vals, lines = make([]string, 0, len(n.Content)), make([]int, 0, len(n.Content))
	}
	ok := r.eachStr(n, what, rule, func(s string, line int) {
		vals = append(vals, s)
		lines = append(lines, line)
	})
	return vals, lines, ok
}

// eachStr is strList calling f with each string and its line instead of listing them, for a
// reader that uses each once (a case's substrings). A single scalar is passed to f even when
// it is not a string (as ""), as strList lists it.
func (r *reader) eachStr(n *yaml.Node, what, rule string, f func(s string, line int)) bool {
	n = r.deref(n)
	if n == nil {
		return false
	}
	if n.Kind == yaml.ScalarNode {
		s, ok := r.str(n, what, rule)
		f(s, n.Line)
		return ok
	}
	if n.Kind != yaml.SequenceNode {
		r.errorf(n.Line, rule, "%s must be a list of strings, got %s", what, kindName(n))
		return false
	}
	ok := true
	for _, item := range n.Content {
		s, good := r.str(item, what+" item", rule)
		if !good {
			ok = false
			continue
		}
		f(s, item.Line)
	}
	return ok
}

func (r *reader) integer(n *yaml.Node, what, rule string) (int, bool) {
	n = r.deref(n)
	if n == nil {
		return 0, false
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!int" {
		v, err := strconv.ParseInt(n.Value, 0, 32)
		if err == nil {
			return int(v), true
		}
	}
	r.errorf(n.Line, rule, "%s must be an integer, got %s", what, kindName(n))
	return 0, false
}

func (r *reader) number(n *yaml.Node, what, rule string) (float64, bool) {
	n = r.deref(n)
	if n == nil {
		return 0, false
	}
	if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") {
		v, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err == nil {
			return v, true
		}
	}
	r.errorf(n.Line, rule, "%s must be a number, got %s", what, kindName(n))
	return 0, false
}

// value converts a node into plain Go data (map[string]any, []any, string, float64, int64, bool,
// nil) within the depth and node budgets, for stdout-json. The caller resets r.nodes.
func (r *reader) value(n *yaml.Node, depth int, rule string) (any, bool) {
	n = r.deref(n)
	if n == nil {
		return nil, false
	}
	r.nodes++
	if r.nodes > maxJSONNodes {
		r.errorf(n.Line, ruleTooLarge, "stdout-json has more than %d values; compare a smaller document", maxJSONNodes)
		return nil, false
	}
	if depth > maxDepth {
		r.errorf(n.Line, rule, "nested more than %d levels deep", maxDepth)
		return nil, false
	}
	switch n.Kind {
	case yaml.MappingNode:
		pairs, ok := r.mapping(n, "JSON object", rule, nil)
		if !ok {
			return nil, false
		}
		m := make(map[string]any, len(pairs))
		for _, p := range pairs {
			v, ok := r.value(p.val, depth+1, rule)
			if !ok {
				return nil, false
			}
			m[p.key] = v
		}
		return m, true
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, item := range n.Content {
			v, ok := r.value(item, depth+1, rule)
			if !ok {
				return nil, false
			}
			s = append(s, v)
		}
		return s, true
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			r.errorf(n.Line, rule, "bad value: %v", err)
			return nil, false
		}
		return v, true
	}
	r.errorf(n.Line, rule, "unsupported YAML node")
	return nil, false
}

// kindName describes a node for a type error.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "null"
		case "!!int", "!!float":
			return "a number (" + n.Value + ")"
		case "!!bool":
			return "a boolean (" + n.Value + ")"
		case "!!str":
			return "a string"
		}
		return "a scalar (" + n.Tag + ")"
	}
	return "an unsupported node"
}

// suggest proposes the closest allowed key for a typo such as output_contain.
func suggest(key string, allowed map[string]bool) string {
	best, bestD := "", 4
	for k := range allowed {
		if d := textdist.Levenshtein(key, k); d < bestD || (d == bestD && k < best) {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}
