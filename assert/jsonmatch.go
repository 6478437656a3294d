package assert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// JSONError is why a text is not one JSON document, with the byte offset where that shows.
type JSONError struct {
	Offset int
	Err    error
}

// Error is the decoder's message.
func (e *JSONError) Error() string { return e.Err.Error() }

// Unwrap gives the decoder's error (a *json.SyntaxError, for instance).
func (e *JSONError) Unwrap() error { return e.Err }

// DecodeJSON decodes exactly one JSON document the way stdout_json compares it: numbers as
// json.Number (exact, any size), surrounding whitespace and a leading UTF-8 byte order mark
// allowed, anything else after the document an error. Errors are *JSONError. It is what a
// worker uses to turn the wire form of an expected document (proto bytes) into Assertion.JSON.
func DecodeJSON(data []byte) (any, error) {
	bom := 0
	if bytes.HasPrefix(data, []byte("\uFEFF")) {
		bom = 3
	}
	dec := json.NewDecoder(bytes.NewReader(data[bom:]))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		var syn *json.SyntaxError
		switch {
		case errors.Is(err, io.EOF):
			return nil, &JSONError{Offset: len(data), Err: errors.New("no JSON document, only whitespace")}
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, &JSONError{Offset: len(data), Err: errors.New("the JSON document ends early")}
		case errors.As(err, &syn):
			return nil, &JSONError{Offset: bom + max(0, int(syn.Offset)-1), Err: err}
		default:
			return nil, &JSONError{Offset: bom, Err: err}
		}
	}
	end := bom + int(dec.InputOffset())
	if rest := bytes.TrimLeft(data[end:], " \t\r\n"); len(rest) > 0 {
		off := len(data) - len(rest)
		return nil, &JSONError{Offset: off, Err: errors.New("more data after the JSON document")}
	}
	return v, nil
}

// evalJSON decides stdout_json: stdout must be one JSON document that the expected document
// matches partially (see the package documentation).
func evalJSON(a Assertion, obs Observation) Result {
	return matchJSONText(a, "stdout", obs.Stdout, obs.OutputTruncated)
}

// matchJSONText decides whether text, named subject in messages ("stdout", "file a.json"), is
// one JSON document that a.JSON matches partially. truncated says text is only the first part
// of what was produced.
func matchJSONText(a Assertion, subject, text string, truncated bool) Result {
	// subject is "stdout" or a quoted path of at most about maxQuoted runes.
	r := Result{Type: a.Type, Expected: subject + " JSON matches " + renderJSON(a.JSON, maxExcerpt-14-utf8.RuneCountInString(subject))}
	if strings.TrimSpace(text) == "" {
		r.Actual = excerpt(text, 0, 0)
		r.Message = subject + " is empty; expected a JSON document"
		if truncated {
			r.Message += "; " + subject + " was truncated"
		}
		return r
	}
	actual, err := DecodeJSON([]byte(text))
	if err != nil {
		var je *JSONError
		off := 0
		if errors.As(err, &je) {
			off = je.Offset
		}
		line, col := lineCol(text, off)
		r.Actual = excerpt(text, off, off)
		r.Message = fmt.Sprintf("%s is not valid JSON: %v (line %d, column %d)", subject, err, line, col)
		if truncated {
			r.Message += "; " + subject + " was truncated, which may have cut the document short"
		}
		return r
	}

	m := &jsonMatcher{}
	m.match(a.JSON, actual)
	if m.count == 0 {
		r.Passed = true
		r.Actual = renderJSON(actual, maxExcerpt)
		r.Message = subject + " JSON matches the expected document"
		return r
	}
	d := m.first
	r.Path = d.path
	r.Actual = d.actual
	r.Message = fmt.Sprintf("%s JSON differs at %s: %s", subject, d.path, d.what)
	switch more := m.count - 1; {
	case more == 1:
		r.Message += " (and 1 more difference)"
	case more > 1:
		r.Message += fmt.Sprintf(" (and %d more differences)", more)
	}
	return r
}

// jsonDiff is one place where actual does not match expected.
type jsonDiff struct {
	path   string
	what   string // `expected "a", got "b"`
	actual string // the actual value there (or its parent, when a key is missing), rendered
}

// jsonMatcher walks the expected document, remembering the first difference in document order
// and counting the others.
type jsonMatcher struct {
	path  pathStack
	first jsonDiff
	count int
}

func (m *jsonMatcher) differ(what string, actual any) {
	if m.count == 0 {
		m.first = jsonDiff{path: m.path.String(), what: what, actual: renderJSON(actual, maxExcerpt)}
	}
	m.count++
}

func (m *jsonMatcher) mismatch(exp, act any) {
	if kind(exp) != kind(act) {
		m.differ(fmt.Sprintf("expected %s, got %s", describe(exp), describe(act)), act)
		return
	}
	m.differ(fmt.Sprintf("expected %s, got %s", renderJSON(exp, 60), renderJSON(act, 60)), act)
}

// match compares an expected value in canonical form with a decoded actual value.
func (m *jsonMatcher) match(exp, act any) {
	switch e := exp.(type) {
	case nil:
		if act != nil {
			m.mismatch(exp, act)
		}
	case bool:
		if a, ok := act.(bool); !ok || a != e {
			m.mismatch(exp, act)
		}
	case string:
		// Canonically equivalent strings (composed or decomposed accents) are equal.
		if a, ok := act.(string); !ok || (a != e && norm.NFC.String(a) != norm.NFC.String(e)) {
			m.mismatch(exp, act)
		}
	case json.Number:
		if a, ok := act.(json.Number); !ok || !numbersEqual(string(e), string(a)) {
			m.mismatch(exp, act)
		}
	case []any:
		a, ok := act.([]any)
		if !ok {
			m.mismatch(exp, act)
			return
		}
		if len(a) != len(e) {
			m.differ(fmt.Sprintf("expected an array of %s, got %s", elements(len(e)), elements(len(a))), act)
		}
		for i := range min(len(a), len(e)) {
			m.path.pushIndex(i)
			m.match(e[i], a[i])
			m.path.pop()
		}
	case map[string]any:
		a, ok := act.(map[string]any)
		if !ok {
			m.mismatch(exp, act)
			return
		}
		for _, k := range sortedKeys(e) {
			m.path.pushKey(k)
			if av, ok := a[k]; ok {
				m.match(e[k], av)
			} else {
				m.differ(fmt.Sprintf("the key is missing; expected %s", describe(e[k])), act)
			}
			m.path.pop()
		}
	default:
		// canonicalJSON lets nothing else through; never pass what cannot be compared.
		m.differ(fmt.Sprintf("the expected value has type %T, which cannot be compared", exp), act)
	}
}

func elements(n int) string {
	if n == 1 {
		return "1 element"
	}
	return fmt.Sprintf("%d elements", n)
}
