package gateway

import (
	"bytes"
	"encoding/binary"
)

// The grammar of JSON as encoding/json judges it, for the one-pass decoders of streamed
// events (jsondecode.go) to validate as they read: json.Valid's scanner, a function call per
// byte, was the largest part of relaying a stream of small events (issue 31); this one walks
// the text once and skips a string's plain bytes eight at a time. It accepts what json.Valid
// accepts: the same grammar, any byte from 0x20 up inside a string (encoding/json checks no
// UTF-8 there either), and at most validMaxDepth nested arrays and objects. Its tests check
// it against json.Valid on hostile input and by fuzzing.

// scanValue is the index just past the JSON value that starts at b[i], or -1 when none does;
// depth is the number of arrays and objects the value sits in, which count towards
// validMaxDepth. A decoder that reads some members of an object itself skips the others with
// it, so that it validates as it reads (decodeChatChunk).
func scanValue(b []byte, i, depth int) int {
	// The open arrays and objects, innermost last: '[' or '{'. Events nest a few levels.
	var buf [32]byte
	stack := buf[:0]
	for {
		// A value starts at i.
		if i >= len(b) {
			return -1
		}
		switch c := b[i]; c {
		case '{', '[':
			if depth+len(stack) >= validMaxDepth {
				return -1
			}
			stack = append(stack, c)
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				if i = scanKey(b, i); i < 0 {
					return -1
				}
			}
			continue
		case '"':
			i = scanString(b, i)
		case 't':
			i = scanLiteral(b, i, "true")
		case 'f':
			i = scanLiteral(b, i, "false")
		case 'n':
			i = scanLiteral(b, i, "null")
		default:
			i = scanNumber(b, i)
		}
		if i < 0 {
			return -1
		}
		// Past a value: close what it ends, up to the separator before the next value.
	after:
		for {
			if len(stack) == 0 {
				return i
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return -1
			}
			top := stack[len(stack)-1]
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
				if top == '{' {
					if i = scanKey(b, i); i < 0 {
						return -1
					}
				}
				break after
			case top + 2:
				stack = stack[:len(stack)-1]
				i++
			default:
				return -1
			}
		}
	}
}

// validMaxDepth is encoding/json's limit of nested arrays and objects, which json.Valid enforces.
const validMaxDepth = 10000

// scanKey reads an object's key and its colon at i; it returns the index of the value after
// them (whitespace skipped), or -1 when there is no key.
func scanKey(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = scanString(b, i); i < 0 {
		return -1
	}
	if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipSpace(b, i+1)
}

// scanString is the index just past the string whose opening quote is at i, or -1 when it is
// not a JSON string (unterminated, a control byte, or an escape JSON has not).
func scanString(b []byte, i int) int {
	end, _ := scanStringEsc(b, i)
	return end
}

// scanStringEsc is scanString, and whether the string has an escape: a decoder reads a
// string without one in place, where looking for a backslash again cost a call per key.
func scanStringEsc(b []byte, i int) (end int, esc bool) {
	i++
	for {
		// Eight bytes at a time while none of them ends the plain text, then byte by byte.
		for i+8 <= len(b) && !hasStringSpecial(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		for i < len(b) && b[i] >= 0x20 && b[i] != '"' && b[i] != '\\' {
			i++
		}
		if i >= len(b) {
			return -1, esc
		}
		switch b[i] {
		case '"':
			return i + 1, esc
		case '\\':
			esc = true
			if i+1 >= len(b) {
				return -1, esc
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return -1, esc
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return -1, esc
					}
				}
				i += 6
			default:
				return -1, esc
			}
		default: // a control byte
			return -1, esc
		}
	}
}

// hasStringSpecial says whether any of the eight bytes in x is a quote, a backslash or a
// control byte (under 0x20): the bytes a string's plain text cannot hold. Each test is the
// classic has-a-zero-byte one (a byte's borrow can flag a byte above it, never make a word
// with no such byte look as if it had one), so the answer is exact for the word.
func hasStringSpecial(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	quote := x ^ (ones * '"')
	backslash := x ^ (ones * '\\')
	return ((quote-ones)&^quote|(backslash-ones)&^backslash|(x-ones*0x20)&^x)&highs != 0
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// scanLiteral is the index just past lit at i, or -1 when lit is not there.
func scanLiteral(b []byte, i int, lit string) int {
	if !bytes.HasPrefix(b[i:], []byte(lit)) {
		return -1
	}
	return i + len(lit)
}

// scanNumber is the index just past the JSON number at i, or -1 when none starts there. What
// follows it is the caller's to check (a delimiter, or the end).
func scanNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = skipDigits(b, i+1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := skipDigits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := skipDigits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}
