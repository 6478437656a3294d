// Package jsonscan checks an untrusted JSON text, in one pass and before anything decodes it,
// for what encoding/json lets through silently: a key repeated in one object, and nesting deep
// enough to cost the decoders that come after it.
//
// A repeated key is the dangerous one. encoding/json keeps the last value of a repeated key,
// while a check that reads the text another way (a token walk, a different library, a regular
// expression) may see the first, so a body can show an allow-list one tool and hand the
// upstream model another. Refusing such bodies outright removes the disagreement instead of
// teaching every check which value wins. Keys are compared as encoding/json matches them to
// struct fields, case-insensitively (with Unicode simple folding): a check that decodes into
// a struct would read "TYPE" where a case-sensitive upstream reads "type", so two keys equal
// under that folding are a repeated key too.
//
// It is internal because it is a mechanism of the model gateway's request reading, not a
// concept a user of the module meets.
package jsonscan

import (
	"strconv"
	"strings"
)

// DefaultMaxDepth is the nesting bound of a zero Options. Chat requests nest about ten deep
// (messages, content parts, tool schemas); 64 leaves room for deep tool parameter schemas
// while keeping hostile nesting far below what a recursive decoder would have to unwind.
const DefaultMaxDepth = 64

// Options are the bounds Check applies.
type Options struct {
	// MaxDepth bounds nesting: an array or object at the top level is at depth 1, one inside
	// it at depth 2, and so on; scalars add none. Zero or less means DefaultMaxDepth.
	MaxDepth int
}

// Error is why Check refused a text. It carries the byte offset and the path separately so
// a caller can log them as fields or answer the client without parsing the message.
type Error struct {
	// Offset is the byte the problem was found at, from 0; len(data) when the text ends
	// too soon.
	Offset int64
	// Path locates the problem in the document, in the notation of JavaScript property
	// access: tools[2].type, messages[0]["content-type"]; empty for the top level. For a
	// repeated key it is the object holding the key; for a value that is too deep, the
	// container's place; for a syntax error, the value being read when it was found.
	Path string
	// Msg says what is wrong, without the place.
	Msg string
}

// Error reads like `duplicate key "type" at tools[2] (byte 1234)`.
func (e *Error) Error() string {
	at := e.Path
	if at == "" {
		at = "top level"
	}
	return e.Msg + " at " + at + " (byte " + strconv.FormatInt(e.Offset, 10) + ")"
}

// maxQuoted bounds the bytes of a key that a message or path quotes: a hostile body can
// carry a key of megabytes, and an error is logged and sent back.
const maxQuoted = 64

// quoteKey quotes a decoded key for a message, clipped to maxQuoted bytes on a rune boundary.
func quoteKey(k []byte) string {
	if len(k) <= maxQuoted {
		return strconv.Quote(string(k))
	}
	n := maxQuoted
	for n > 0 && k[n]&0xC0 == 0x80 { // not in the middle of a rune
		n--
	}
	return strconv.Quote(string(k[:n]) + "…")
}

// appendSegment appends the path segment of an object member: dotted when the key reads as
// an identifier, so common paths stay short, and quoted in brackets otherwise, so that no
// key (one holding a dot or a bracket, say) can make a path that reads as another.
func appendSegment(b *strings.Builder, key []byte) {
	if isIdent(key) {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.Write(key)
		return
	}
	b.WriteByte('[')
	b.WriteString(quoteKey(key))
	b.WriteByte(']')
}

func isIdent(k []byte) bool {
	if len(k) == 0 || len(k) > maxQuoted {
		return false
	}
	for i, c := range k {
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// quoteChar names a byte of the text in a message the way encoding/json's syntax errors do.
func quoteChar(c byte) string {
	switch {
	case c == '\'':
		return `'\''`
	case c == '"':
		return `'"'`
	case c < 0x20 || c >= 0x7F:
		return "byte 0x" + strconv.FormatUint(uint64(c), 16)
	}
	return "'" + string(rune(c)) + "'"
}
