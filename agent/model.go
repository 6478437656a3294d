package agent

import (
	"context"
	"net/http"
)

// The built-in agent and the judge talk to a model through a Conversation, whatever protocol
// its endpoint speaks: the Client turns it into one protocol's request (a provider: OpenAI's
// Chat Completions in provider_openai.go, Anthropic's Messages in provider_anthropic.go,
// Gemini's generateContent in provider_gemini.go) and keeps for itself what every protocol
// shares: retries honouring Retry-After, the adaptive concurrency limit, metering and metrics.

// APIs are the protocols an endpoint may speak (Endpoint.API).
const (
	APIOpenAI    = "openai"
	APIAnthropic = "anthropic"
	APIGemini    = "gemini"
)

// Conversation is one request to a model, protocol-neutral.
type Conversation struct {
	// Model overrides the endpoint's model ("": the endpoint's).
	Model string
	// System is the system prompt. It is the same for every job of a run (the skill catalog),
	// so a provider that offers prompt caching marks it cacheable.
	System string
	// Messages are the turns so far, oldest first.
	Messages []Message
	// Tools are the tools the model may call.
	Tools []ToolSpec
	// Schema, when set, asks for an answer that is one JSON object of this schema (the
	// judge's verdict): OpenAI's json_schema response format, a forced tool call on
	// Anthropic, Gemini's responseSchema. The answer's Text is then that JSON.
	Schema *Schema
	// Temperature, when set, is the sampling temperature.
	Temperature *float64
	// MaxOutput bounds the answer's tokens (0: the provider's default; Anthropic requires
	// one, so its provider sends DefaultMaxOutput).
	MaxOutput int64
}

// DefaultMaxOutput is the max output of a request to a provider that requires one, when the
// conversation names none.
const DefaultMaxOutput = 8192

// Role is a message's author.
type Role string

// The roles of a conversation's messages.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	// RoleTool carries one tool call's result back to the model.
	RoleTool Role = "tool"
)

// Message is one message of a conversation.
type Message struct {
	Role Role
	// Text is a user message's or a tool result's content, or an assistant's text.
	Text string
	// Calls are an assistant message's tool calls.
	Calls []ToolCallRequest
	// CallID and CallName name the call a RoleTool message answers.
	CallID, CallName string
	// Replay is an assistant message in its provider's own form (the Answer it came from):
	// sent back as it came, so that what the neutral form drops (Anthropic's thinking
	// signatures, Gemini's thought signatures) reaches the model again. A provider ignores a
	// Replay that is not its own.
	Replay any
}

// ToolSpec is a tool the model may call.
type ToolSpec struct {
	Name, Description string
	// Parameters is the JSON schema of the tool's arguments (an object).
	Parameters map[string]any
}

// ToolCallRequest is one tool call the model asked for.
type ToolCallRequest struct {
	// ID pairs the call with its result ("" when the provider gives none; the agent makes
	// one).
	ID, Name string
	// Arguments is the call's arguments as JSON text.
	Arguments string
}

// Schema is a structured answer's JSON schema.
type Schema struct {
	Name        string
	Description string
	Schema      map[string]any
}

// Why a model's answer ended (Answer.Stop).
const (
	StopEnd       = "end"        // a final answer
	StopToolUse   = "tool_use"   // it asked for tool calls
	StopMaxTokens = "max_tokens" // cut at its max output
	// StopRefusal is the provider's refusal, StopSafety its safety stop: the answer is not
	// an answer, whatever text it has.
	StopRefusal = "refusal"
	StopSafety  = "safety"
	StopOther   = "other"
)

// Answer is one model answer, protocol-neutral.
type Answer struct {
	// Model is the model that answered, as the provider names it.
	Model string
	Text  string
	// Reasoning is the model's thinking where the provider returns it.
	Reasoning string
	Calls     []ToolCallRequest
	// Stop is why the answer ended (Stop* constants); StopDetail the provider's own reason.
	Stop, StopDetail string
	// Replay is this answer in its provider's own form, for Message.Replay.
	Replay any
}

// provider speaks one protocol to one endpoint: one attempt, no retries (the Client retries).
type provider interface {
	// send makes one attempt. resp is the HTTP answer when there was one: its status decides
	// whether the attempt is retried; err is set when the attempt failed (an HTTP error
	// status included). usage is the answer's tokens (cost is the Client's).
	send(ctx context.Context, c Conversation, model string) (a *Answer, usage Usage, resp *http.Response, err error)
	// retryable says whether a failed attempt that got HTTP status may succeed if sent again:
	// 408, 409, 429 and 5xx for every protocol, plus a provider's own (Anthropic's 529).
	retryable(status int, err error) bool
	// message is the provider's error message in err ("" when err is no API error).
	message(err error) string
}
