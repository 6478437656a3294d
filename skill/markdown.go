package skill

import (
	"strings"
)

// bodyLine is one line of a skill body, with what the lint rules need to know about it.
type bodyLine struct {
	text  string // without the line ending
	prose string // text with inline code spans blanked out; "" inside fenced code
	line  int    // 1-based line in the file
	code  bool   // inside a fenced code block (fence lines included)
	table bool   // a row of a pipe table (header and delimiter rows included)
}

// splitBody cuts a body into lines and marks fenced code blocks (``` and ~~~ fences, CommonMark
// style: a closing fence uses the same character and is at least as long as the opening one).
func splitBody(body string, firstLine int) []bodyLine {
	body = strings.TrimSuffix(body, "\n")
	if body == "" {
		return nil
	}
	raw := strings.Split(body, "\n")
	out := make([]bodyLine, len(raw))
	var fenceChar byte
	fenceLen := 0
	for i, t := range raw {
		t = strings.TrimSuffix(t, "\r")
		bl := bodyLine{text: t, line: firstLine + i}
		ch, n := fence(t)
		switch {
		case fenceLen > 0:
			bl.code = true
			if ch == fenceChar && n >= fenceLen && strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(t), string(ch))) == "" {
				fenceLen = 0
			}
		case n > 0:
			bl.code = true
			fenceChar, fenceLen = ch, n
		default:
			bl.prose = blankCodeSpans(t)
		}
		out[i] = bl
	}
	markTables(out)
	return out
}

// markTables flags the rows of pipe tables: a row that starts with '|', and a header row
// with a delimiter row under it together with the rows that follow up to a blank line (GFM
// tables may leave out the outer pipes).
func markTables(lines []bodyLine) {
	for i := range lines {
		if lines[i].code {
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(lines[i].text), "|") {
			lines[i].table = true
		}
		if i == 0 || lines[i-1].code || !strings.Contains(lines[i-1].text, "|") || !isDelimiterRow(lines[i].text) {
			continue
		}
		lines[i-1].table, lines[i].table = true, true
		for j := i + 1; j < len(lines) && !lines[j].code && strings.Contains(lines[j].text, "|") && strings.TrimSpace(lines[j].text) != ""; j++ {
			lines[j].table = true
		}
	}
}

// isDelimiterRow reports whether t is a table's delimiter row, such as "|---|:--:|" or
// "--- | ---". A row of dashes alone is a thematic break or a heading underline, not a table.
func isDelimiterRow(t string) bool {
	t = strings.TrimSpace(t)
	return strings.Contains(t, "|") && strings.Contains(t, "-") && strings.Trim(t, "|:- \t") == ""
}

// fence reports the fence character and run length when t opens or closes a fenced block.
func fence(t string) (byte, int) {
	s := strings.TrimLeft(t, " ")
	if len(t)-len(s) > 3 || len(s) < 3 {
		return 0, 0
	}
	ch := s[0]
	if ch != '`' && ch != '~' {
		return 0, 0
	}
	n := 0
	for n < len(s) && s[n] == ch {
		n++
	}
	if n < 3 {
		return 0, 0
	}
	if ch == '`' && strings.Contains(s[n:], "`") {
		return 0, 0 // an info string may not contain backticks; this is inline code
	}
	return ch, n
}

// A codeSpan is one inline code span of a line.
type codeSpan struct {
	text       string // the contents, trimmed
	start, end int    // byte offsets of the opening and after the closing backticks
}

// codeSpans returns the inline code spans of a line (single-line spans only), in order.
func codeSpans(t string) []codeSpan {
	var out []codeSpan
	off := 0
	for {
		i := strings.IndexByte(t[off:], '`')
		if i < 0 {
			return out
		}
		i += off
		n := 1
		for i+n < len(t) && t[i+n] == '`' {
			n++
		}
		j := strings.Index(t[i+n:], t[i:i+n])
		if j < 0 {
			return out
		}
		end := i + n + j + n
		out = append(out, codeSpan{text: strings.TrimSpace(t[i+n : i+n+j]), start: i, end: end})
		off = end
	}
}

// blankCodeSpans replaces inline code spans (with their backticks) by spaces, so that prose
// rules do not read code, and offsets stay put. Linear in the line length: a hostile line of
// backticks must not cost quadratic time.
func blankCodeSpans(t string) string {
	if !strings.Contains(t, "`") {
		return t
	}
	b := []byte(t)
	for i := 0; i < len(t); {
		if t[i] != '`' {
			i++
			continue
		}
		n := 1
		for i+n < len(t) && t[i+n] == '`' {
			n++
		}
		j := strings.Index(t[i+n:], t[i:i+n])
		if j < 0 {
			break
		}
		end := i + n + j + n
		for k := i; k < end; k++ {
			b[k] = ' '
		}
		i = end
	}
	return string(b)
}

// heading returns the text of an ATX heading line ("## Gotchas" -> "Gotchas"), or "".
func heading(t string) string {
	s := strings.TrimLeft(t, " ")
	if len(t)-len(s) > 3 || !strings.HasPrefix(s, "#") {
		return ""
	}
	n := 0
	for n < len(s) && s[n] == '#' {
		n++
	}
	if n > 6 || (n < len(s) && s[n] != ' ' && s[n] != '\t') {
		return ""
	}
	return strings.TrimSpace(strings.TrimRight(strings.TrimSpace(s[n:]), "#"))
}
