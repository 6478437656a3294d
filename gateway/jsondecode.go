package gateway

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/skillfleet/skillfleet/internal/jsonscan"
)

// The one-pass decoders the stream readers share (decodeChatChunk, decodeResponsesEvent,
// decodeAnthropicEvent, decodeGeminiChunk): each reads a streamed event as json.Unmarshal
// would into the reader's type, validating it as it goes and skipping the members it does
// not read with scanValue, with no reflection on the path every event takes. A long answer
// is tens of thousands of events, and decoding each by reflection was most of a relay's
// time (issue 31).

// chunkText is a JSON string's text, read in place by the decoders: the event's own bytes
// when the string has no escape and is valid UTF-8 (as a delta's text nearly always is), so
// that a long answer's every delta is not made a string only to be copied into the answer.
// It is valid only until the stream reads on. json.Unmarshal reads it as a string, null
// leaving it as it was, as it reads a string field.
type chunkText []byte

// UnmarshalJSON reads a JSON string (or null, which changes nothing).
func (t *chunkText) UnmarshalJSON(b []byte) error { return unmarshalText(b, (*[]byte)(t), false) }

// optText is a JSON string's text read in place as chunkText is, for a field json.Unmarshal
// would read into a *string: null makes it nil (no text), where it leaves a chunkText as it
// was; the empty string is not nil.
type optText []byte

// UnmarshalJSON reads a JSON string, or null (nil).
func (t *optText) UnmarshalJSON(b []byte) error { return unmarshalText(b, (*[]byte)(t), true) }

// unmarshalText reads the JSON string b into t as json.Unmarshal reads a string (never nil,
// empty or not); null makes t nil when nullClears, else changes nothing. It is what the
// tests hold the one-pass decoders to, and what encoding/json reads the types with.
func unmarshalText(b []byte, t *[]byte, nullClears bool) error {
	if string(b) == "null" {
		if nullClears {
			*t = nil
		}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*t = append([]byte{}, s...)
	return nil
}

// The decoders below read the value that starts at b[i] (no whitespace before it), depth
// arrays and objects deep, and return the index just past it, and false for text that is not
// JSON or a value of the wrong type (the index is then of no use: the chunk is unreadable).

// objectField reads an object as json.Unmarshal reads one into a struct, a member at a time:
// from the object at b[i] (first), or on from the end (i) of the value of the member last
// returned, up to the next member whose key is one of names (matched as encoding/json
// matches a field: the exact name, else one equal under case folding), validating and
// skipping the others. It returns the index of that member's value and its field, its index
// in names; or field -1 and the index past the object once it ends (null is an object with
// no member, leaving the struct as it was). ok is false for text that is not JSON, or a
// value that is not an object. A decoder loops over it and switches on the field, reading
// each value itself: where a callback read each member, it cost a call a member (issue 31).
func objectField(b []byte, i, depth int, names []string, first bool) (next, field int, ok bool) {
	var more bool
	if first {
		switch {
		case i >= len(b):
			return i, -1, false
		case b[i] == 'n':
			end := scanLiteral(b, i, "null")
			return end, -1, end >= 0
		case b[i] != '{':
			return i, -1, false
		case depth >= validMaxDepth:
			return i, -1, false
		}
		if i = skipSpace(b, i+1); i < len(b) && b[i] == '}' {
			return i + 1, -1, true
		}
	} else if i, more, ok = afterElement(b, i, '}'); !ok || !more {
		return i, -1, ok
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, -1, false
		}
		end, esc := scanStringEsc(b, i)
		if end < 0 {
			return i, -1, false
		}
		key := b[i+1 : end-1]
		if esc {
			key = []byte(unquote(b[i:end]))
		}
		if i = skipSpace(b, end); i >= len(b) || b[i] != ':' {
			return i, -1, false
		}
		i = skipSpace(b, i+1)
		if f := fieldOf(key, names); f >= 0 {
			return i, f, true
		}
		if i = scanValue(b, i, depth+1); i < 0 {
			return i, -1, false
		}
		if i, more, ok = afterElement(b, i, '}'); !ok || !more {
			return i, -1, ok
		}
	}
}

// afterElement reads what follows an object's member or an array's element at i: a comma
// (more, and i at the next one) or the closing close (i past it); anything else is not JSON.
func afterElement(b []byte, i int, close byte) (next int, more, ok bool) {
	if i = skipSpace(b, i); i >= len(b) {
		return i, false, false
	}
	switch b[i] {
	case ',':
		return skipSpace(b, i+1), true, true
	case close:
		return i + 1, false, true
	}
	return i, false, false
}

// fieldOf is the index in names of the field a key decodes into, as encoding/json matches it:
// the exact name, else one equal under case folding; -1 for none. Most keys of an event are
// none of the names: an ASCII key (every name is one) of another length than a name cannot
// fold to it, which spares the folding comparison of each (issue 31's relay).
func fieldOf(key []byte, names []string) int {
	for i, n := range names {
		if string(key) == n {
			return i
		}
	}
	ascii := isASCII(key)
	for i, n := range names {
		if ascii && len(key) != len(n) {
			continue
		}
		if strings.EqualFold(string(key), n) {
			return i
		}
	}
	return -1
}

// decodeSlice decodes the JSON array at b[i] into *s as json.Unmarshal decodes into a slice:
// each element into the slice's own (merged into what an earlier value left there, when a
// key repeats), the slice cut to the array's length, an empty array an empty slice and null
// a nil one; elem decodes one element, false for a wrong type or text that is not JSON.
func decodeSlice[T any](b []byte, i, depth int, s *[]T, elem func(b []byte, i, depth int, x *T) (int, bool)) (int, bool) {
	switch {
	case i >= len(b):
		return i, false
	case b[i] == 'n':
		end := scanLiteral(b, i, "null")
		if end < 0 {
			return i, false
		}
		*s = nil
		return end, true
	case b[i] != '[':
		return i, false
	case depth >= validMaxDepth:
		return i, false
	}
	a := (*s)[:0]
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		*s = []T{}
		return i + 1, true
	}
	for {
		if len(a) < cap(a) {
			a = a[:len(a)+1]
		} else {
			var zero T
			a = append(a, zero)
		}
		var ok, more bool
		if i, ok = elem(b, i, depth+1, &a[len(a)-1]); !ok {
			return i, false
		}
		if i, more, ok = afterElement(b, i, ']'); !ok || !more {
			if ok {
				*s = a
			}
			return i, ok
		}
	}
}

// decodeString reads a string into s; null leaves s as it was, and anything else is a wrong
// type.
func decodeString(b []byte, i int, s *string) (int, bool) {
	end, null, _, ok := stringAt(b, i)
	if ok && !null {
		*s = unquote(b[i:end])
	}
	return end, ok
}

// decodeText reads a string into t as decodeString does, in place when it can (chunkText).
func decodeText(b []byte, i int, t *chunkText) (int, bool) {
	end, null, esc, ok := stringAt(b, i)
	if ok && !null {
		*t = textAt(b[i:end], esc)
	}
	return end, ok
}

// decodeOptText reads a string into t as json.Unmarshal reads one into a *string: null makes
// it nil (see optText).
func decodeOptText(b []byte, i int, t *optText) (int, bool) {
	end, null, esc, ok := stringAt(b, i)
	switch {
	case !ok:
	case null:
		*t = nil
	default:
		*t = textAt(b[i:end], esc)
	}
	return end, ok
}

// textAt is the text of the string tok (quoted; esc: it has an escape): its own bytes when it
// has no escape and is valid UTF-8, else its unquoted copy. It is never nil.
func textAt(tok []byte, esc bool) []byte {
	s := tok[1 : len(tok)-1]
	if esc || !isASCII(s) && !utf8.Valid(s) {
		s = jsonscan.AppendUnquoted(nil, s)
	}
	return s
}

// stringAt reads the string or null at b[i] and returns the index past it, and whether the
// string has an escape; ok is false for any other value, or text that is not JSON.
func stringAt(b []byte, i int) (end int, null, esc, ok bool) {
	if i >= len(b) {
		return i, false, false, false
	}
	switch b[i] {
	case 'n':
		end = scanLiteral(b, i, "null")
		return end, true, false, end >= 0
	case '"':
		end, esc = scanStringEsc(b, i)
		return end, false, esc, end >= 0
	}
	return i, false, false, false
}

// decodeInt reads an integer into n as json.Unmarshal reads one into an int or an int64;
// null leaves n as it was, and anything else (a fraction, an exponent, a string, a number n
// cannot hold) is a wrong type.
func decodeInt[T int | int64](b []byte, i int, n *T) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	if b[i] == 'n' {
		end := scanLiteral(b, i, "null")
		return end, end >= 0
	}
	end := scanNumber(b, i)
	if end < 0 {
		return i, false
	}
	if digits := b[i:end]; len(digits) <= 18 && isDigits(digits) {
		// A small count or index, as nearly every one is: no overflow is possible, and
		// ParseInt's string costs more than the number.
		var x int64
		for _, c := range digits {
			x = x*10 + int64(c-'0')
		}
		if int64(T(x)) != x {
			return end, false
		}
		*n = T(x)
		return end, true
	}
	x, err := strconv.ParseInt(string(b[i:end]), 10, 64)
	if err != nil || int64(T(x)) != x {
		return end, false
	}
	*n = T(x)
	return end, true
}

// isDigits says whether s is only decimal digits.
func isDigits(s []byte) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// decodeBool reads true or false into v; null leaves v as it was, and anything else is a
// wrong type.
func decodeBool(b []byte, i int, v *bool) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	var end int
	switch b[i] {
	case 'n':
		end = scanLiteral(b, i, "null")
		return end, end >= 0
	case 't':
		end = scanLiteral(b, i, "true")
	case 'f':
		end = scanLiteral(b, i, "false")
	default:
		return i, false
	}
	if end >= 0 {
		*v = b[i] == 't'
	}
	return end, end >= 0
}

// decodeName reads a string into s as decodeString does, but one of known (an event's type,
// the model already seen) is not copied: every event names its type, and making a string of
// each was an allocation an event.
func decodeName(b []byte, i int, s *string, known []string) (int, bool) {
	end, null, esc, ok := stringAt(b, i)
	if !ok || null {
		return end, ok
	}
	// A name with an escape is none of known as it is written.
	for _, k := range known {
		if !esc && string(b[i+1:end-1]) == k {
			*s = k
			return end, true
		}
	}
	*s = unquote(b[i:end])
	return end, true
}

// decodePtr reads the value at b[i] as json.Unmarshal reads one into a pointer field p:
// null makes *p nil; anything else is read by fill into *p, which, when it was nil, becomes
// store, emptied by reset (nil: made zero) as a new value would be. A stream reads every
// event's pointer into the same store, so that reading one allocates nothing.
func decodePtr[T any](b []byte, i, depth int, p **T, store *T, reset func(*T), fill func(b []byte, i, depth int, x *T) (int, bool)) (int, bool) {
	if i < len(b) && b[i] == 'n' {
		end := scanLiteral(b, i, "null")
		if end >= 0 {
			*p = nil
		}
		return end, end >= 0
	}
	if *p == nil {
		if reset != nil {
			reset(store)
		} else {
			var zero T
			*store = zero
		}
		*p = store
	}
	return fill(b, i, depth, *p)
}

// decodeRare reads the value at b[i], depth arrays and objects deep, into v by reflection
// (decodeChecked), once scanValue has validated it: for members an answer carries once or a
// few times (a usage, a whole response, a tool's first input), where the reflective decoder
// costs nothing that counts.
func decodeRare(b []byte, i, depth int, v any) (int, bool) {
	end := scanValue(b, i, depth)
	return end, end >= 0 && decodeChecked(b[i:end], v) == nil
}
