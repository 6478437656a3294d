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
	i, f, ok := objectField(data, skipSpace(data, 0), 0, chunkNames, true)
	for ok && f >= 0 {
		switch f {
		case 0:
			i, ok = decodeString(data, i, &c.Model)
		case 1:
			i, ok = decodeRare(data, i, 1, &c.Usage)
		default:
			i, ok = decodeSlice(data, i, 1, &c.Choices, decodeChatChoice)
		}
		if ok {
			i, f, ok = objectField(data, i, 0, chunkNames, false)
		}
	}
	return ok && skipSpace(data, i) == len(data)
}

func decodeChatChoice(b []byte, i, depth int, c *chatChoice) (int, bool) {
	i, f, ok := objectField(b, i, depth, choiceNames, true)
	for ok && f >= 0 {
		switch f {
		case 0:
			i, ok = decodeInt(b, i, &c.Index)
		case 1:
			i, ok = decodeString(b, i, &c.FinishReason)
		default:
			i, ok = decodeChatDelta(b, i, depth+1, &c.Delta)
		}
		if ok {
			i, f, ok = objectField(b, i, depth, choiceNames, false)
		}
	}
	return i, ok
}

func decodeChatDelta(b []byte, i, depth int, d *chatDelta) (int, bool) {
	i, f, ok := objectField(b, i, depth, deltaNames, true)
	for ok && f >= 0 {
		switch f {
		case 0:
			i, ok = decodeText(b, i, &d.Content)
		case 1:
			i, ok = decodeText(b, i, &d.Refusal)
		case 2:
			i, ok = decodeText(b, i, &d.ReasoningContent)
		default:
			i, ok = decodeSlice(b, i, depth+1, &d.ToolCalls, decodeChatToolDelta)
		}
		if ok {
			i, f, ok = objectField(b, i, depth, deltaNames, false)
		}
	}
	return i, ok
}

func decodeChatToolDelta(b []byte, i, depth int, t *chatToolDelta) (int, bool) {
	i, f, ok := objectField(b, i, depth, toolNames, true)
	for ok && f >= 0 {
		switch f {
		case 0:
			i, ok = decodeInt(b, i, &t.Index)
		case 1:
			i, ok = decodeString(b, i, &t.ID)
		default:
			i, ok = decodeChatFunction(b, i, depth+1, &t.Function)
		}
		if ok {
			i, f, ok = objectField(b, i, depth, toolNames, false)
		}
	}
	return i, ok
}

func decodeChatFunction(b []byte, i, depth int, fn *chatFunctionDelta) (int, bool) {
	i, f, ok := objectField(b, i, depth, functionNames, true)
	for ok && f >= 0 {
		if f == 0 {
			i, ok = decodeString(b, i, &fn.Name)
		} else {
			i, ok = decodeText(b, i, &fn.Arguments)
		}
		if ok {
			i, f, ok = objectField(b, i, depth, functionNames, false)
		}
	}
	return i, ok
}
