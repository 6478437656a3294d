// Package text holds the project's few text helpers: cutting a string to a bound without
// splitting a rune (by bytes, by runes, head and tail, tail only, or escaped for one display
// line), the plural of a counted word and a list of numbers. They differ on purpose (a stored result keeps its
// head and tail, a stderr excerpt its end, a message its start); each shape is one function
// here so the same cut is made the same way everywhere.
package text

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// ellipsis marks where text was left out.
const ellipsis = "…"

// Plural is one when n is 1 and many otherwise.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Count is n followed by the plural of the word: "1 skill", "3 skills".
func Count(n int, one, many string) string {
	return strconv.Itoa(n) + " " + Plural(n, one, many)
}

// Ints lists numbers for a person: "5, 10, 15, 20".
func Ints(xs []int) string {
	var b strings.Builder
	for i, x := range xs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(x))
	}
	return b.String()
}

// ClipBytes bounds s to n bytes, cut back to a rune boundary, followed by "…" when cut.
func ClipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(n, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// ClipRunes bounds s to n runes, followed by "…" when cut.
func ClipRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	count := 0
	for i := range s {
		if count == n {
			return s[:i] + ellipsis
		}
		count++
	}
	return s
}

// Tail keeps the last n bytes of s, cut forward to a rune boundary, after "…" when cut: the end
// of a command's output is where its error usually is.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := len(s) - max(n, 0)
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return ellipsis + s[cut:]
}

// HeadTail keeps the head and the tail of s within limit bytes (half each, cut on rune
// boundaries) around marker(omitted), the number of bytes left out, and reports whether
// anything was. A command's error is usually at the end of its output, its context at the
// start.
func HeadTail(s string, limit int, marker func(omitted int) string) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	half := max(limit/2, 0)
	head, tail := half, len(s)-half
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + marker(tail-head) + s[tail:], true
}
