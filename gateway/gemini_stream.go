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
	Text             *string             `json:"text"`
	Thought          bool                `json:"thought"`
	FunctionCall     *geminiFunctionCall `json:"functionCall"`
	FunctionResponse *struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
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

// geminiResponse is a GenerateContentResponse: an answer, or one chunk of a stream.
type geminiResponse struct {
	Candidates []struct {
		Content *struct {
			Parts []geminiPart `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata *geminiUsage `json:"usageMetadata"`
	ModelVersion  string       `json:"modelVersion"`
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
func (r *geminiResponse) parts() []geminiPart {
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
			thoughts = append(thoughts, *p.Text)
		default:
			texts = append(texts, *p.Text)
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
	ans   answerBuf
	usage *geminiUsage
	stop  string
	// maxTokens: a chunk finished at the max output.
	maxTokens bool
}

func (s *geminiStream) Event(_ string, data []byte) bool {
	var r geminiResponse
	if json.Unmarshal(data, &r) != nil {
		return false
	}
	s.ans.model = cmp.Or(r.ModelVersion, s.ans.model)
	// The totals are on the last chunk: the last usage seen, never a sum.
	if r.UsageMetadata != nil {
		s.usage = r.UsageMetadata
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
			s.ans.appendReasoning(*p.Text)
		default:
			s.ans.appendText(*p.Text)
		}
	}
	return false
}

func (s *geminiStream) Usage() (Tokens, bool) {
	if s.usage == nil {
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
