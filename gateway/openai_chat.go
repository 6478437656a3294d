package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// A request is parsed and rebuilt, never forwarded as it came: only the fields below reach the
// upstream, each checked for its type, so that a sandboxed program cannot switch on what the
// job's owner did not configure (another model, hosted tools that reach the network from the
// provider's side, background or stored responses that outlive the job and escape its meter).
// An unknown field is refused rather than dropped: the agent's author learns what the gateway
// does not carry, instead of a silently different answer.

// fieldCheck validates one field's value (never JSON null: a null field is dropped).
type fieldCheck func(name string, raw json.RawMessage) error

// chatFields are the Chat Completions fields the gateway forwards. Not among them: n (more
// than one choice multiplies the output a reservation must cover, and no agent loop needs
// it; n: 1 is accepted), store: true (stored completions outlive the job), audio, modalities,
// prediction, web_search_options (a hosted search), functions / function_call (the legacy
// form of tools), logit_bias, logprobs, metadata, service_tier.
var chatFields = map[string]fieldCheck{
	"model":                 isString,
	"messages":              isArray,
	"tools":                 functionTools,
	"tool_choice":           functionToolChoice,
	"parallel_tool_calls":   isBool,
	"temperature":           isNumber,
	"top_p":                 isNumber,
	"frequency_penalty":     isNumber,
	"presence_penalty":      isNumber,
	"max_tokens":            isPositiveInt,
	"max_completion_tokens": isPositiveInt,
	"stream":                isBool,
	"stream_options":        isObject,
	"stop":                  isStop,
	"seed":                  isInt,
	"response_format":       isObject,
	"reasoning_effort":      isString,
	"user":                  isString,
	"n":                     isOne,
	"store":                 isFalse("stored completions outlive the job"),
}

// responsesFields are the Responses API fields the gateway forwards. store is always sent as
// false (the API's default is true); previous_response_id and conversation need stored
// state and are refused with a reason.
var responsesFields = map[string]fieldCheck{
	"model":               isString,
	"input":               isStringOrArray,
	"instructions":        isString,
	"tools":               functionTools,
	"tool_choice":         functionToolChoice,
	"parallel_tool_calls": isBool,
	"max_output_tokens":   isPositiveInt,
	"stream":              isBool,
	"temperature":         isNumber,
	"top_p":               isNumber,
	"text":                isObject,
	"reasoning":           isObject,
	"include":             isInclude,
	"prompt_cache_key":    isString,
	"user":                isString,
	"store":               isFalse("stored responses outlive the job; the gateway sends store: false"),
	"background":          isFalse("a background response runs on after the job and escapes its budget"),
}

// refusedResponsesFields name a reason for fields a CLI may well send.
var refusedResponsesFields = map[string]string{
	"previous_response_id": "it needs a stored response, and the gateway sends store: false; send the whole input instead",
	"conversation":         "it needs stored state, and the gateway sends store: false; send the whole input instead",
}

// allowedIncludes are the Responses API's include values that add nothing a hosted tool or
// stored state would produce: Codex asks for encrypted reasoning when store is false.
var allowedIncludes = []string{"reasoning.encrypted_content", "message.output_text.logprobs"}

// bytesPerToken turns a request's size into its prompt estimate for a reservation. Four bytes
// a token is about right for English text, and the JSON around the text makes the estimate
// higher still; the metered usage replaces it when the answer comes.
const bytesPerToken = 4

// preparedRequest is a parsed request, ready to be rebuilt once its reservation is known.
type preparedRequest struct {
	params       map[string]json.RawMessage
	responsesAPI bool
	stream       streamRequest
	// promptEstimate is the request's prompt tokens as reserved before the answer reports
	// them; maxOutput is the output the client asked for (0: none) under maxOutputField.
	promptEstimate, maxOutput int64
	maxOutputField            string
	model                     string
	// seq numbers the request among its session's forwarded ones (set by Session.observe).
	seq int
}

// refusal is an answer the gateway gives instead of forwarding a request.
type refusal struct {
	status    int
	code, msg string
}

func (r *refusal) Error() string { return r.msg }

func badRequest(format string, args ...any) *refusal {
	return &refusal{status: http.StatusBadRequest, code: "invalid_request", msg: "model gateway: " + fmt.Sprintf(format, args...)}
}

// parseRequest checks a request body against its endpoint's allow-list. chatMaxField is where
// a Chat Completion's max output goes when the client named none (GatewayConfig.MaxTokensField).
func parseRequest(body []byte, responsesAPI bool, chatMaxField string) (*preparedRequest, *refusal) {
	var params map[string]json.RawMessage
	if err := json.Unmarshal(body, &params); err != nil || params == nil {
		return nil, &refusal{status: http.StatusBadRequest, code: "invalid_json", msg: "the request body is not a JSON object"}
	}
	allowed, required, maxField := chatFields, "messages", chatMaxField
	if responsesAPI {
		allowed, required, maxField = responsesFields, "input", "max_output_tokens"
	}
	// Sorted, so that the first of several bad fields is always the one named.
	for _, name := range slices.Sorted(maps.Keys(params)) {
		raw := params[name]
		check, ok := allowed[name]
		if !ok {
			if why, ok := refusedResponsesFields[name]; ok && responsesAPI {
				return nil, badRequest("field %q is not forwarded: %s", name, why)
			}
			return nil, badRequest("field %q is not forwarded (allowed: %s)", name, strings.Join(slices.Sorted(maps.Keys(allowed)), ", "))
		}
		if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			delete(params, name)
			continue
		}
		if err := check(name, raw); err != nil {
			return nil, badRequest("%v", err)
		}
	}
	if _, ok := params[required]; !ok {
		return nil, badRequest("field %q is required", required)
	}
	p := &preparedRequest{params: params, responsesAPI: responsesAPI, maxOutputField: maxField,
		promptEstimate: (int64(len(body)) + bytesPerToken - 1) / bytesPerToken}
	if m, ok := params["model"]; ok {
		_ = json.Unmarshal(m, &p.model)
	}
	if raw, ok := params["stream"]; ok {
		_ = json.Unmarshal(raw, &p.stream.on)
	}
	// The client's own max output (the smaller, if it named two), under the field it used;
	// one the gateway sets goes under maxField.
	for _, f := range []string{"max_completion_tokens", "max_tokens", "max_output_tokens"} {
		if raw, ok := params[f]; ok {
			var n int64
			_ = json.Unmarshal(raw, &n)
			if p.maxOutput == 0 || n < p.maxOutput {
				p.maxOutput, p.maxOutputField = n, f
			}
		}
	}
	if !responsesAPI && p.stream.on {
		if raw, ok := params["stream_options"]; ok {
			var opts map[string]json.RawMessage
			_ = json.Unmarshal(raw, &opts)
			if iu, ok := opts["include_usage"]; ok && json.Unmarshal(iu, &p.stream.clientWantsUsage) != nil {
				return nil, badRequest(`"stream_options.include_usage" must be a boolean`)
			}
		}
	}
	return p, nil
}

// build is the body sent upstream: the checked fields, the configured model, store: false on
// the Responses API, maxOutput under the request's field, and for a streamed Chat Completion
// the usage chunk asked for (without it a stream could not be metered; a Responses stream
// carries its usage in response.completed).
func (p *preparedRequest) build(model string, maxOutput int64) ([]byte, error) {
	out := maps.Clone(p.params)
	// The configured model, whatever the CLI named: CLIs name their own defaults, and the job's
	// owner chose the model (and its price) in the config.
	delete(out, "model")
	if model != "" {
		out["model"] = mustJSON(model)
	}
	delete(out, "store")
	delete(out, "background")
	if p.responsesAPI {
		out["store"] = json.RawMessage("false")
	}
	if p.params["n"] != nil {
		delete(out, "n")
	}
	if maxOutput > 0 {
		// One max, the one reserved: a second, larger one could win upstream.
		delete(out, "max_tokens")
		delete(out, "max_completion_tokens")
		out[p.maxOutputField] = mustJSON(maxOutput)
	}
	if !p.responsesAPI && p.stream.on {
		opts := map[string]json.RawMessage{}
		if raw, ok := out["stream_options"]; ok {
			_ = json.Unmarshal(raw, &opts)
		}
		opts["include_usage"] = json.RawMessage("true")
		out["stream_options"] = mustJSON(opts)
	} else if !p.responsesAPI {
		// stream_options without stream is an error upstream.
		delete(out, "stream_options")
	}
	return json.Marshal(out)
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only ever called with strings, numbers and maps of raw JSON
	}
	return b
}

func isString(name string, raw json.RawMessage) error {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return fmt.Errorf("%q must be a string", name)
	}
	return nil
}

func isBool(name string, raw json.RawMessage) error {
	var b bool
	if json.Unmarshal(raw, &b) != nil {
		return fmt.Errorf("%q must be a boolean", name)
	}
	return nil
}

func isNumber(name string, raw json.RawMessage) error {
	var f float64
	if json.Unmarshal(raw, &f) != nil {
		return fmt.Errorf("%q must be a number", name)
	}
	return nil
}

func isInt(name string, raw json.RawMessage) error {
	var n int64
	if json.Unmarshal(raw, &n) != nil {
		return fmt.Errorf("%q must be an integer", name)
	}
	return nil
}

func isPositiveInt(name string, raw json.RawMessage) error {
	var n int64
	if json.Unmarshal(raw, &n) != nil || n < 1 {
		return fmt.Errorf("%q must be a positive integer", name)
	}
	return nil
}

func isOne(name string, raw json.RawMessage) error {
	var n int64
	if json.Unmarshal(raw, &n) != nil || n != 1 {
		return fmt.Errorf("%q must be 1: the gateway forwards one choice per request", name)
	}
	return nil
}

func isObject(name string, raw json.RawMessage) error {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return fmt.Errorf("%q must be an object", name)
	}
	return nil
}

func isArray(name string, raw json.RawMessage) error {
	var a []json.RawMessage
	if json.Unmarshal(raw, &a) != nil {
		return fmt.Errorf("%q must be an array", name)
	}
	return nil
}

func isStringOrArray(name string, raw json.RawMessage) error {
	if isString(name, raw) != nil && isArray(name, raw) != nil {
		return fmt.Errorf("%q must be a string or an array", name)
	}
	return nil
}

func isStop(name string, raw json.RawMessage) error {
	var ss []string
	if isString(name, raw) != nil && json.Unmarshal(raw, &ss) != nil {
		return fmt.Errorf("%q must be a string or an array of strings", name)
	}
	return nil
}

// isFalse accepts only false, for flags whose true the gateway refuses, and says why.
func isFalse(why string) fieldCheck {
	return func(name string, raw json.RawMessage) error {
		var b bool
		if json.Unmarshal(raw, &b) != nil || b {
			return fmt.Errorf("%q must be false: %s", name, why)
		}
		return nil
	}
}

// clientTools are the tool types the agent runs itself, inside the sandbox: functions, custom
// (free-form) tools such as Codex's apply_patch, and local_shell. Every other type is a hosted
// tool (web_search, file_search, mcp, code_interpreter, computer_use, image_generation, ...)
// that runs on the provider's side, where the sandbox's network policy does not reach.
var clientTools = []string{"function", "custom", "local_shell"}

// functionTools accepts the tools the agent runs itself and refuses hosted ones.
func functionTools(name string, raw json.RawMessage) error {
	var tools []map[string]json.RawMessage
	if json.Unmarshal(raw, &tools) != nil {
		return fmt.Errorf("%q must be an array of objects", name)
	}
	for i, t := range tools {
		var typ string
		_ = json.Unmarshal(t["type"], &typ)
		if !slices.Contains(clientTools, typ) {
			return fmt.Errorf("%s[%d] has type %q: only tools the agent runs itself (%s) are forwarded; hosted tools run outside the sandbox", name, i, typ, strings.Join(clientTools, ", "))
		}
	}
	return nil
}

// functionToolChoice accepts "none", "auto", "required" and a named tool the agent runs
// itself; a choice naming a hosted tool is refused like the tool.
func functionToolChoice(name string, raw json.RawMessage) error {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s != "none" && s != "auto" && s != "required" {
			return fmt.Errorf("%q must be \"none\", \"auto\", \"required\" or a function", name)
		}
		return nil
	}
	var c struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &c) != nil || !slices.Contains(clientTools, c.Type) {
		return fmt.Errorf("%q of type %q: only tools the agent runs itself are forwarded", name, c.Type)
	}
	return nil
}

func isInclude(name string, raw json.RawMessage) error {
	var inc []string
	if json.Unmarshal(raw, &inc) != nil {
		return fmt.Errorf("%q must be an array of strings", name)
	}
	for _, v := range inc {
		if !slices.Contains(allowedIncludes, v) {
			return fmt.Errorf("%q value %q is not forwarded (allowed: %s)", name, v, strings.Join(allowedIncludes, ", "))
		}
	}
	return nil
}

// contextMessages returns the conversation a request sends the model, one element per message
// (Chat Completions' messages, the Responses API's input items; a Responses input given as one
// string is one message). The system prompt or instructions are the first.
func (p *preparedRequest) contextMessages() []json.RawMessage {
	var out []json.RawMessage
	if p.responsesAPI {
		if ins, ok := p.params["instructions"]; ok {
			out = append(out, ins)
		}
		in := p.params["input"]
		var items []json.RawMessage
		if json.Unmarshal(in, &items) == nil {
			return append(out, items...)
		}
		return append(out, in)
	}
	var msgs []json.RawMessage
	_ = json.Unmarshal(p.params["messages"], &msgs) // checked by parseRequest
	return msgs
}

// jsonText returns every string in a JSON value, decoded, one per line: a message's text,
// whatever shape its content takes (a string, content parts, tool results, tool call
// arguments).
func jsonText(m json.RawMessage) string {
	var v any
	if json.Unmarshal(m, &v) != nil {
		return ""
	}
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			b.WriteString(x)
			b.WriteByte('\n')
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return b.String()
}
