package gateway

// The JSON names of each type's fields, in the order decodeGeminiChunk numbers them.
var (
	geminiChunkNames     = []string{"candidates", "promptFeedback", "usageMetadata", "modelVersion"}
	geminiCandidateNames = []string{"content", "finishReason"}
	geminiContentNames   = []string{"parts"}
	geminiPartNames      = []string{"text", "thought", "functionCall", "functionResponse"}
	geminiUsageNames     = []string{"promptTokenCount", "candidatesTokenCount", "cachedContentTokenCount", "thoughtsTokenCount", "toolUsePromptTokenCount"}
)

// decodeGeminiChunk is json.Unmarshal(data, r) == nil, read in one pass as decodeChatChunk
// reads a chunk (see there), into a zero r or one whose Candidates are empty and, up to
// their capacity, zero but for each one's content (its parts' array, which is emptied when
// it is used). The usage, when the chunk has one, is read into usage; model is the model the
// stream has seen, which modelVersion is read as without a copy. The members a stream
// carries once or never (a function call whole, a function's response, promptFeedback)
// are read by reflection (decodeRare). Its tests check it against json.Unmarshal.
func decodeGeminiChunk(data []byte, r *geminiResponse, usage *geminiUsage, model string) bool {
	end, ok := decodeObject(data, skipSpace(data, 0), 0, geminiChunkNames, func(f, i int) (int, bool) {
		switch f {
		case 0:
			return decodeSlice(data, i, 1, &r.Candidates, decodeGeminiCandidate)
		case 1:
			return decodeRare(data, i, 1, &r.PromptFeedback)
		case 2:
			return decodePtr(data, i, 1, &r.UsageMetadata, usage, nil, decodeGeminiUsage)
		default:
			return decodeName(data, i, &r.ModelVersion, []string{model})
		}
	})
	return ok && skipSpace(data, end) == len(data)
}

func decodeGeminiCandidate(b []byte, i, depth int, c *geminiCandidate) (int, bool) {
	return decodeObject(b, i, depth, geminiCandidateNames, func(f, i int) (int, bool) {
		if f == 1 {
			return decodeString(b, i, &c.FinishReason)
		}
		return decodePtr(b, i, depth+1, &c.Content, &c.content, emptyContent, decodeGeminiContent)
	})
}

// emptyContent makes a candidate's kept content new: no parts, its array zero throughout.
func emptyContent(c *geminiAnswerContent) {
	parts := c.Parts[:cap(c.Parts)]
	clear(parts)
	*c = geminiAnswerContent{Parts: parts[:0]}
}

func decodeGeminiContent(b []byte, i, depth int, c *geminiAnswerContent) (int, bool) {
	return decodeObject(b, i, depth, geminiContentNames, func(_, i int) (int, bool) {
		return decodeSlice(b, i, depth+1, &c.Parts, decodeGeminiPart)
	})
}

func decodeGeminiPart(b []byte, i, depth int, p *geminiAnswerPart) (int, bool) {
	return decodeObject(b, i, depth, geminiPartNames, func(f, i int) (int, bool) {
		switch f {
		case 0:
			return decodeOptText(b, i, &p.Text)
		case 1:
			return decodeBool(b, i, &p.Thought)
		case 2:
			return decodeRare(b, i, depth+1, &p.FunctionCall)
		default:
			return decodeRare(b, i, depth+1, &p.FunctionResponse)
		}
	})
}

func decodeGeminiUsage(b []byte, i, depth int, u *geminiUsage) (int, bool) {
	return decodeObject(b, i, depth, geminiUsageNames, func(f, i int) (int, bool) {
		switch f {
		case 0:
			return decodeInt(b, i, &u.PromptTokenCount)
		case 1:
			return decodeInt(b, i, &u.CandidatesTokenCount)
		case 2:
			return decodeInt(b, i, &u.CachedContentTokenCount)
		case 3:
			return decodeInt(b, i, &u.ThoughtsTokenCount)
		default:
			return decodeInt(b, i, &u.ToolUsePromptTokenCount)
		}
	})
}
