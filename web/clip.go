package web

import (
	"fmt"
	"unicode/utf8"
)

// Clip is a piece of untrusted text as a page shows it: at most what its budget allowed, with
// whether it was cut and how long it was.
type Clip struct {
	Text string
	// Clipped: Text is a prefix of a longer text of Size bytes.
	Clipped bool
	Size    int
}

// String is the clipped text.
func (c Clip) String() string { return c.Text }

// Note says how much was cut, for a reader; "" when nothing was.
func (c Clip) Note() string {
	switch {
	case !c.Clipped:
		return ""
	case c.Text == "":
		return fmt.Sprintf("not shown (%s): the size bound was reached", byteSize(int64(c.Size)))
	}
	return fmt.Sprintf("clipped: %s of %s shown", byteSize(int64(len(c.Text))), byteSize(int64(c.Size)))
}

// escapedCost is how many bytes r takes once html/template has escaped it in text or a quoted
// attribute: a page's size is bounded by what the escaped text costs, and a hostile output made
// of "<" would otherwise grow fourfold past its budget.
func escapedCost(r rune, size int) int {
	switch r {
	case '<', '>':
		return 4 // &lt;
	case '&', '\'', '"', '+':
		return 5 // &amp; &#39; &#34; &#43;
	case 0, utf8.RuneError:
		return 3 // U+FFFD
	}
	return size
}

// EscapedLen is how many bytes s takes once escaped.
func EscapedLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		n += escapedCost(r, size)
		i += size
	}
	return n
}

// clipEscaped cuts s, on a rune boundary, to the longest prefix whose escaped form takes at most
// limit bytes.
func clipEscaped(s string, limit int) Clip {
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		c := escapedCost(r, size)
		if n+c > limit {
			return Clip{Text: s[:i], Clipped: true, Size: len(s)}
		}
		n += c
		i += size
	}
	return Clip{Text: s, Size: len(s)}
}

// maxNameBytes bounds a name (skill, case, agent, suite) where a page shows it: names come
// from a suite, and a case may be named by a megabyte of YAML.
const maxNameBytes = 512

// name is a suite-supplied name as pages show it: clipped to maxNameBytes escaped, with an
// ellipsis when cut.
func name(s string) string { return clipName(s, maxNameBytes) }

// clipName clips a name to n bytes escaped, with an ellipsis when cut.
func clipName(s string, n int) string {
	c := clipEscaped(s, n)
	if c.Clipped {
		return c.Text + "…"
	}
	return s
}

// budget bounds what a page (or a case of the HTML report) shows of untrusted text: every piece
// takes at most perPiece escaped bytes, and all of them together at most left; structure
// (markup around the pieces) is charged too, so the bound holds for the page's bytes. Once
// spent, pieces come out empty and marked clipped.
type budget struct {
	left, perPiece int
	// spent: some piece was cut or dropped.
	spent bool
}

func newBudget(total, perPiece int) *budget { return &budget{left: total, perPiece: perPiece} }

// take returns s clipped to what the budget allows, and charges it.
func (b *budget) take(s string) Clip {
	limit := min(b.left, b.perPiece)
	if limit < 0 {
		limit = 0
	}
	c := clipEscaped(s, limit)
	b.left -= EscapedLen(c.Text)
	if c.Clipped {
		b.spent = true
	}
	return c
}

// takeShort is take for a short piece (a name, a reason line) with its own smaller cap.
func (b *budget) takeShort(s string, n int) Clip {
	per := b.perPiece
	b.perPiece = min(per, n)
	c := b.take(s)
	b.perPiece = per
	return c
}

// charge accounts for n bytes of markup; it reports whether the budget still had them.
func (b *budget) charge(n int) bool {
	if b.left < n {
		b.spent = true
		return false
	}
	b.left -= n
	return true
}

// byteSize renders a size for a reader: 512 B, 3.2 KiB, 12.0 MiB.
func byteSize(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
}
