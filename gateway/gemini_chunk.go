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
	i, f, ok := objectField(data, skipSpace(data, 0), 0, geminiChunkNames, true)
	for ok && f >= 0 {
		switch f {
		case 0:
			i, ok = decodeSlice(data, i, 1, &r.Candidates, decodeGeminiCandidate)
		case 1:
			i, ok = decodeRare(data, i, 1, &r.PromptFeedback)
		case 2:
			i, ok = decodePtr(data, i, 1, &r.UsageMetadata, usage, nil, decodeGeminiUsage)
		default:
			i, ok = decodeName(data, i, &r.ModelVersion, []string{model})
		}
		if ok {
			i, f, ok = objectField(data, i, 0, geminiChunkNames, false)
		}
	}
	return ok && skipSpace(data, i) == len(data)
}

func decodeGeminiCandidate(b []byte, i, depth int, c *geminiCandidate) (int, bool) {
	i, f, ok := objectField(b, i, depth, geminiCandidateNames, true)
	for ok && f >= 0 {
		if f == 1 {
			i, ok = decodeString(b, i, &c.FinishReason)
		} else {
			i, ok = decodePtr(b, i, depth+1, &c.Content, &c.content, emptyContent, decodeGeminiContent)
		}
		if ok {
			i, f, ok = objectField(b, i, depth, geminiCandidateNames, false)
		}
	}
	return i, ok
}

// emptyContent makes a candidate's kept content new: no parts, its array zero throughout.
func emptyContent(c *geminiAnswerContent) {
	parts := c.Parts[:cap(c.Parts)]
	clear(parts)
	*c = geminiAnswerContent{Parts: parts[:0]}
}

func decodeGeminiContent(b []byte, i, depth int, c *geminiAnswerContent) (int, bool) {
	i, f, ok := objectField(b, i, depth, geminiContentNames, true)
	for ok && f >= 0 {
		if i, ok = decodeSlice(b, i, depth+1, &c.Parts, decodeGeminiPart); ok {
			i, f, ok = objectField(b, i, depth, geminiContentNames, false)
		}
	}
	return i, ok
}

func decodeGeminiPart(b []byte, i, depth int, p *geminiAnswerPart) (int, bool) {
	i, f, ok := objectField(b, i, depth, geminiPartNames, true)
	for ok && f >= 0 {
		switch f {
		case 0:
			i, ok = decodeOptText(b, i, &p.Text)
		case 1:
			i, ok = decodeBool(b, i, &p.Thought)
		case 2:
			i, ok = decodeRare(b, i, depth+1, &p.FunctionCall)
		default:
			i, ok = decodeRare(b, i, depth+1, &p.FunctionResponse)
		}
		if ok {
			i, f, ok = objectField(b, i, depth, geminiPartNames, false)
		}
	}
	return i, ok
}

func decodeGeminiUsage(b []byte, i, depth int, u *geminiUsage) (int, bool) {
	counts := [...]*int64{&u.PromptTokenCount, &u.CandidatesTokenCount, &u.CachedContentTokenCount, &u.ThoughtsTokenCount, &u.ToolUsePromptTokenCount}
	i, f, ok := objectField(b, i, depth, geminiUsageNames, true)
	for ok && f >= 0 {
		if i, ok = decodeInt(b, i, counts[f]); ok {
			i, f, ok = objectField(b, i, depth, geminiUsageNames, false)
		}
	}
	return i, ok
}
