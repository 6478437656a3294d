package gateway

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/skillfleet/skillfleet/internal/jsonscan"
)

// chatChunk is what the gateway reads of a Chat Completions stream chunk. Its tags say how
// json.Unmarshal would fill it, which decodeChatChunk does by hand: a long answer comes in tens
// of thousands of chunks, and decoding each by reflection was most of the relay's time
// (issue 31).
type chatChunk struct {
	Model   string       `json:"model"`
	Usage   *openAIUsage `json:"usage"`
	Choices []chatChoice `json:"choices"`
}

type chatChoice struct {
	Index        int       `json:"index"`
	FinishReason string    `json:"finish_reason"`
	Delta        chatDelta `json:"delta"`
}

type chatDelta struct {
	Content          chunkText       `json:"content"`
	Refusal          chunkText       `json:"refusal"`
	ReasoningContent chunkText       `json:"reasoning_content"`
	ToolCalls        []chatToolDelta `json:"tool_calls"`
}

type chatToolDelta struct {
	Index    int               `json:"index"`
	ID       string            `json:"id"`
	Function chatFunctionDelta `json:"function"`
}

type chatFunctionDelta struct {
	Name      string    `json:"name"`
	Arguments chunkText `json:"arguments"`
}

// chunkText is a JSON string's text, read in place by decodeChatChunk: the chunk's own bytes
// when the string has no escape and is valid UTF-8 (as a delta's text nearly always is), so
// that a long answer's every delta is not made a string only to be copied into the answer.
// It is valid only until the stream reads on. json.Unmarshal reads it as a string, null
// leaving it as it was, as it reads a string field.
type chunkText []byte

// UnmarshalJSON reads a JSON string (or null, which changes nothing).
func (t *chunkText) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*t = chunkText(s)
	return nil
}

// The JSON names of each type's fields, in the order decodeChatChunk's switches number them.
var (
	chunkNames    = []string{"model", "usage", "choices"}
	choiceNames   = []string{"index", "finish_reason", "delta"}
	deltaNames    = []string{"content", "refusal", "reasoning_content", "tool_calls"}
	toolNames     = []string{"index", "id", "function"}
	functionNames = []string{"name", "arguments"}
)

// decodeChatChunk is json.Unmarshal(data, c) == nil, into a zero c, or one whose Choices are
// empty and zero up to their capacity (a buffer reused from chunk to chunk): the same fields
// matched the same way (exactly, else case-insensitively; a repeated one's last value wins, a
// repeated object's fields merge), null leaving a value as it was, any value of a wrong type
// making the whole chunk unreadable (false), as json.Unmarshal's error does for its caller,
// and any text that is not one JSON value unreadable too. It validates as it reads, in one
// pass: validating every event first and then decoding it read each chunk twice, the larger
// part of relaying a long answer (issue 31). Its tests check it against json.Unmarshal.
func decodeChatChunk(data []byte, c *chatChunk) bool {
	end, ok := decodeObject(data, skipSpace(data, 0), 0, chunkNames, func(f, i int) (int, bool) {
		switch f {
		case 0:
			return decodeString(data, i, &c.Model)
		case 1:
			// Once a stream: the reflective decoder is cheap enough here.
			end := scanValue(data, i, 1)
			return end, end >= 0 && decodeChecked(data[i:end], &c.Usage) == nil
		default:
			return decodeSlice(data, i, 1, &c.Choices, decodeChatChoice)
		}
	})
	return ok && skipSpace(data, end) == len(data)
}

func decodeChatChoice(b []byte, i, depth int, c *chatChoice) (int, bool) {
	return decodeObject(b, i, depth, choiceNames, func(f, i int) (int, bool) {
		switch f {
		case 0:
			return decodeInt(b, i, &c.Index)
		case 1:
			return decodeString(b, i, &c.FinishReason)
		default:
			d := &c.Delta
			return decodeObject(b, i, depth+1, deltaNames, func(f, i int) (int, bool) {
				switch f {
				case 0:
					return decodeText(b, i, &d.Content)
				case 1:
					return decodeText(b, i, &d.Refusal)
				case 2:
					return decodeText(b, i, &d.ReasoningContent)
				default:
					return decodeSlice(b, i, depth+2, &d.ToolCalls, decodeChatToolDelta)
				}
			})
		}
	})
}

func decodeChatToolDelta(b []byte, i, depth int, t *chatToolDelta) (int, bool) {
	return decodeObject(b, i, depth, toolNames, func(f, i int) (int, bool) {
		switch f {
		case 0:
			return decodeInt(b, i, &t.Index)
		case 1:
			return decodeString(b, i, &t.ID)
		default:
			return decodeObject(b, i, depth+1, functionNames, func(f, i int) (int, bool) {
				if f == 0 {
					return decodeString(b, i, &t.Function.Name)
				}
				return decodeText(b, i, &t.Function.Arguments)
			})
		}
	})
}

// The decoders below read the value that starts at b[i] (no whitespace before it), depth
// arrays and objects deep, and return the index just past it, and false for text that is not
// JSON or a value of the wrong type (the index is then of no use: the chunk is unreadable).

// decodeObject reads an object as json.Unmarshal reads one into a struct: set reads the value
// at i of each member whose key is one of names (field: its index there) and returns the
// index past it; the other members are validated and skipped. null is a struct left as it
// was.
func decodeObject(b []byte, i, depth int, names []string, set func(field, i int) (int, bool)) (int, bool) {
	switch {
	case i >= len(b):
		return i, false
	case b[i] == 'n':
		end := scanLiteral(b, i, "null")
		return end, end >= 0
	case b[i] != '{':
		return i, false
	case depth >= validMaxDepth:
		return i, false
	}
	if i = skipSpace(b, i+1); i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, false
		}
		end := scanString(b, i)
		if end < 0 {
			return i, false
		}
		key := b[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			key = []byte(unquote(b[i:end]))
		}
		if i = skipSpace(b, end); i >= len(b) || b[i] != ':' {
			return i, false
		}
		i = skipSpace(b, i+1)
		var ok bool
		if f := fieldOf(key, names); f >= 0 {
			i, ok = set(f, i)
		} else {
			i = scanValue(b, i, depth+1)
			ok = i >= 0
		}
		if !ok {
			return i, false
		}
		var more bool
		if i, more, ok = afterElement(b, i, '}'); !ok || !more {
			return i, ok
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
// the exact name, else one equal under case folding; -1 for none.
func fieldOf(key []byte, names []string) int {
	for i, n := range names {
		if string(key) == n {
			return i
		}
	}
	for i, n := range names {
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
	end, null, ok := stringAt(b, i)
	if ok && !null {
		*s = unquote(b[i:end])
	}
	return end, ok
}

// decodeText reads a string into t as decodeString does, in place when it can (chunkText).
func decodeText(b []byte, i int, t *chunkText) (int, bool) {
	end, null, ok := stringAt(b, i)
	if ok && !null {
		s := b[i+1 : end-1]
		if bytes.IndexByte(s, '\\') >= 0 || !isASCII(s) && !utf8.Valid(s) {
			s = jsonscan.AppendUnquoted(nil, s)
		}
		*t = s
	}
	return end, ok
}

// stringAt reads the string or null at b[i] and returns the index past it; ok is false for
// any other value, or text that is not JSON.
func stringAt(b []byte, i int) (end int, null, ok bool) {
	if i >= len(b) {
		return i, false, false
	}
	switch b[i] {
	case 'n':
		end = scanLiteral(b, i, "null")
		return end, true, end >= 0
	case '"':
		end = scanString(b, i)
		return end, false, end >= 0
	}
	return i, false, false
}

// decodeInt reads an integer into n as json.Unmarshal reads one into an int; null leaves n as
// it was, and anything else (a fraction, an exponent, a string) is a wrong type.
func decodeInt(b []byte, i int, n *int) (int, bool) {
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
	x, err := strconv.ParseInt(string(b[i:end]), 10, strconv.IntSize)
	if err != nil {
		return end, false
	}
	*n = int(x)
	return end, true
}
