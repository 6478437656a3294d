package judge

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxExcerpt bounds Result.Expected and Result.Actual, like the assert package's excerpts.
const maxExcerpt = 240

// clip renders s on one line (control and invisible characters escaped Go-style, invalid bytes
// as \xNN) in at most n displayed runes, ending with "…" when something was left out.
func clip(s string, n int) string {
	var b strings.Builder
	width := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		var piece string
		switch {
		case r == utf8.RuneError && size <= 1:
			piece = fmt.Sprintf(`\x%02x`, s[i])
		case r == '\n':
			piece = `\n`
		case r == '\t':
			piece = `\t`
		case r == '\r':
			piece = `\r`
		case r == ' ' || unicode.IsPrint(r):
			piece = string(r)
		case r < 0x80:
			piece = fmt.Sprintf(`\x%02x`, r)
		case r <= 0xFFFF:
			piece = fmt.Sprintf(`\u%04x`, r)
		default:
			piece = fmt.Sprintf(`\U%08x`, r)
		}
		w := utf8.RuneCountInString(piece)
		rest := i+size < len(s)
		if width+w > n || (rest && width+w == n) {
			b.WriteString("…")
			return b.String()
		}
		b.WriteString(piece)
		width += w
		i += size
	}
	return b.String()
}
