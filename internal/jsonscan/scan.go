package jsonscan

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"strings"
)

// Check reports whether data is exactly one JSON value (RFC 8259, whitespace around it
// allowed) with no object repeating a key and no nesting deeper than opts.MaxDepth; the
// error, when there is one, is an *Error. Keys are compared as encoding/json would decode
// them, so "typ\u0065" repeats "type", and so do two keys that only invalid UTF-8 or a lone
// surrogate tell apart, since both decode to U+FFFD.
//
// It reads data once, iteratively (hostile nesting cannot grow the goroutine stack), and
// holds only the keys of the objects that are open, as offsets into data unless a key had to
// be decoded: memory grows with what is open, not with the text.
func Check(data []byte, opts Options) error {
	// Room for a typical request's open containers and keys up front, so that growing them
	// is not most of the allocations of a call.
	s := scanner{data: data, max: opts.MaxDepth, frames: make([]frame, 0, 16)}
	s.keys = make([]keyRef, 0, 64)
	if s.max <= 0 {
		s.max = DefaultMaxDepth
	}
	return s.run()
}

// scanner is the state of one Check.
type scanner struct {
	data   []byte
	max    int
	frames []frame // the open arrays and objects, outermost first
	keySet
}

// frame is one open array or object.
type frame struct {
	obj bool
	// n counts the elements or members begun so far, so n-1 indexes the current one.
	n int
	// keys is where this object's keys start in keySet.keys, and arena the length of
	// keySet.arena when it opened: both are truncated back when it closes.
	keys, arena int
	// set indexes this object's keys once there are too many to compare one by one. It
	// stays with the frame slot, cleared, for the next object at this depth.
	set map[uint64]int
}

// run checks the whole text. Its outer loop reads one value start; its inner loop closes
// what that value completes and finds where the next value starts.
func (s *scanner) run() error {
	data := s.data
	i := skipSpace(data, 0)
	for {
		if i >= len(data) {
			return s.fail(i, "unexpected end of input looking for a value")
		}
		var err error
		switch c := data[i]; c {
		case '{', '[':
			if len(s.frames) >= s.max {
				return s.fail(i, "nesting deeper than "+strconv.Itoa(s.max))
			}
			s.push(c == '{')
			i = skipSpace(data, i+1)
			if c == '{' && i < len(data) && data[i] == '}' || c == '[' && i < len(data) && data[i] == ']' {
				s.pop()
				i++
				break
			}
			if c == '{' {
				if i, err = s.member(i); err != nil {
					return err
				}
			} else {
				s.frames[len(s.frames)-1].n = 1
			}
			continue
		case '"':
			if i, err = s.str(i + 1); err != nil {
				return err
			}
		case 't':
			if i, err = s.literal(i, "true"); err != nil {
				return err
			}
		case 'f':
			if i, err = s.literal(i, "false"); err != nil {
				return err
			}
		case 'n':
			if i, err = s.literal(i, "null"); err != nil {
				return err
			}
		default:
			if c != '-' && (c < '0' || c > '9') {
				return s.fail(i, "invalid character "+quoteChar(c)+" looking for a value")
			}
			if i, err = s.number(i); err != nil {
				return err
			}
		}
		// A value ended at i: close the containers it completes, then step to the next value.
	next:
		for {
			i = skipSpace(data, i)
			if len(s.frames) == 0 {
				if i < len(data) {
					return s.fail(i, "invalid character "+quoteChar(data[i])+" after the top-level value")
				}
				return nil
			}
			f := &s.frames[len(s.frames)-1]
			if i >= len(data) {
				if f.obj {
					return s.fail(i, "unexpected end of input in an object")
				}
				return s.fail(i, "unexpected end of input in an array")
			}
			switch c := data[i]; {
			case c == ',':
				i = skipSpace(data, i+1)
				if f.obj {
					if i, err = s.member(i); err != nil {
						return err
					}
				} else {
					f.n++
				}
				break next
			case c == '}' && f.obj, c == ']' && !f.obj:
				s.pop()
				i++
			case f.obj:
				return s.fail(i, "invalid character "+quoteChar(c)+" after an object member")
			default:
				return s.fail(i, "invalid character "+quoteChar(c)+" after an array element")
			}
		}
	}
}

func (s *scanner) push(obj bool) {
	if len(s.frames) < cap(s.frames) {
		s.frames = s.frames[:len(s.frames)+1]
	} else {
		s.frames = append(s.frames, frame{})
	}
	f := &s.frames[len(s.frames)-1]
	f.obj, f.n, f.keys, f.arena = obj, 0, len(s.keys), len(s.arena)
}

func (s *scanner) pop() {
	f := &s.frames[len(s.frames)-1]
	if f.obj {
		s.keys, s.arena = s.keys[:f.keys], s.arena[:f.arena]
		if len(f.set) > 0 {
			clear(f.set)
		}
	}
	s.frames = s.frames[:len(s.frames)-1]
}

// member reads an object member's key and colon at i, records the key, and returns where the
// member's value starts.
func (s *scanner) member(i int) (int, error) {
	data := s.data
	if i >= len(data) {
		return i, s.failAt(i, len(s.frames)-1, "unexpected end of input looking for an object key")
	}
	if data[i] != '"' {
		return i, s.failAt(i, len(s.frames)-1, "invalid character "+quoteChar(data[i])+" looking for an object key")
	}
	start := i
	end, plain, err := s.keyStr(i + 1)
	if err != nil {
		// The key is not the object's current member yet: the path is the object's.
		e := err.(*Error)
		return i, s.failAt(int(e.Offset), len(s.frames)-1, e.Msg)
	}
	f := &s.frames[len(s.frames)-1]
	if k, dup := s.add(f, data, start+1, end-1, plain); dup {
		// The path is the object's: its own frame holds no current member yet.
		return i, s.failAt(start, len(s.frames)-1, "duplicate key "+quoteKey(k))
	}
	f.n++
	i = skipSpace(data, end)
	if i >= len(data) {
		return i, s.fail(i, "unexpected end of input after an object key")
	}
	if data[i] != ':' {
		return i, s.fail(i, "invalid character "+quoteChar(data[i])+" after an object key")
	}
	return skipSpace(data, i+1), nil
}

func (s *scanner) literal(i int, lit string) (int, error) {
	data := s.data
	for j := 0; j < len(lit); j++ {
		if i+j >= len(data) {
			return i, s.fail(i+j, "unexpected end of input in literal "+lit)
		}
		if data[i+j] != lit[j] {
			return i, s.fail(i+j, "invalid character "+quoteChar(data[i+j])+" in literal "+lit)
		}
	}
	return i + len(lit), nil
}

// number reads the number starting at i and returns where it ends; what follows it is the
// caller's to judge, as "01" is a 0 followed by garbage.
func (s *scanner) number(i int) (int, error) {
	data := s.data
	if data[i] == '-' {
		i++
	}
	if i >= len(data) {
		return i, s.fail(i, "unexpected end of input in a number")
	}
	switch c := data[i]; {
	case c == '0':
		i++
	case '1' <= c && c <= '9':
		i = skipDigits(data, i+1)
	default:
		return i, s.fail(i, "invalid character "+quoteChar(c)+" in a number")
	}
	if i < len(data) && data[i] == '.' {
		if i+1 >= len(data) || !isDigit(data[i+1]) {
			return i, s.failNumber(i + 1)
		}
		i = skipDigits(data, i+2)
	}
	if i < len(data) && data[i]|0x20 == 'e' {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= len(data) || !isDigit(data[i]) {
			return i, s.failNumber(i)
		}
		i = skipDigits(data, i+1)
	}
	return i, nil
}

func (s *scanner) failNumber(i int) error {
	if i >= len(s.data) {
		return s.fail(i, "unexpected end of input in a number")
	}
	return s.fail(i, "invalid character "+quoteChar(s.data[i])+" in a number")
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func skipDigits(data []byte, i int) int {
	for i < len(data) && isDigit(data[i]) {
		i++
	}
	return i
}

// skipSpace returns the offset of the first byte at or after i that is not JSON whitespace.
func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// Word-at-a-time string scanning: a chat request is mostly string content, so the loop
// over it decides the speed of Check. Each test flags the bytes of a little-endian word
// that are a quote, a backslash or a control character; borrows can only flag bytes above
// a true hit, so the lowest flag is exact.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

func special(x uint64) uint64 {
	q := x ^ (ones * '"')
	b := x ^ (ones * '\\')
	return ((q-ones)&^q | (b-ones)&^b | (x-ones*0x20)&^x) & highs
}

// str reads string content from i, just past the opening quote, and returns the offset just
// past the closing quote.
func (s *scanner) str(i int) (int, error) {
	data := s.data
	for {
		for i+8 <= len(data) {
			if m := special(binary.LittleEndian.Uint64(data[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(data) {
			return i, s.fail(i, "unexpected end of input in a string")
		}
		switch c := data[i]; {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			var err error
			if i, err = s.escape(i); err != nil {
				return i, err
			}
		case c < 0x20:
			return i, s.fail(i, "control character "+quoteChar(c)+" in a string")
		default:
			i++
		}
	}
}

// keyStr is str for a key: it also reports whether the key's bytes are its decoded form
// (no escape, nothing outside ASCII), the common case, which needs no copy.
func (s *scanner) keyStr(i int) (end int, plain bool, err error) {
	data := s.data
	var acc uint64
	esc := false
	for {
		for i+8 <= len(data) {
			// Bytes past a special one may count too: a false "not plain" only costs a
			// utf8.Valid over the key.
			x := binary.LittleEndian.Uint64(data[i:])
			acc |= x
			if m := special(x); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(data) {
			return i, false, s.fail(i, "unexpected end of input in an object key")
		}
		switch c := data[i]; {
		case c == '"':
			return i + 1, !esc && acc&highs == 0, nil
		case c == '\\':
			esc = true
			if i, err = s.escape(i); err != nil {
				return i, false, err
			}
		case c < 0x20:
			return i, false, s.fail(i, "control character "+quoteChar(c)+" in an object key")
		default:
			acc |= uint64(c)
			i++
		}
	}
}

// escape checks the escape sequence at i and returns the offset after it.
func (s *scanner) escape(i int) (int, error) {
	data := s.data
	if i+1 >= len(data) {
		return i, s.fail(i+1, "unexpected end of input in a string escape")
	}
	switch data[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return i + 2, nil
	case 'u':
		for j := i + 2; j < i+6; j++ {
			if j >= len(data) {
				return i, s.fail(j, "unexpected end of input in a string escape")
			}
			if hexVal(data[j]) < 0 {
				return i, s.fail(j, "invalid character "+quoteChar(data[j])+" in a \\u escape")
			}
		}
		return i + 6, nil
	}
	return i, s.fail(i+1, "invalid character "+quoteChar(data[i+1])+" in a string escape")
}

func hexVal(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return int(c - 'A' + 10)
	}
	return -1
}

// fail makes the error of a problem at offset i inside the innermost value being read.
func (s *scanner) fail(i int, msg string) error {
	return s.failAt(i, len(s.frames), msg)
}

// failAt makes the error of a problem at offset i, with the path through the current
// members of the outermost depth frames.
func (s *scanner) failAt(i, depth int, msg string) error {
	var b strings.Builder
	for _, f := range s.frames[:depth] {
		if f.n == 0 {
			break
		}
		if f.obj {
			appendSegment(&b, s.key(f.keys+f.n-1))
		} else {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(f.n - 1))
			b.WriteByte(']')
		}
	}
	return &Error{Offset: int64(i), Path: b.String(), Msg: msg}
}
