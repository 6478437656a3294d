package gateway

import (
	"strings"
	"testing"
)

// geminiChunkCases are streamGenerateContent chunks decodeGeminiChunk must read as
// json.Unmarshal does: the stream's real chunks, then hostile ones (escapes, keys in other
// cases, repeats, nulls, values of the wrong type), then hostileEvents.
var geminiChunkCases = append([]string{
	`{"candidates": [{"content": {"parts": [{"text": "relay relay ","thought": true}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 11850,"candidatesTokenCount": 10,"totalTokenCount": 12760,"cachedContentTokenCount": 9800,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 11850}],"thoughtsTokenCount": 900},"modelVersion": "gemini-2.5-pro","responseId": "cXGtaNH1Ce-rkdUP_9KJ0Qw"}`,
	`{"candidates": [{"content": {"parts": [{"text": "relay relay "}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 11850},"modelVersion": "gemini-2.5-pro"}`,
	`{"candidates": [{"content": {"parts": [{"functionCall": {"name": "run_shell_command","args": {"command": "go test ./...","description": "Run the tests"}},"thoughtSignature": "CiQB0e2Kb"}],"role": "model"},"index": 0}]}`,
	`{"candidates": [{"content": {"parts": [{"text": ""}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 1,"candidatesTokenCount": 2,"toolUsePromptTokenCount": 3}}`,
	`{"candidates": [{"finishReason": "SAFETY","safetyRatings": [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT","probability": "HIGH","blocked": true}],"index": 0}]}`,
	`{"promptFeedback": {"blockReason": "PROHIBITED_CONTENT","safetyRatings": []},"usageMetadata": {"promptTokenCount": 8}}`,
	`{"candidates": [{"content": {"parts": [{"text": "a\"b\\c\/d\n\t\u00e9\u65e5 \uD83D\uDE00 \uDE00 sk-\u0070roj é 日本 😀"}]}}]}`,
	"{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"invalid \xff\xfe utf-8\"}]}}]}",
	`{"candidates": [{"content": {"parts": [{"text": "one"},{"text": "two","thought": false},{"functionCall": {"id": "c1","name": "n"}},{"functionResponse": {"name": "n","response": {"output": "x"}}},{"inlineData": {"mimeType": "image/png","data": "iVBO"}}]}},{"content": {"parts": [{"text": "second candidate"}]}}]}`,
	// Keys in other cases, escaped, repeated; nulls.
	`{"CANDIDATES": [{"Content": {"PARTS": [{"TEXT": "upper","Thought": true}]},"FINISHREASON": "STOP"}],"UsageMetadata": {"PROMPTTOKENCOUNT": 1},"modelversion": "m"}`,
	`{"candidates": [{"content": {"parts": [{"text": "a","text": null}]}}]}`,
	`{"candidates": [{"content": {"parts": [{"text": null,"text": "b","thought": true,"thought": null}]}}]}`,
	`{"candidates": [{"content": {"parts": [{"text": "a"},{"text": "b"}]},"content": {"parts": [{"thought": true}]}}]}`,
	`{"candidates": [{"content": {"parts": [{"text": "a"},{"text": "b"}]},"content": null,"content": {"parts": [{"thought": true}]}}]}`,
	`{"candidates": [{"content": {"parts": [{"text": "a"},{"text": "b"}]}}],"candidates": [{"finishReason": "STOP"}]}`,
	`{"candidates": [{"content": {"parts": [{"text": "a"},{"text": "b"}]}}],"candidates": [],"candidates": [{"content": {}}]}`,
	`{"candidates": [{"content": {"parts": [{"text": "a"}]}}],"candidates": null}`,
	`{"usageMetadata": {"promptTokenCount": 1},"usageMetadata": {"candidatesTokenCount": 2}}`,
	`{"usageMetadata": {"promptTokenCount": 1},"usageMetadata": null,"usageMetadata": {"candidatesTokenCount": 2}}`,
	`{"modelVersion": "a","modelVersion": "gemini-2.5-pro","\u006dodelVersion": "escaped"}`,
	`{"candidates": null,"promptFeedback": null,"usageMetadata": null,"modelVersion": null}`,
	`{"candidates": [null,{"content": null,"finishReason": null},{"content": {"parts": null}},{"content": {"parts": [null,{"functionCall": null,"functionResponse": null}]}}]}`,
	`{"usageMetadata": {"promptTokenCount": null,"candidatesTokenCount": -0,"thoughtsTokenCount": 9223372036854775807}}`,
	`{"candidates": [{"content": {"parts": [{"functionCall": {"name": "a","args": {"x": 1}}}]}}],"candidates": [{"content": {"parts": [{"functionCall": {"id": "merged"}}]}}]}`,
	// Values of the wrong type: the chunk is unreadable.
	`{"candidates": {}}`, `{"candidates": [1]}`, `{"candidates": [{"content": []}]}`, `{"candidates": [{"content": {"parts": {}}}]}`,
	`{"candidates": [{"content": {"parts": [{"text": 1}]}}]}`, `{"candidates": [{"content": {"parts": [{"text": ["a"]}]}}]}`,
	`{"candidates": [{"content": {"parts": [{"thought": "true"}]}}]}`, `{"candidates": [{"content": {"parts": [{"thought": 1}]}}]}`,
	`{"candidates": [{"content": {"parts": [{"functionCall": {"name": 1}}]}}]}`, `{"candidates": [{"content": {"parts": [{"functionCall": []}]}}]}`,
	`{"candidates": [{"content": {"parts": [{"functionResponse": {"id": {}}}]}}]}`, `{"candidates": [{"finishReason": 1}]}`,
	`{"usageMetadata": {"promptTokenCount": "1"}}`, `{"usageMetadata": {"promptTokenCount": 1.5}}`, `{"usageMetadata": {"promptTokenCount": 1e3}}`,
	`{"usageMetadata": {"promptTokenCount": 9223372036854775808}}`, `{"usageMetadata": []}`, `{"usageMetadata": 5}`,
	`{"promptFeedback": {"blockReason": 1}}`, `{"promptFeedback": []}`, `{"modelVersion": 2}`,
	// Not JSON inside the members read and skipped.
	`{"candidates": [{"content": {"parts": [{"text": "a",}]}}]}`, `{"candidates": [{"content": {"parts": [{"text": "a"}],}}]}`,
	`{"candidates": [{"safetyRatings": [,]}]}`, `{"usageMetadata": {"promptTokensDetails": [{"modality": }]}}`,
	`{"candidates": [{"content": {"parts": [{"functionCall": {"args": {"a":}}}]}}]}`, `{"usageMetadata": {"promptTokenCount": 01}}`,
	`{"candidates": [{"content": {"parts": [{"thought": tru}]}}]}`, `{"candidates": [{"index": 0} {"index": 1}]}`,
}, hostileEvents...)

// normalGemini makes what no reader tells apart alike: empty slices and nil ones, and the
// content a candidate keeps for the next chunk (a copy of it is what Content points to).
func normalGemini(r geminiResponse) geminiResponse {
	if len(r.Candidates) == 0 {
		r.Candidates = nil
		return r
	}
	cands := make([]geminiCandidate, len(r.Candidates))
	for i, c := range r.Candidates {
		cands[i] = geminiCandidate{FinishReason: c.FinishReason}
		if c.Content != nil {
			content := *c.Content
			if len(content.Parts) == 0 {
				content.Parts = nil
			}
			cands[i].Content = &content
		}
	}
	r.Candidates = cands
	return r
}

func TestDecodeGeminiChunkAsUnmarshal(t *testing.T) {
	fresh := func(data []byte, r *geminiResponse) bool {
		return decodeGeminiChunk(data, r, &geminiUsage{}, "gemini-2.5-pro")
	}
	for _, c := range geminiChunkCases {
		checkAsUnmarshal(t, c, &geminiResponse{}, fresh, normalGemini)
	}
	for _, n := range []int{validMaxDepth - 1, validMaxDepth} {
		nested := strings.Repeat("[", n) + strings.Repeat("]", n)
		checkAsUnmarshal(t, `{"skipped":`+nested+`,"modelVersion":"m"}`, &geminiResponse{}, fresh, normalGemini)
		checkAsUnmarshal(t, `{"candidates":[{"content":{"parts":[{"functionCall":{"args":{"a":`+nested[6:len(nested)-6]+`}}}]}}]}`, &geminiResponse{}, fresh, normalGemini)
	}
	// One stream's buffers through all of them: nothing of a chunk is left in the next.
	var s geminiStream
	reused := func(data []byte, r *geminiResponse) bool {
		got, ok := s.read(data)
		if ok {
			*r = *got
		}
		return ok
	}
	for range 2 {
		for _, c := range geminiChunkCases {
			checkAsUnmarshal(t, c, &geminiResponse{}, reused, normalGemini)
		}
	}
}

func FuzzDecodeGeminiChunk(f *testing.F) {
	for _, c := range geminiChunkCases {
		f.Add(c)
	}
	var s geminiStream
	f.Fuzz(func(t *testing.T, data string) {
		checkAsUnmarshal(t, data, &geminiResponse{}, func(data []byte, r *geminiResponse) bool {
			got, ok := s.read(data)
			if ok {
				*r = *got
			}
			return ok
		}, normalGemini)
	})
}
