package assert

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/skillfleet/skillfleet/internal/text"
)

// pathStack is the JSONPath of the value being compared, kept as a stack so that the string is
// built only when a difference is reported.
type pathStack struct{ elems []pathElem }

type pathElem struct {
	key   string
	index int // -1 for a key
}

func (p *pathStack) pushKey(k string) { p.elems = append(p.elems, pathElem{key: k, index: -1}) }
func (p *pathStack) pushIndex(i int)  { p.elems = append(p.elems, pathElem{index: i}) }
func (p *pathStack) pop()             { p.elems = p.elems[:len(p.elems)-1] }

// String renders the path JSONPath-style: $.items[2].name, with bracket notation and a JSON
// string for keys that are not identifiers: $["a b"], $["1"], $[""].
func (p *pathStack) String() string {
	var b strings.Builder
	b.WriteByte('$')
	for _, e := range p.elems {
		switch {
		case e.index >= 0:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(e.index))
			b.WriteByte(']')
		case isIdentifier(e.key):
			b.WriteByte('.')
			b.WriteString(e.key)
		default:
			b.WriteByte('[')
			b.WriteString(jsonString(e.key))
			b.WriteByte(']')
		}
	}
	return b.String()
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || (i > 0 && isDigit(c)) {
			continue
		}
		return false
	}
	return true
}

// jsonString quotes s as a JSON string, without HTML escaping; control characters, U+2028 and
// U+2029 come out escaped.
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return strconv.Quote(s)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// kind names a decoded JSON value's type for messages.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number, float64:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "value"
}

// renderJSON shows v as compact JSON, object keys sorted, cut after about n displayed runes with
// "…", and escaped like an excerpt so that it is printable on one line.
func renderJSON(v any, n int) string {
	w := &boundedWriter{limit: 4*n + 16}
	writeJSON(w, v)
	return clip(w.String(), n)
}

// boundedWriter stops growing past its limit, so rendering a huge value costs only the part
// shown.
type boundedWriter struct {
	strings.Builder
	limit int
}

func (w *boundedWriter) full() bool { return w.Len() >= w.limit }

func (w *boundedWriter) write(s string) {
	if room := w.limit - w.Len(); room > 0 {
		if len(s) > room {
			s = s[:room] // a cut rune becomes \x.. in clip; it is past the shown part anyway
		}
		w.WriteString(s)
	}
}

func writeJSON(w *boundedWriter, v any) {
	if w.full() {
		return
	}
	switch x := v.(type) {
	case nil:
		w.write("null")
	case bool:
		w.write(strconv.FormatBool(x))
	case json.Number:
		w.write(string(x))
	case float64:
		w.write(strconv.FormatFloat(x, 'g', -1, 64))
	case string:
		// Quote only what can be shown.
		if len(x) > w.limit {
			x = x[:text.RuneStart(x, w.limit)]
		}
		w.write(jsonString(x))
	case []any:
		w.write("[")
		for i, e := range x {
			if w.full() {
				return
			}
			if i > 0 {
				w.write(",")
			}
			writeJSON(w, e)
		}
		w.write("]")
	case map[string]any:
		w.write("{")
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			if w.full() {
				return
			}
			if i > 0 {
				w.write(",")
			}
			w.write(jsonString(k))
			w.write(":")
			writeJSON(w, x[k])
		}
		w.write("}")
	default:
		w.write("?")
	}
}

// describe is a value for a message: its type and a short rendering.
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array " + renderJSON(v, 60)
	case map[string]any:
		return "an object " + renderJSON(v, 60)
	}
	return kind(v) + " " + renderJSON(v, 60)
}
