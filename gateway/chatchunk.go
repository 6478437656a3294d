package gateway

import (
	"bytes"
	"strconv"
	"strings"
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
	Content          string          `json:"content"`
	Refusal          string          `json:"refusal"`
	ReasoningContent string          `json:"reasoning_content"`
	ToolCalls        []chatToolDelta `json:"tool_calls"`
}

type chatToolDelta struct {
	Index    int               `json:"index"`
	ID       string            `json:"id"`
	Function chatFunctionDelta `json:"function"`
}

type chatFunctionDelta struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// The JSON names of each type's fields, in the order decodeChatChunk's switches number them.
var (
	chunkNames    = []string{"model", "usage", "choices"}
	choiceNames   = []string{"index", "finish_reason", "delta"}
	deltaNames    = []string{"content", "refusal", "reasoning_content", "tool_calls"}
	toolNames     = []string{"index", "id", "function"}
	functionNames = []string{"name", "arguments"}
)

// decodeChatChunk is json.Unmarshal(data, c) == nil for data that validJSON accepted, into a
// zero c, or one whose Choices are empty and zero up to their capacity (a buffer reused from
// chunk to chunk): the same fields matched the same way (exactly, else
// case-insensitively; a repeated one's last value wins, a repeated object's fields merge),
// null leaving a value as it was, and any value of a wrong type making the whole chunk
// unreadable (false), as json.Unmarshal's error does for its caller. Its tests check it
// against json.Unmarshal.
func decodeChatChunk(data []byte, c *chatChunk) bool {
	// Each value is read where it starts and gives the index past it: one pass over the
	// chunk, where skipping a member before reading it read its text once per level.
	_, ok := decodeObject(data, skipSpace(data, 0), chunkNames, func(f, i int) (int, bool) {
		switch f {
		case 0:
			return decodeString(data, i, &c.Model)
		case 1:
			// Once a stream: the reflective decoder is cheap enough here.
			end := skipValue(data, i)
			return end, decodeChecked(data[i:end], &c.Usage) == nil
		default:
			return decodeSlice(data, i, &c.Choices, decodeChatChoice)
		}
	})
	return ok
}

func decodeChatChoice(b []byte, i int, c *chatChoice) (int, bool) {
	return decodeObject(b, i, choiceNames, func(f, i int) (int, bool) {
		switch f {
		case 0:
			return decodeInt(b, i, &c.Index)
		case 1:
			return decodeString(b, i, &c.FinishReason)
		default:
			d := &c.Delta
			return decodeObject(b, i, deltaNames, func(f, i int) (int, bool) {
				switch f {
				case 0:
					return decodeString(b, i, &d.Content)
				case 1:
					return decodeString(b, i, &d.Refusal)
				case 2:
					return decodeString(b, i, &d.ReasoningContent)
				default:
					return decodeSlice(b, i, &d.ToolCalls, decodeChatToolDelta)
				}
			})
		}
	})
}

func decodeChatToolDelta(b []byte, i int, t *chatToolDelta) (int, bool) {
	return decodeObject(b, i, toolNames, func(f, i int) (int, bool) {
		switch f {
		case 0:
			return decodeInt(b, i, &t.Index)
		case 1:
			return decodeString(b, i, &t.ID)
		default:
			return decodeObject(b, i, functionNames, func(f, i int) (int, bool) {
				if f == 0 {
					return decodeString(b, i, &t.Function.Name)
				}
				return decodeString(b, i, &t.Function.Arguments)
			})
		}
	})
}

// The decoders below read the value that starts at b[i] (no whitespace before it) in text
// that validJSON accepted, and return the index just past it and false for a value of the
// wrong type (the index is then of no use: the chunk is unreadable).

// decodeObject reads an object as json.Unmarshal reads one into a struct: set reads the value
// at i of each member whose key is one of names (field: its index there) and returns the
// index past it; the other members are skipped. null is a struct left as it was.
func decodeObject(b []byte, i int, names []string, set func(field, i int) (int, bool)) (int, bool) {
	switch {
	case i >= len(b):
		return i, false
	case b[i] == 'n':
		return i + 4, true
	case b[i] != '{':
		return i, false
	}
	i = skipSpace(b, i+1)
	for i < len(b) && b[i] == '"' {
		end := skipString(b, i)
		key := b[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			key = []byte(unquote(b[i:end]))
		}
		i = skipSpace(b, skipSpace(b, end)+1) // past the colon
		if f := fieldOf(key, names); f >= 0 {
			var ok bool
			if i, ok = set(f, i); !ok {
				return i, false
			}
		} else {
			i = skipValue(b, i)
		}
		if i = skipSpace(b, i); i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return i + 1, true // past the brace
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

// decodeSlice decodes the valid JSON array v into *s as json.Unmarshal decodes into a slice:
// each element into the slice's own (merged into what an earlier value left there, when a
// key repeats), the slice cut to the array's length, an empty array an empty slice and null
// a nil one; elem decodes one element, false for a wrong type.
func decodeSlice[T any](b []byte, i int, s *[]T, elem func(b []byte, i int, x *T) (int, bool)) (int, bool) {
	switch b[i] {
	case 'n':
		*s = nil
		return i + 4, true
	case '[':
	default:
		return i, false
	}
	a := (*s)[:0]
	i = skipSpace(b, i+1)
	for i < len(b) && b[i] != ']' {
		if len(a) < cap(a) {
			a = a[:len(a)+1]
		} else {
			var zero T
			a = append(a, zero)
		}
		var ok bool
		if i, ok = elem(b, i, &a[len(a)-1]); !ok {
			return i, false
		}
		if i = skipSpace(b, i); i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	if len(a) == 0 {
		a = []T{}
	}
	*s = a
	return i + 1, true // past the bracket
}

// decodeString reads a string into s; null leaves s as it was, and anything else is a wrong
// type.
func decodeString(b []byte, i int, s *string) (int, bool) {
	switch b[i] {
	case 'n':
		return i + 4, true
	case '"':
		end := skipString(b, i)
		*s = unquote(b[i:end])
		return end, true
	}
	return i, false
}

// decodeInt reads an integer into n as json.Unmarshal reads one into an int; null leaves n as
// it was, and anything else (a fraction, an exponent, a string) is a wrong type.
func decodeInt(b []byte, i int, n *int) (int, bool) {
	if b[i] == 'n' {
		return i + 4, true
	}
	end := skipValue(b, i)
	if jsonKind(b[i:end]) != "number" {
		return end, false
	}
	x, err := strconv.ParseInt(string(b[i:end]), 10, strconv.IntSize)
	if err != nil {
		return end, false
	}
	*n = int(x)
	return end, true
}
