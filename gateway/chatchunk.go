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
	return decodeObject(data, chunkNames, func(f int, v []byte) bool {
		switch f {
		case 0:
			return decodeString(v, &c.Model)
		case 1:
			// Once a stream: the reflective decoder is cheap enough here.
			return decodeChecked(v, &c.Usage) == nil
		default:
			return decodeSlice(v, &c.Choices, decodeChatChoice)
		}
	})
}

func decodeChatChoice(data []byte, c *chatChoice) bool {
	return decodeObject(data, choiceNames, func(f int, v []byte) bool {
		switch f {
		case 0:
			return decodeInt(v, &c.Index)
		case 1:
			return decodeString(v, &c.FinishReason)
		default:
			return decodeObject(v, deltaNames, func(f int, v []byte) bool {
				d := &c.Delta
				switch f {
				case 0:
					return decodeString(v, &d.Content)
				case 1:
					return decodeString(v, &d.Refusal)
				case 2:
					return decodeString(v, &d.ReasoningContent)
				default:
					return decodeSlice(v, &d.ToolCalls, decodeChatToolDelta)
				}
			})
		}
	})
}

func decodeChatToolDelta(data []byte, t *chatToolDelta) bool {
	return decodeObject(data, toolNames, func(f int, v []byte) bool {
		switch f {
		case 0:
			return decodeInt(v, &t.Index)
		case 1:
			return decodeString(v, &t.ID)
		default:
			return decodeObject(v, functionNames, func(f int, v []byte) bool {
				if f == 0 {
					return decodeString(v, &t.Function.Name)
				}
				return decodeString(v, &t.Function.Arguments)
			})
		}
	})
}

// decodeObject calls set with the field number (the index in names) and the value of each
// member of the valid JSON object data that is one of names, in order, until set returns
// false. null is a struct left as it was; anything else but an object is a wrong type.
func decodeObject(data []byte, names []string, set func(field int, val []byte) bool) bool {
	if data = bytes.TrimSpace(data); len(data) == 0 {
		return false
	}
	if data[0] == 'n' {
		return true
	}
	if data[0] != '{' {
		return false
	}
	i := skipSpace(data, 1)
	for i < len(data) && data[i] == '"' {
		end := skipString(data, i)
		key := data[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			key = []byte(unquote(data[i:end]))
		}
		i = skipSpace(data, skipSpace(data, end)+1) // past the colon
		vend := skipValue(data, i)
		if vend == i {
			return false // not JSON: never so past validJSON
		}
		if f := fieldOf(key, names); f >= 0 && !set(f, data[i:vend]) {
			return false
		}
		if i = skipSpace(data, vend); i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return true
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
func decodeSlice[T any](v []byte, s *[]T, elem func(e []byte, x *T) bool) bool {
	switch v[0] {
	case 'n':
		*s = nil
		return true
	case '[':
	default:
		return false
	}
	a, ok := (*s)[:0], true
	eachElement(v, func(_ int, e []byte) bool {
		if len(a) < cap(a) {
			a = a[:len(a)+1]
		} else {
			var zero T
			a = append(a, zero)
		}
		ok = elem(e, &a[len(a)-1])
		return ok
	})
	if len(a) == 0 {
		a = []T{}
	}
	*s = a
	return ok
}

// decodeString decodes the JSON string v into s; null leaves s as it was, and anything else
// is a wrong type.
func decodeString(v []byte, s *string) bool {
	switch v[0] {
	case 'n':
		return true
	case '"':
		*s = unquote(v)
		return true
	}
	return false
}

// decodeInt decodes the JSON integer v into n as json.Unmarshal decodes into an int; null
// leaves n as it was, and anything else (a fraction, an exponent, a string) is a wrong type.
func decodeInt(v []byte, n *int) bool {
	if v[0] == 'n' {
		return true
	}
	if jsonKind(v) != "number" {
		return false
	}
	x, err := strconv.ParseInt(string(v), 10, strconv.IntSize)
	if err != nil {
		return false
	}
	*n = int(x)
	return true
}
