package assert

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestExcerpt(t *testing.T) {
	long := strings.Repeat("a", 500)
	tests := []struct {
		name       string
		s          string
		start, end int
		want       string
	}{
		{name: "short text, whole", s: "hello world", start: 6, end: 11, want: "hello world"},
		{name: "empty", s: "", want: ""},
		{name: "controls escaped", s: "a\x00b\x1b[31m\r\n\t\u202e\u00a0z", start: 0, end: 0,
			want: `a\x00b\x1b[31m\r\n\t\u202e\u00a0z`},
		{name: "invalid UTF-8 escaped", s: "ok\xff\xfe", want: `ok\xff\xfe`},
		{name: "start of a long text", s: long, want: strings.Repeat("a", maxExcerpt-3) + "…"},
		{name: "match in the middle of a long text", s: long + "MATCH" + long, start: 500, end: 505,
			want: "…" + strings.Repeat("a", 116) + "MATCH" + strings.Repeat("a", 116) + "…"},
		{name: "match near the start gives the rest to what follows", s: "ab" + "MATCH" + long, start: 2, end: 7,
			want: "abMATCH" + strings.Repeat("a", maxExcerpt-3-7) + "…"},
		{name: "a long match is cut inside", s: strings.Repeat("m", 1000), start: 0, end: 1000,
			want: strings.Repeat("m", maxMatchShown) + "…"},
		{name: "a long match is cut inside, with context after", s: strings.Repeat("m", 1000) + "zz", start: 0, end: 1000,
			want: strings.Repeat("m", maxMatchShown) + "…zz"},
		{name: "a position inside a rune moves to its start", s: "xéy", start: 2, end: 2, want: "xéy"},
		{name: "multi-byte runes are never cut", s: strings.Repeat("é", 300), start: 0, end: 0,
			want: strings.Repeat("é", maxExcerpt-3) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := excerpt(tt.s, tt.start, tt.end)
			if got != tt.want {
				t.Errorf("excerpt = %q\nwant      %q", got, tt.want)
			}
			if !utf8.ValidString(got) || utf8.RuneCountInString(got) > maxExcerpt {
				t.Errorf("excerpt %q is invalid UTF-8 or longer than %d runes", got, maxExcerpt)
			}
		})
	}
}

func TestExcerptBudgetCountsEscapes(t *testing.T) {
	got := excerpt(strings.Repeat("\x00", 1000), 0, 0)
	if n := utf8.RuneCountInString(got); n > maxExcerpt {
		t.Errorf("%d runes, more than %d", n, maxExcerpt)
	}
	if !strings.HasPrefix(got, `\x00\x00`) || !strings.HasSuffix(got, "…") {
		t.Errorf("excerpt = %q", got)
	}
}

func TestQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"DEV", `"DEV"`},
		{"straße", `"straße"`},
		{"a\"b\n", `"a\"b\n"`},
		{"\xff", `"\xff"`},
		{strings.Repeat("x", 100), `"` + strings.Repeat("x", maxQuoted) + `"…`},
		{strings.Repeat("\x01", 100), `"` + strings.Repeat(`\x01`, maxQuoted/4) + `"…`},
	}
	for _, tt := range tests {
		if got := quote(tt.in); got != tt.want {
			t.Errorf("quote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestLineCol(t *testing.T) {
	s := "ab\nçd\n\nx"
	tests := []struct{ off, line, col int }{
		{0, 1, 1}, {2, 1, 3}, {3, 2, 1}, {5, 2, 2}, {7, 3, 1}, {8, 4, 1}, {9, 4, 2}, {99, 4, 2},
	}
	for _, tt := range tests {
		if l, c := lineCol(s, tt.off); l != tt.line || c != tt.col {
			t.Errorf("lineCol(%d) = %d:%d, want %d:%d", tt.off, l, c, tt.line, tt.col)
		}
	}
}
