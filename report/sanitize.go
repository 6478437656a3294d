package report

import (
	"strings"
	"unicode/utf8"
)

// Case names, outputs and assertion excerpts come from untrusted test cases and agents. The
// JSON report keeps them as they are (encoding/json escapes what it must); the renderers for
// humans and for XML parsers clean them here.

// stripEscapes removes terminal escape sequences: CSI (ESC [ … or U+009B …), OSC
// (ESC ] … BEL or ST, or U+009D …), DCS/SOS/PM/APC strings (ESC P/X/^/_ … ST) and two-byte
// escapes. An unterminated sequence is removed to the end of s: that is what a terminal
// would swallow too.
func stripEscapes(s string) string {
	if !strings.ContainsAny(s, "\x1b\u009b\u009d\u0090\u0098\u009e\u009f") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x1b && i+1 < len(s) && strings.IndexByte("[]PX^_", s[i+1]) >= 0:
			i = skipEscape(s, i+2, s[i+1])
		case r == 0x1b && i+1 < len(s):
			i = skipEscape(s, i+1, 0)
		case r == 0x1b:
			i++
		case r == 0x9b:
			i = skipEscape(s, i+w, '[')
		case r == 0x9d:
			i = skipEscape(s, i+w, ']')
		case r == 0x90 || r == 0x98 || r == 0x9e || r == 0x9f:
			i = skipEscape(s, i+w, 'P')
		default:
			b.WriteString(s[i : i+w])
			i += w
		}
	}
	return b.String()
}

// skipEscape returns the index just past an escape sequence of the given kind ('[' CSI,
// ']' OSC, 'P' and the like for strings, 0 for the rest) whose body starts at i.
func skipEscape(s string, i int, kind byte) int {
	switch kind {
	case '[': // CSI: parameter and intermediate bytes, then one final byte 0x40–0x7E
		for i < len(s) {
			c := s[i]
			i++
			if c >= 0x40 && c <= 0x7e {
				return i
			}
			if c < 0x20 || c > 0x7e {
				return i - 1 // malformed: stop before the stray byte, which is cleaned later
			}
		}
		return i
	case ']', 'P', 'X', '^', '_': // string sequences, ended by BEL (OSC) or ST (ESC \)
		for i < len(s) {
			switch {
			case s[i] == 0x07:
				return i + 1
			case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
				return i + 2
			case strings.HasPrefix(s[i:], "\u009c"):
				return i + len("\u009c")
			}
			i++
		}
		return i
	default: // ESC, intermediates 0x20–0x2F, one final byte
		for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
			i++
		}
		if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
			i++
		}
		return i
	}
}

// cleanXML makes s safe as XML 1.0 character data or attribute value: escape sequences are
// removed and characters XML 1.0 forbids (NUL and the other C0 controls but tab, newline and
// carriage return; surrogates; U+FFFE, U+FFFF; invalid UTF-8) become U+FFFD, as do the
// bidirectional controls, legal but able to disguise text in a CI system's web page.
// encoding/xml then escapes markup, so `]]>` or `<` in text is harmless.
func cleanXML(s string) string {
	s = stripEscapes(s)
	return strings.Map(func(r rune) rune {
		if isBidiControl(r) {
			return utf8.RuneError
		}
		if r == '\t' || r == '\n' || r == '\r' ||
			(r >= 0x20 && r <= 0xd7ff) || (r >= 0xe000 && r <= 0xfffd) || (r >= 0x10000 && r <= 0x10ffff) {
			return r
		}
		return utf8.RuneError
	}, s)
}

// isBidiControl reports the explicit directional formatting characters (embeddings,
// overrides, isolates, marks) that "Trojan Source" text uses.
func isBidiControl(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c
}

// cleanTerminal makes s safe to print on a terminal: escape sequences are removed, line
// endings become \n (a lone \r could overwrite what came before), and the other control
// characters, C1 controls and bidirectional overrides (which can make text read differently
// from what it is) become U+FFFD.
func cleanTerminal(s string) string {
	s = strings.ReplaceAll(stripEscapes(s), "\r\n", "\n")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r == '\r':
			return '\n'
		case r < 0x20 || (r >= 0x7f && r <= 0x9f):
			return utf8.RuneError
		case isBidiControl(r):
			return utf8.RuneError
		}
		return r
	}, s)
}

// oneLine is s cleaned for a terminal and folded to a single line of at most limit runes.
func oneLine(s string, limit int) string {
	s = strings.Join(strings.Fields(cleanTerminal(s)), " ")
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	r := []rune(s)
	return string(r[:limit-1]) + "…"
}

// CleanLine is untrusted text (a case name, evidence) fit for one terminal line: escape
// sequences and control characters removed, newlines folded, clipped at 500 runes.
func CleanLine(s string) string { return oneLine(s, 500) }
