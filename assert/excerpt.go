package assert

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/skillfleet/skillfleet/internal/text"
)

const (
	// maxExcerpt bounds Result.Actual and Result.Expected, in runes as displayed (escapes count).
	maxExcerpt = 240
	// maxMatchShown bounds the matched part of an excerpt so some context always shows.
	maxMatchShown = 160
	// maxQuoted bounds a value quoted inside a message.
	maxQuoted = 80
	ellipsis  = "…"
)

// excerpt shows s around the byte range [start, end) in at most maxExcerpt displayed runes (see
// text.Excerpt).
func excerpt(s string, start, end int) string { return excerptWithin(s, start, end, maxExcerpt) }

// excerptWithin is excerpt with room for n displayed runes instead of maxExcerpt.
func excerptWithin(s string, start, end, n int) string {
	return text.Excerpt(s, start, end, n, maxMatchShown)
}

// clip shows at most n displayed runes of s, escaped like an excerpt, with "…" when cut.
func clip(s string, n int) string { return text.ClipEscaped(s, n) }

// quote renders a value for a message: Go-quoted, at most about maxQuoted displayed runes
// (escapes count), "…" after the closing quote when cut, valid UTF-8.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	width := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		var p string
		if r == utf8.RuneError && size == 1 {
			p = fmt.Sprintf(`\x%02x`, s[i])
		} else {
			q := strconv.Quote(s[i : i+size])
			p = q[1 : len(q)-1]
		}
		w := utf8.RuneCountInString(p)
		if width+w > maxQuoted {
			b.WriteString(`"` + ellipsis)
			return b.String()
		}
		b.WriteString(p)
		width += w
		i += size
	}
	b.WriteByte('"')
	return b.String()
}

// lineCol gives the 1-based line and column (in runes) of byte offset off in s.
func lineCol(s string, off int) (line, col int) {
	off = max(0, min(off, len(s)))
	head := s[:off]
	line = strings.Count(head, "\n") + 1
	if nl := strings.LastIndexByte(head, '\n'); nl >= 0 {
		head = head[nl+1:]
	}
	return line, utf8.RuneCountInString(head) + 1
}
