package gateway

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
			return decodeRare(data, i, 1, &c.Usage)
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
