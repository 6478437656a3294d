package assert

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/skillfleet/skillfleet/internal/text"
	"golang.org/x/text/cases"
)

// checkResult holds every Result to the shape the report relies on.
func checkResult(t *testing.T, r Result) {
	t.Helper()
	for name, s := range map[string]string{"Actual": r.Actual, "Expected": r.Expected} {
		if !utf8.ValidString(s) {
			t.Fatalf("%s is not valid UTF-8: %q", name, s)
		}
		if n := utf8.RuneCountInString(s); n > maxExcerpt {
			t.Fatalf("%s has %d runes, more than %d: %q", name, n, maxExcerpt, s)
		}
	}
	if !utf8.ValidString(r.Message) {
		t.Fatalf("Message is not valid UTF-8: %q", r.Message)
	}
	if r.Message == "" {
		t.Fatalf("no Message in %+v", r)
	}
	if r.Passed && r.Errored {
		t.Fatalf("passed and errored: %+v", r)
	}
}

func containsText(h, n string, fold bool) (start, end int, ok bool) {
	p := newPreparer(fold)
	needle := p.prepare(n).text
	text := p.prepare(h)
	return text.find(needle)
}

// referencePrepare is prepare without its fast paths: every normalisation segment goes through
// NFC, folding and NFC.
func referencePrepare(s string, fold bool) []byte {
	p := newPreparer(fold)
	var text []byte
	for i := 0; i < len(s); {
		bad := nextInvalid(s, i)
		if bad == i {
			text = append(text, "\uFFFD"...)
			i++
			continue
		}
		var spans []span
		text = p.segments(text, s, i, bad, &spans)
		i = bad
	}
	return text
}

func swapASCIICase(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z':
			b[i] = c - 'a' + 'A'
		case 'A' <= c && c <= 'Z':
			b[i] = c - 'A' + 'a'
		}
	}
	return string(b)
}

func FuzzContains(f *testing.F) {
	for _, s := range [][2]string{
		{"Die Straße", "STRASSE"}, {"ΟΔΟΣ", "οδος"}, {"İstanbul", "istanbul"}, {"ıi", "I"},
		{"cafe\u0301", "café"}, {"e\u0301", "e"}, {"q\u0301\u0323", "q"}, {"ΐ\u0323", "Ϊ\u0323\u0301"},
		{"\u1100\u1161", "가"}, {"\xff\xfeab", "\uFFFD"}, {"ǅ", "dž"}, {"ﬃ", "FFI"}, {"\u212a", "k"},
		{"", "x"}, {"a\r\n\tb", "\n"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, h, n string) {
		for _, fold := range []bool{false, true} {
			// The fast paths of prepare change nothing.
			for _, x := range []string{h, n} {
				if got, want := newPreparer(fold).prepare(x).text, referencePrepare(x, fold); !bytes.Equal(got, want) {
					t.Fatalf("fold=%v: prepare(%q) = %q, want %q", fold, x, got, want)
				}
			}
			// A text always contains itself.
			if h != "" {
				s, e, ok := containsText(h, h, fold)
				if !ok {
					t.Fatalf("fold=%v: %q does not contain itself", fold, h)
				}
				if s != 0 || e != len(h) {
					t.Fatalf("fold=%v: %q contains itself at [%d,%d)", fold, h, s, e)
				}
			}
			if n == "" {
				continue
			}
			s, e, ok := containsText(h, n, fold)
			if ok && (s < 0 || e > len(h) || s > e || text.RuneStart(h, s) != s || text.RuneStart(h, e) != e) {
				t.Fatalf("fold=%v: match of %q in %q at bad range [%d,%d)", fold, n, h, s, e)
			}
			if !fold {
				// An exact match is also a caseless one.
				if _, _, okF := containsText(h, n, true); ok && !okF {
					t.Fatalf("%q contains %q case-sensitively but not case-insensitively", h, n)
				}
				continue
			}
			// Folding is symmetric: it does not matter which side was folded or how ASCII
			// letters were cased.
			folder := cases.Fold()
			for _, v := range [][2]string{
				{folder.String(h), n}, {h, folder.String(n)}, {swapASCIICase(h), n}, {h, swapASCIICase(n)},
			} {
				if _, _, ok2 := containsText(v[0], v[1], true); ok2 != ok {
					t.Fatalf("containsFold(%q, %q) = %v but containsFold(%q, %q) = %v", h, n, ok, v[0], v[1], ok2)
				}
			}
		}
		if utf8.ValidString(n) && n != "" {
			obs := Observation{Output: h, Stdout: h, Stderr: n, OutputTruncated: len(h)%2 == 0}
			var as []Assertion
			var want []Result
			for _, typ := range []Type{OutputContains, OutputNotContains, StdoutContains, StderrContains, NotContains} {
				a := Assertion{Type: typ, Value: n}
				r, err := Evaluate(a, obs)
				if err != nil {
					t.Fatalf("%s %q: %v", typ, n, err)
				}
				checkResult(t, r)
				as, want = append(as, a, a), append(want, r, r)
			}
			// EvaluateAll shares prepared text between assertions; it must not change a result.
			got, _ := EvaluateAll(as, obs)
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("EvaluateAll[%d] = %+v, Evaluate = %+v", i, got[i], want[i])
				}
			}
			if r, err := Evaluate(Assertion{Type: OutputMatches, Value: n}, obs); err == nil {
				checkResult(t, r)
			}
		}
	})
}

func FuzzJSONMatch(f *testing.F) {
	for _, s := range [][2]string{
		{`{"a":1}`, `{"a":1.0,"b":2}`}, {`[1,2]`, `[1,2,3]`}, {`null`, `null`}, {`{"a":null}`, `{}`},
		{`1e999999999999999999999`, `10e999999999999999999998`}, {`"x"`, `"x" y`}, {`{"a":[{"b":"c"}]}`, `{"a":[{"b":"C"}]}`},
		{`-0`, `0.0e5`}, {`{"\u0000":"\ud800"}`, "\xef\xbb\xbf {\"\\u0000\":\"\\ufffd\"}\n"}, {``, `{`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, expected, stdout []byte) {
		// Arbitrary stdout against any expected document never panics and gives a well-formed
		// result.
		for _, doc := range [][]byte{expected, stdout} {
			exp, err := DecodeJSON(doc)
			if err != nil || exp == nil {
				continue
			}
			a := Assertion{Type: StdoutJSON, JSON: exp}
			if err := Compile(&a); err != nil {
				t.Fatalf("decoded document %q does not compile: %v", doc, err)
			}
			// Any JSON document matches itself.
			r, err := Evaluate(a, Observation{Stdout: string(doc)})
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, r)
			if !r.Passed {
				t.Fatalf("%q does not match itself: %s", doc, r.Message)
			}
			for _, out := range [][]byte{expected, stdout} {
				r, err := Evaluate(a, Observation{Stdout: string(out), OutputTruncated: len(out)%2 == 1})
				if err != nil {
					t.Fatal(err)
				}
				checkResult(t, r)
				if !r.Passed && r.Path == "" && !strings.HasPrefix(r.Message, "stdout is") {
					t.Fatalf("a JSON difference without a path: %+v", r)
				}
			}
		}
		numberKey(string(expected))
		numbersEqual(string(expected), string(stdout))
	})
}
