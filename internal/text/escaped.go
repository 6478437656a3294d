package text

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// display renders one rune, or one invalid byte, as it appears in an excerpt: printable runes as
// themselves, control and other invisible characters escaped Go-style, so that an excerpt is a
// single line that cannot drive a terminal.
func display(r rune, size int, b byte) string {
	if r == utf8.RuneError && size <= 1 {
		return fmt.Sprintf(`\x%02x`, b)
	}
	switch r {
	case '\n':
		return `\n`
	case '\t':
		return `\t`
	case '\r':
		return `\r`
	case ' ':
		return " "
	}
	if unicode.IsPrint(r) {
		return string(r)
	}
	if r < 0x80 {
		return fmt.Sprintf(`\x%02x`, r)
	}
	if r <= 0xFFFF {
		return fmt.Sprintf(`\u%04x`, r)
	}
	return fmt.Sprintf(`\U%08x`, r)
}

// piece is one displayed rune.
type piece struct {
	text  string
	width int
}

func pieceAt(s string, i int) (piece, int) {
	r, size := utf8.DecodeRuneInString(s[i:])
	t := display(r, size, s[i])
	return piece{t, utf8.RuneCountInString(t)}, size
}

func pieceBefore(s string, i int) (piece, int) {
	r, size := utf8.DecodeLastRuneInString(s[:i])
	t := display(r, size, s[i-size])
	return piece{t, utf8.RuneCountInString(t)}, size
}

// RuneStart moves i back to the start of the rune it falls in, runes being what
// utf8.DecodeRuneInString steps over (a stray continuation byte is a rune of its own). i is
// first clamped to [0, len(s)].
func RuneStart(s string, i int) int {
	start, _ := runeAround(s, i)
	return start
}

// RuneEnd moves i forward to the end of the rune it falls in, as RuneStart counts runes.
func RuneEnd(s string, i int) int {
	_, end := runeAround(s, i)
	return end
}

// runeAround returns i twice when i is a rune boundary, else the rune that contains it.
func runeAround(s string, i int) (int, int) {
	i = max(0, min(i, len(s)))
	if i == len(s) || utf8.RuneStart(s[i]) {
		return i, i
	}
	// A continuation byte: it belongs to the rune starting at most UTFMax-1 bytes before, if
	// that rune decodes that far; otherwise it is a one-byte invalid rune and i a boundary.
	for j := i - 1; j >= 0 && j > i-utf8.UTFMax; j-- {
		if utf8.RuneStart(s[j]) {
			if _, size := utf8.DecodeRuneInString(s[j:]); j+size > i {
				return j, j + size
			}
			return i, i
		}
	}
	return i, i
}

// forward collects displayed runes of s from i on, up to width; it reports where it stopped.
func forward(s string, i, limit, width int) (string, int, int) {
	var b strings.Builder
	used := 0
	for i < limit {
		p, size := pieceAt(s, i)
		if used+p.width > width {
			break
		}
		b.WriteString(p.text)
		used += p.width
		i += size
	}
	return b.String(), i, used
}

// backward collects displayed runes of s before i, down to width; it reports where it stopped.
func backward(s string, i, width int) (string, int, int) {
	var ps []string
	used := 0
	for i > 0 {
		p, size := pieceBefore(s, i)
		if used+p.width > width {
			break
		}
		ps = append(ps, p.text)
		used += p.width
		i -= size
	}
	var b strings.Builder
	for k := len(ps) - 1; k >= 0; k-- {
		b.WriteString(ps[k])
	}
	return b.String(), i, used
}

// Excerpt shows s around the byte range [start, end) on one line: the range itself (cut in the
// middle beyond maxMatch displayed runes) with context on both sides, at most n displayed
// runes in all (escapes count), "…" where text was left out. An empty range at 0 shows the
// start of s. The result is valid UTF-8 and cannot drive a terminal.
func Excerpt(s string, start, end, n, maxMatch int) string {
	start = RuneStart(s, start)
	end = max(start, RuneEnd(s, end))
	// Reserve room for "…" at both ends and one inside a long match.
	budget := n - 3

	match, stop, used := forward(s, start, end, min(budget, maxMatch))
	cut := stop < end
	ctx := budget - used

	// Give each side half of the room, and a side the other does not need.
	_, _, beforeAvail := backward(s, start, ctx)
	_, _, afterAvail := forward(s, end, len(s), ctx)
	before := min(beforeAvail, ctx/2)
	after := min(afterAvail, ctx-before)
	before = min(beforeAvail, ctx-after)

	pre, from, _ := backward(s, start, before)
	post, to, _ := forward(s, end, len(s), after)

	var b strings.Builder
	if from > 0 {
		b.WriteString(ellipsis)
	}
	b.WriteString(pre)
	b.WriteString(match)
	if cut {
		b.WriteString(ellipsis)
	}
	b.WriteString(post)
	if to < len(s) {
		b.WriteString(ellipsis)
	}
	return b.String()
}

// ClipEscaped shows at most n displayed runes of s on one line, escaped as Excerpt escapes,
// with "…" when cut.
func ClipEscaped(s string, n int) string {
	out, stop, _ := forward(s, 0, len(s), n)
	if stop == len(s) {
		return out
	}
	out, _, _ = forward(s, 0, len(s), n-1)
	return out + ellipsis
}
