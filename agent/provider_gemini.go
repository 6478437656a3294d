package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"google.golang.org/genai"
)

// geminiProvider speaks Gemini's generateContent (the Gemini API, v1beta) through the official
// SDK.
type geminiProvider struct {
	models *genai.Models
}

// geminiKeyPlaceholder is the key genai is given when the endpoint has none: with an empty
// ClientConfig.APIKey, genai.NewClient takes GOOGLE_API_KEY or GEMINI_API_KEY from the
// environment (or fails without one). The transport replaces the header it makes of it.
const geminiKeyPlaceholder = "skillfleet-no-key"

// newGeminiProvider builds a genai client from the endpoint only. genai.NewClient reads the
// environment whatever it is given (its env provider cannot be replaced from outside): the
// backend (GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GENAI_USE_ENTERPRISE) only when none is set, the
// base URL (GOOGLE_GEMINI_BASE_URL) only when HTTPOptions has none, GOOGLE_CLOUD_PROJECT and
// _LOCATION, which the Gemini API backend does not use, and the key (GOOGLE_API_KEY,
// GEMINI_API_KEY) whenever ClientConfig.APIKey is empty. So the backend, base URL and version
// are always set here, a placeholder stands in for an empty key, and the transport sends the
// endpoint's key and nothing else in x-goog-api-key. genai's retries are off (one attempt:
// the Client retries) and so is its automatic continuation (which would send more requests).
func newGeminiProvider(ep Endpoint, hc *http.Client) (*geminiProvider, error) {
	if hc == nil {
		hc = &http.Client{}
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	// A copy: hc may be shared, and only this provider's requests need capturing.
	wrapped := &http.Client{
		Transport:     &geminiTransport{base: base, key: ep.APIKey},
		CheckRedirect: hc.CheckRedirect,
		Jar:           hc.Jar,
		Timeout:       hc.Timeout,
	}
	key := ep.APIKey
	if key == "" {
		key = geminiKeyPlaceholder
	}
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		Backend:    genai.BackendGeminiAPI,
		APIKey:     key,
		HTTPClient: wrapped,
		HTTPOptions: genai.HTTPOptions{
			BaseURL:      ep.BaseURL,
			APIVersion:   "v1beta",
			RetryOptions: &genai.HTTPRetryOptions{Attempts: genai.Ptr[int32](1)},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("gemini client: %w", err)
	}
	return &geminiProvider{models: c.Models}, nil
}

// geminiTransport sets the API key header and hands the HTTP response of a call to the send
// that made it: genai returns only the decoded body or an APIError, while the Client needs the
// status and Retry-After.
type geminiTransport struct {
	base http.RoundTripper
	key  string
}

// responseSlotKey is the context key of a send's *responseSlot.
type responseSlotKey struct{}

// responseSlot receives the HTTP response of one send; each send has its own, so concurrent
// sends do not see each other's.
type responseSlot struct{ resp atomic.Pointer[http.Response] }

func (t *geminiTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	// A RoundTripper must not change its request: a clone carries the header.
	r = r.Clone(r.Context())
	r.Header.Del("X-Goog-Api-Key")
	if t.key != "" {
		r.Header.Set("X-Goog-Api-Key", t.key)
	}
	resp, err := t.base.RoundTrip(r)
	if slot, ok := r.Context().Value(responseSlotKey{}).(*responseSlot); ok && resp != nil {
		slot.resp.Store(resp)
	}
	return resp, err
}

func (p *geminiProvider) send(ctx context.Context, c Conversation, model string) (*Answer, Usage, *http.Response, error) {
	contents, err := geminiContents(c.Messages)
	if err != nil {
		return nil, Usage{}, nil, err
	}
	slot := &responseSlot{}
	ctx = context.WithValue(ctx, responseSlotKey{}, slot)
	resp, err := p.models.GenerateContent(ctx, model, contents, geminiConfig(c))
	raw := slot.resp.Load()
	if err != nil {
		return nil, Usage{}, raw, err
	}
	var u Usage
	if m := resp.UsageMetadata; m != nil {
		u = Usage{PromptTokens: int64(m.PromptTokenCount) + int64(m.ToolUsePromptTokenCount),
			CacheReadTokens:  int64(m.CachedContentTokenCount),
			CompletionTokens: int64(m.CandidatesTokenCount) + int64(m.ThoughtsTokenCount)}
	}
	if len(resp.Candidates) == 0 || resp.Candidates[0] == nil {
		if pf := resp.PromptFeedback; pf != nil && pf.BlockReason != "" {
			// The prompt itself was blocked: no candidate, a safety stop.
			return &Answer{Model: resp.ModelVersion, Stop: StopSafety, StopDetail: string(pf.BlockReason)}, u, raw, nil
		}
		// Tokens may still have been paid for; the Client counts them, then refuses the answer.
		return nil, u, raw, fmt.Errorf("%w: no candidates", ErrMalformedResponse)
	}
	return geminiAnswer(resp.ModelVersion, resp.Candidates[0]), u, raw, nil
}

// geminiAnswer is the neutral form of a candidate.
func geminiAnswer(model string, cand *genai.Candidate) *Answer {
	a := &Answer{Model: model, StopDetail: string(cand.FinishReason)}
	if cand.Content != nil {
		a.Replay = cand.Content
		var text, reasoning strings.Builder
		for _, part := range cand.Content.Parts {
			switch {
			case part == nil:
			case part.FunctionCall != nil:
				fc := part.FunctionCall
				id := fc.ID
				if id == "" {
					id = geminiCallID(len(a.Calls))
				}
				args := []byte("{}")
				if fc.Args != nil {
					if b, err := json.Marshal(fc.Args); err == nil {
						args = b
					}
				}
				a.Calls = append(a.Calls, ToolCallRequest{ID: id, Name: fc.Name, Arguments: string(args)})
			case part.Thought:
				reasoning.WriteString(part.Text)
			default:
				text.WriteString(part.Text)
			}
		}
		a.Text, a.Reasoning = text.String(), reasoning.String()
	}
	switch fr := cand.FinishReason; {
	case geminiSafetyStops[fr]:
		a.Stop = StopSafety
	case fr == genai.FinishReasonStop || fr == "":
		a.Stop = StopEnd
		if len(a.Calls) > 0 {
			a.Stop = StopToolUse
		}
	case fr == genai.FinishReasonMaxTokens:
		a.Stop = StopMaxTokens
	default:
		a.Stop = StopOther
	}
	return a
}

// geminiSafetyStops are the finish reasons of a candidate cut for safety or policy.
var geminiSafetyStops = map[genai.FinishReason]bool{
	genai.FinishReasonSafety:                 true,
	genai.FinishReasonRecitation:             true,
	genai.FinishReasonProhibitedContent:      true,
	genai.FinishReasonBlocklist:              true,
	genai.FinishReasonSPII:                   true,
	genai.FinishReasonImageSafety:            true,
	genai.FinishReasonImageProhibitedContent: true,
}

// geminiCallID names the i-th (0-based) call of an answer whose call came without an id (the
// Gemini API gives none unless the model does): the agent pairs results with calls by id.
func geminiCallID(i int) string { return "call-" + strconv.Itoa(i+1) }

// geminiContents are the contents of a conversation's messages.
func geminiContents(msgs []Message) ([]*genai.Content, error) {
	var out []*genai.Content
	// made are the ids geminiAnswer made for the last assistant message's calls that came
	// without one: their results go back without an id too, as the model sent the calls.
	var made map[string]bool
	var results *genai.Content // the user content the current run of tool results goes into
	for i, m := range msgs {
		if m.Role != RoleTool {
			results = nil
		}
		switch m.Role {
		case RoleUser:
			out = append(out, genai.NewContentFromText(m.Text, genai.RoleUser))
		case RoleAssistant:
			made = nil
			if r, ok := m.Replay.(*genai.Content); ok && r != nil {
				n := 0
				for _, part := range r.Parts {
					if part != nil && part.FunctionCall != nil {
						if part.FunctionCall.ID == "" {
							if made == nil {
								made = map[string]bool{}
							}
							made[geminiCallID(n)] = true
						}
						n++
					}
				}
				out = append(out, r)
				continue
			}
			content := &genai.Content{Role: genai.RoleModel}
			if m.Text != "" {
				content.Parts = append(content.Parts, genai.NewPartFromText(m.Text))
			}
			for _, call := range m.Calls {
				args := map[string]any{}
				if strings.TrimSpace(call.Arguments) != "" && json.Unmarshal([]byte(call.Arguments), &args) != nil {
					// Gemini's args are an object: a malformed call goes back as written, the
					// way ATIF keeps it (failing here would only be retried by the Client).
					args = map[string]any{"_raw": call.Arguments}
				}
				content.Parts = append(content.Parts, &genai.Part{FunctionCall: &genai.FunctionCall{ID: call.ID, Name: call.Name, Args: args}})
			}
			if len(content.Parts) > 0 {
				// An empty part is no part to the API: an empty answer is left out.
				out = append(out, content)
			}
		case RoleTool:
			if results == nil {
				results = &genai.Content{Role: genai.RoleUser}
				out = append(out, results)
			}
			fr := &genai.FunctionResponse{Name: m.CallName, Response: map[string]any{"output": m.Text}}
			if !made[m.CallID] {
				fr.ID = m.CallID
			}
			results.Parts = append(results.Parts, &genai.Part{FunctionResponse: fr})
		default:
			return nil, fmt.Errorf("gemini: message %d: unknown role %q", i, m.Role)
		}
	}
	return out, nil
}

// geminiConfig is the request's configuration beyond its contents.
func geminiConfig(c Conversation) *genai.GenerateContentConfig {
	cfg := &genai.GenerateContentConfig{AutomaticContinuation: genai.Ptr(false)}
	if c.System != "" {
		cfg.SystemInstruction = genai.NewContentFromText(c.System, genai.RoleUser)
	}
	if len(c.Tools) > 0 {
		tool := &genai.Tool{}
		for _, t := range c.Tools {
			// parametersJsonSchema takes JSON Schema as it is; parameters (OpenAPI's subset)
			// rejects additionalProperties, which the tools' schemas use.
			fd := &genai.FunctionDeclaration{Name: t.Name, Description: t.Description}
			if t.Parameters != nil {
				fd.ParametersJsonSchema = t.Parameters
			}
			tool.FunctionDeclarations = append(tool.FunctionDeclarations, fd)
		}
		cfg.Tools = []*genai.Tool{tool}
	}
	if c.Temperature != nil {
		cfg.Temperature = genai.Ptr(float32(*c.Temperature))
	}
	if c.MaxOutput > 0 {
		cfg.MaxOutputTokens = int32(min(c.MaxOutput, math.MaxInt32))
	}
	if s := c.Schema; s != nil {
		cfg.ResponseMIMEType = "application/json"
		cfg.ResponseJsonSchema = s.Schema
	}
	return cfg
}

func (p *geminiProvider) retryable(status int, _ error) bool { return retryable(status) }

func (p *geminiProvider) message(err error) string {
	var apiErr genai.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Message
	}
	var apiErrPtr *genai.APIError
	if errors.As(err, &apiErrPtr) && apiErrPtr != nil {
		return apiErrPtr.Message
	}
	return ""
}
