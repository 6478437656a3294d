package gateway

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
)

// geminiUsage is an answer's usageMetadata. promptTokenCount already counts the cached part
// (cachedContentTokenCount); what tools added to the prompt (toolUsePromptTokenCount) and the
// thinking (thoughtsTokenCount) are counted apart, and billed as prompt and output.
type geminiUsage struct {
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
	ToolUsePromptTokenCount int64 `json:"toolUsePromptTokenCount"`
}

func (u *geminiUsage) tokens() Tokens {
	return Tokens{
		Prompt:     u.PromptTokenCount + u.ToolUsePromptTokenCount,
		CacheRead:  u.CachedContentTokenCount,
		Completion: u.CandidatesTokenCount + u.ThoughtsTokenCount,
	}
}

// geminiPart is a content part as the gateway reads it: text (thought text is the model's
// reasoning), a function call or a function's response.
type geminiPart struct {
	Text             *string                 `json:"text"`
	Thought          bool                    `json:"thought"`
	FunctionCall     *geminiFunctionCall     `json:"functionCall"`
	FunctionResponse *geminiFunctionResponse `json:"functionResponse"`
}

type geminiFunctionResponse struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

type geminiFunctionCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// args is the call's arguments object ({} when it has none).
func (c *geminiFunctionCall) args() json.RawMessage {
	if len(c.Args) == 0 || string(c.Args) == "null" {
		return json.RawMessage("{}")
	}
	return c.Args
}

// geminiResponse is a GenerateContentResponse: an answer, or one chunk of a stream (which
// decodeGeminiChunk reads as json.Unmarshal would).
type geminiResponse struct {
	Candidates     []geminiCandidate `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata *geminiUsage `json:"usageMetadata"`
	ModelVersion  string       `json:"modelVersion"`
}

type geminiCandidate struct {
	Content      *geminiAnswerContent `json:"content"`
	FinishReason string               `json:"finishReason"`
	// content is what Content points to when decodeGeminiChunk read it: kept with its parts'
	// array from chunk to chunk, so that a stream of small chunks allocates for neither.
	content geminiAnswerContent
}

type geminiAnswerContent struct {
	Parts []geminiAnswerPart `json:"parts"`
}

// geminiAnswerPart is a part of an answer: geminiPart's fields, its text read in place (a
// stream's text is copied into the answer before the next chunk is read).
type geminiAnswerPart struct {
	Text             optText                 `json:"text"`
	Thought          bool                    `json:"thought"`
	FunctionCall     *geminiFunctionCall     `json:"functionCall"`
	FunctionResponse *geminiFunctionResponse `json:"functionResponse"`
}

// geminiStops are the finish reasons that are a refusal or a safety stop rather than an
// answer's end (STOP, MAX_TOKENS) or a malformed call.
var geminiStops = []string{"SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "IMAGE_SAFETY"}

// geminiMaxTokens is the finishReason of an answer cut at its maxOutputTokens.
const geminiMaxTokens = "MAX_TOKENS"

// atMaxOutput says the response's candidate finished at its maxOutputTokens.
func (r *geminiResponse) atMaxOutput() bool {
	return len(r.Candidates) > 0 && r.Candidates[0].FinishReason == geminiMaxTokens
}

// stop is the response's refusal or safety stop ("" when it is none).
func (r *geminiResponse) stop() string {
	if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
		return r.PromptFeedback.BlockReason
	}
	if len(r.Candidates) > 0 && slices.Contains(geminiStops, r.Candidates[0].FinishReason) {
		return r.Candidates[0].FinishReason
	}
	return ""
}

// parts are the first candidate's parts, the one answer a request gets (candidateCount is 1).
func (r *geminiResponse) parts() []geminiAnswerPart {
	if len(r.Candidates) == 0 || r.Candidates[0].Content == nil {
		return nil
	}
	return r.Candidates[0].Content.Parts
}

// Answer reads a generateContent answer; a countTokens answer ({"totalTokens": n}) is billed
// by no provider and carries no usage.
func (gemini) Answer(rt Route, body []byte) (Tokens, bool, *Turn) {
	var r geminiResponse
	if json.Unmarshal(body, &r) != nil {
		return Tokens{}, false, nil
	}
	var u Tokens
	if r.UsageMetadata != nil {
		u = r.UsageMetadata.tokens()
	}
	if rt.Kind != Generate {
		return u, r.UsageMetadata != nil, nil
	}
	t := &Turn{Model: r.ModelVersion, Stop: r.stop()}
	t.atMaxOutput(r.atMaxOutput())
	var texts, thoughts []string
	for _, p := range r.parts() {
		switch {
		case p.FunctionCall != nil:
			t.Calls = append(t.Calls, Call{ID: p.FunctionCall.ID, Name: p.FunctionCall.Name, Args: p.FunctionCall.args()})
		case p.Text == nil:
		case p.Thought:
			thoughts = append(thoughts, string(p.Text))
		default:
			texts = append(texts, string(p.Text))
		}
	}
	t.Text, t.Reasoning = strings.Join(texts, ""), strings.Join(thoughts, "")
	return u, r.UsageMetadata != nil, t
}

func (gemini) Stream(Route, Request) StreamReader { return &geminiStream{} }

// geminiStream reads a streamGenerateContent?alt=sse stream: each event's data is a
// GenerateContentResponse, the answer's parts in pieces, each chunk with the usage so far
// (the last one with the totals). Every event is passed on as it comes; there is no
// end-of-stream event to hold back.
type geminiStream struct {
	ans answerBuf
	// usage is the last usage seen, when seen: a copy, as the chunk's is read into the
	// stream's store (usageStore) again by the next one.
	usage    geminiUsage
	hasUsage bool
	stop     string
	// maxTokens: a chunk finished at the max output.
	maxTokens bool
	// chunk is the chunk being read, cands the candidates' array decodeGeminiChunk reuses
	// from chunk to chunk (each with its content and parts), and usageStore its usage.
	chunk      geminiResponse
	cands      []geminiCandidate
	usageStore geminiUsage
}

func (s *geminiStream) Event(_ string, data []byte) bool {
	r, ok := s.read(data)
	if !ok {
		return false
	}
	s.ans.model = cmp.Or(r.ModelVersion, s.ans.model)
	// The totals are on the last chunk: the last usage seen, never a sum.
	if r.UsageMetadata != nil {
		s.usage, s.hasUsage = *r.UsageMetadata, true
	}
	s.stop = cmp.Or(r.stop(), s.stop)
	s.maxTokens = s.maxTokens || r.atMaxOutput()
	for _, p := range r.parts() {
		switch {
		case p.FunctionCall != nil:
			// A call comes whole in one chunk.
			c := s.ans.call(len(s.ans.calls))
			if c == nil {
				continue
			}
			c.ID, c.Name = p.FunctionCall.ID, p.FunctionCall.Name
			s.ans.appendArgs(c, string(p.FunctionCall.args()))
		case p.Text == nil:
		case p.Thought:
			s.ans.appendReasoningBytes(p.Text)
		default:
			s.ans.appendTextBytes(p.Text)
		}
	}
	return false
}

// read decodes a chunk into the stream's buffers; false when it is unreadable.
func (s *geminiStream) read(data []byte) (*geminiResponse, bool) {
	// The candidates' array is the last chunk's, emptied; each keeps its parts' array.
	all := s.cands[:cap(s.cands)]
	for i := range all {
		all[i] = geminiCandidate{content: geminiAnswerContent{Parts: all[i].content.Parts[:0]}}
	}
	s.chunk = geminiResponse{Candidates: s.cands[:0]}
	r := &s.chunk
	if !decodeGeminiChunk(data, r, &s.usageStore, s.ans.model) {
		return nil, false
	}
	if cap(r.Candidates) > cap(s.cands) {
		s.cands = r.Candidates[:0]
	}
	return r, true
}

func (s *geminiStream) Usage() (Tokens, bool) {
	if !s.hasUsage {
		return Tokens{}, false
	}
	return s.usage.tokens(), true
}

func (s *geminiStream) Turn(cut bool) *Turn {
	t := s.ans.turn(cut)
	t.Stop = s.stop
	t.atMaxOutput(s.maxTokens)
	for i, c := range t.Calls {
		if len(c.Args) == 0 {
			// Arguments past the answer's bound: none kept.
			t.Calls[i].Args = json.RawMessage("{}")
		}
	}
	return t
}

func (s *geminiStream) End() []byte { return nil }
