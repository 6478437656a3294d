package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// gemini is the Gemini API (generativelanguage.googleapis.com) as Gemini CLI and Google's
// SDKs speak it: the model in the path (POST /v1beta/models/{model}:generateContent,
// :streamGenerateContent?alt=sse, :countTokens), the key in x-goog-api-key. Its requests are
// checked and read for the trajectory here; its answers are metered in gemini_stream.go.
type gemini struct{}

func (gemini) Name() string { return APIGemini }

func (gemini) Paths() string {
	return "POST /v1beta/models/{model}:generateContent, :streamGenerateContent and :countTokens, and GET /v1beta/models"
}

// geminiMethods are the methods served, by the name the path gives them.
var geminiMethods = map[string]Route{
	"generateContent":       {Op: "generateContent", Kind: Generate},
	"streamGenerateContent": {Op: "streamGenerateContent", Kind: Generate, Stream: true},
	"countTokens":           {Op: "countTokens", Kind: Count},
}

// maxGeminiModel bounds a model name in a path; Google's are a few dozen bytes.
const maxGeminiModel = 128

func (gemini) Route(r *http.Request) (Route, bool) {
	if r.URL.Path == "/v1beta/models" || r.URL.Path == "/v1/models" {
		return Route{Op: "models", Kind: Local}, true
	}
	// The decoded path: an escaped slash (%2F) in the model is a slash here, and refused.
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1beta/models/")
	if !ok {
		rest, ok = strings.CutPrefix(r.URL.Path, "/v1/models/")
	}
	if !ok {
		return Route{}, false
	}
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		if !validGeminiModel(rest) {
			return Route{}, false
		}
		return Route{Op: "model", Kind: Local, Model: rest}, true
	}
	rt, ok := geminiMethods[rest[i+1:]]
	if !ok || !validGeminiModel(rest[:i]) {
		return Route{}, false
	}
	rt.Model = rest[:i]
	if rt.Stream && r.URL.Query().Get("alt") != "sse" {
		// A stream as one JSON array, which no current client asks for: Parse refuses it.
		rt.Op = geminiArrayStream
	}
	return rt, true
}

// geminiArrayStream is the Op of a streamGenerateContent request without alt=sse.
const geminiArrayStream = "streamGenerateContent (JSON array)"

// validGeminiModel accepts a model id as Google spells them (gemini-2.5-pro,
// gemini-2.0-flash-001): letters, digits, dots, dashes and underscores, starting with a letter
// or digit. A path segment of dots, a slash or anything else is no model.
func validGeminiModel(m string) bool {
	if m == "" || len(m) > maxGeminiModel || !isAlnum(m[0]) {
		return false
	}
	for i := range len(m) {
		if c := m[i]; !isAlnum(c) && c != '.' && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// Token reads the key where Google's clients put it: x-goog-api-key (the SDKs), the key query
// parameter (curl examples), or a Bearer token (Gemini CLI with
// GEMINI_API_KEY_AUTH_MECHANISM=bearer). Gemini CLI may send an empty x-goog-api-key beside
// another, so an empty one does not count.
func (gemini) Token(r *http.Request) string {
	if k := r.Header.Get("X-Goog-Api-Key"); k != "" {
		return k
	}
	if k := r.URL.Query().Get("key"); k != "" {
		return k
	}
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return tok
}

// geminiRequestHeaders are the only client headers sent upstream: no key, no cookie, no
// x-goog-user-project or x-goog-api-key of the client's, no Accept-Encoding (the transport
// decompresses, so that the usage can be read), nothing from GEMINI_CLI_CUSTOM_HEADERS.
var geminiRequestHeaders = []string{"Content-Type", "Accept", "User-Agent", "X-Goog-Api-Client"}

// Upstream is the configured model's method under the base URL, which has no version (as
// GOOGLE_GEMINI_BASE_URL); one given with a version is taken without it. The client's query
// is never forwarded (its ?key= is the gateway token): a stream gets alt=sse, nothing else.
func (gemini) Upstream(base *url.URL, rt Route, model, key string, client http.Header) (string, http.Header) {
	u := *base
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/v1beta"), "/v1")
	u.RawPath = ""
	escaped := u.EscapedPath()
	method := rt.Op
	u.Path += "/v1beta/models/" + model + ":" + method
	u.RawPath = escaped + "/v1beta/models/" + url.PathEscape(model) + ":" + method
	u.RawQuery = ""
	if rt.Stream {
		u.RawQuery = "alt=sse"
	}
	h := forwardHeaders(client, geminiRequestHeaders)
	if key != "" {
		h.Set("X-Goog-Api-Key", key)
	}
	return u.String(), h
}

// ResponseHeaders: Google names no request id header of its own (an answer carries its
// responseId in the body); X-Request-Id is passed for servers that speak the API and set it.
func (gemini) ResponseHeaders() []string {
	return []string{"Content-Type", "Retry-After", "X-Request-Id"}
}

// Local answers GET /v1beta/models (and /v1beta/models/{model}) as the Gemini API's
// models.list and models.get do, with the configured model alone, named as Google names
// models ("models/…"), with the methods the gateway serves for it.
func (g gemini) Local(rt Route, model string) (int, []byte) {
	entry := map[string]any{"name": "models/" + model, "baseModelId": model, "displayName": model,
		"supportedGenerationMethods": []string{"generateContent", "streamGenerateContent", "countTokens"}}
	if rt.Op == "model" {
		if rt.Model != model {
			return http.StatusNotFound, g.Error(http.StatusNotFound, "model_not_found", "the model gateway serves only the configured model "+model)
		}
		return http.StatusOK, mustJSON(entry)
	}
	return http.StatusOK, mustJSON(map[string]any{"models": []any{entry}})
}

// Error is Google's error format ({"error":{"code","message","status"}}), which the SDKs turn
// into their API errors and Gemini CLI shows; the gateway's own code rides in an ErrorInfo
// detail as its reason.
func (gemini) Error(status int, code, msg string) []byte {
	return mustJSON(map[string]any{"error": map[string]any{
		"code": status, "message": msg, "status": geminiStatus(status),
		"details": []any{map[string]any{
			"@type":  "type.googleapis.com/google.rpc.ErrorInfo",
			"reason": strings.ToUpper(code), "domain": "skillfleet-gateway",
		}},
	}})
}

// StreamError is an error chunk as Google ends a failed stream: a data line holding the error
// object, which the SDKs raise as an API error. It ends in CRLFs, as Google's events do: the
// Go SDK splits events at the first "\n\n" before it looks for "\r\n\r\n", so an LF-ended event
// after Google's CRLF-ended ones would be read as one with them; a CRLF-ended one reads right
// after either.
func (gemini) StreamError(code, msg string) []byte {
	b := gemini{}.Error(http.StatusBadGateway, code, msg)
	return append(append([]byte("data: "), b...), "\r\n\r\n"...)
}

// geminiStatus is the canonical status (google.rpc.Code) Google's APIs give an HTTP status.
func geminiStatus(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusConflict:
		return "ABORTED"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case http.StatusNotImplemented, http.StatusMethodNotAllowed:
		return "UNIMPLEMENTED"
	case http.StatusBadGateway, http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	if status/100 == 4 {
		return "FAILED_PRECONDITION"
	}
	return "INTERNAL"
}

// Google's JSON mapping of its protos accepts each field under its lowerCamelCase name and
// under its proto (snake_case) name: generationConfig and generation_config are one field. The
// gateway reads a body with every field name in lowerCamelCase (geminiCanonical), so that the
// allow-list and every nested check see a field whichever way it is spelled, and what goes
// upstream is spelled the way it was checked. An object naming one field both ways is refused:
// it is a duplicate key the gateway's JSON check cannot see, and the allow-list could read one
// value while the upstream acts on the other.

// geminiOpaque are the fields whose values are the client's own data rather than the API's
// structure (a call's arguments, a function's response, JSON schemas, labels): their keys are
// names the client chose, kept as they are and not inspected. Google fetches nothing in them.
var geminiOpaque = []string{"args", "response", "parameters", "parametersJsonSchema", "responseSchema",
	"responseJsonSchema", "_responseJsonSchema", "labels", "partMetadata"}

// maxGeminiDepth bounds how deep the API's own structure is read (each level of it is
// decoded once more). The deepest of it is a function response's file,
// generateContentRequest.contents[i].parts[j].functionResponse.parts[k].fileData, 9 levels
// down; below that only values of opaque kinds nest, which Google does not read either.
const maxGeminiDepth = 16

// geminiCanonical rewrites a JSON value's field names to lowerCamelCase, down to
// maxGeminiDepth and outside opaque fields, and refuses content the provider would fetch.
func geminiCanonical(raw json.RawMessage, path string, depth int) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if depth > maxGeminiDepth || len(raw) == 0 {
		return raw, nil
	}
	switch raw[0] {
	case '{':
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("%s: not a JSON object", bodyPath(path))
		}
		out := make(map[string]json.RawMessage, len(obj))
		spelled := make(map[string]string, len(obj))
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			name := lowerCamel(k)
			at := joinPath(path, name)
			if other, ok := spelled[name]; ok {
				return nil, fmt.Errorf("%s: %q and %q name the same field; send it once", at, other, k)
			}
			spelled[name] = k
			if strings.EqualFold(name, "fileData") || strings.EqualFold(k, "file_data") {
				// A file by URI: a URL the provider fetches, or a file uploaded to it, which
				// outlives the job. Anywhere in the structure: a part, a function response's part.
				// In any case: a Go relay (genai's structs) reads FileData as fileData.
				return nil, fmt.Errorf("%s: a file by URI is fetched by the provider, outside the sandbox, or stored with it; send the content inline (inlineData, base64) instead", at)
			}
			v := obj[k]
			if !slices.Contains(geminiOpaque, name) {
				var err error
				if v, err = geminiCanonical(v, at, depth+1); err != nil {
					return nil, err
				}
			}
			out[name] = v
		}
		return json.Marshal(out)
	case '[':
		var arr []json.RawMessage
		if err := json.Unmarshal(raw, &arr); err != nil {
			return nil, fmt.Errorf("%s: not a JSON array", bodyPath(path))
		}
		for i, e := range arr {
			var err error
			if arr[i], err = geminiCanonical(e, fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
				return nil, err
			}
		}
		return json.Marshal(arr)
	}
	return raw, nil
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// bodyPath names a path in an error ("the body" for the root).
func bodyPath(path string) string {
	if path == "" {
		return "the body"
	}
	return path
}

// lowerCamel is a proto field name's JSON name (max_output_tokens: maxOutputTokens). Only a
// name that is snake_case is rewritten: anything else is left as it is, and the allow-list
// judges it.
func lowerCamel(k string) string {
	if !strings.Contains(k, "_") || k[0] < 'a' || k[0] > 'z' || strings.HasSuffix(k, "_") || strings.Contains(k, "__") {
		return k
	}
	for i := range len(k) {
		if c := k[i]; c != '_' && (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return k
		}
	}
	words := strings.Split(k, "_")
	for i := 1; i < len(words); i++ {
		words[i] = strings.ToUpper(words[i][:1]) + words[i][1:]
	}
	return strings.Join(words, "")
}

// geminiFields are the generateContent fields the gateway forwards, by their lowerCamelCase
// names. labels (billing labels, Vertex's) and model (the path names it, and the configured
// one replaces it) are accepted and dropped; cachedContent is refused with its reason.
var geminiFields = map[string]fieldCheck{
	"contents":          isArray,
	"systemInstruction": isObject,
	"tools":             isArray, // checked by geminiTools
	"toolConfig":        geminiToolConfig,
	"generationConfig":  geminiGenerationConfig,
	"safetySettings":    isArray,
}

var geminiDropped = []string{"labels", "model"}

var refusedGeminiFields = map[string]string{
	"cachedContent": "a cached content is state stored with the provider, outside the job and its meter; send the whole contents instead",
}

// geminiGenerationFields are the generationConfig fields forwarded: text answers, one
// candidate, a bounded max output and thinking budget. Not among them: speechConfig,
// imageConfig and other settings of answers that are not text.
var geminiGenerationFields = map[string]fieldCheck{
	"maxOutputTokens":            isMaxOutput,
	"candidateCount":             isOne,
	"responseModalities":         geminiTextOnly,
	"thinkingConfig":             geminiThinkingConfig,
	"temperature":                isNumber,
	"topP":                       isNumber,
	"topK":                       isNumber,
	"seed":                       isInt,
	"presencePenalty":            isNumber,
	"frequencyPenalty":           isNumber,
	"stopSequences":              isStringArray,
	"responseMimeType":           isString,
	"responseSchema":             isObject,
	"responseJsonSchema":         isAny,
	"_responseJsonSchema":        isAny,
	"responseLogprobs":           isBool,
	"logprobs":                   isInt,
	"enableEnhancedCivicAnswers": isBool,
	"mediaResolution":            isString,
}

var geminiThinkingFields = map[string]fieldCheck{
	"includeThoughts": isBool,
	"thinkingBudget":  geminiThinkingBudget,
	"thinkingLevel":   isString,
}

// geminiToolConfigFields: how the model calls the agent's functions. retrievalConfig serves
// hosted tools only, which the gateway does not forward.
var geminiToolConfigFields = map[string]fieldCheck{
	"functionCallingConfig": isObject,
}

// nestedFields checks an object field against an allow-list, naming it in the refusal.
func nestedFields(name string, raw json.RawMessage, allowed map[string]fieldCheck) error {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return fmt.Errorf("%q must be an object", name)
	}
	if ref := checkFields(m, allowed, nil, nil); ref != nil {
		return fmt.Errorf("in %q: %s", name, strings.TrimPrefix(ref.Msg, "model gateway: "))
	}
	return nil
}

func geminiGenerationConfig(name string, raw json.RawMessage) error {
	return nestedFields(name, raw, geminiGenerationFields)
}

func geminiThinkingConfig(name string, raw json.RawMessage) error {
	return nestedFields(name, raw, geminiThinkingFields)
}

func geminiToolConfig(name string, raw json.RawMessage) error {
	return nestedFields(name, raw, geminiToolConfigFields)
}

// geminiThinkingBudget accepts -1 (the model decides), 0 (no thinking) up to maxOutputBound.
func geminiThinkingBudget(name string, raw json.RawMessage) error {
	var n int64
	if json.Unmarshal(raw, &n) != nil || n < -1 || n > maxOutputBound {
		return fmt.Errorf("%q must be an integer from -1 to %d", name, maxOutputBound)
	}
	return nil
}

// geminiTextOnly accepts responseModalities of TEXT alone: images and audio are answers the
// gateway's meter and trajectory do not read.
func geminiTextOnly(name string, raw json.RawMessage) error {
	var ms []string
	if json.Unmarshal(raw, &ms) != nil {
		return fmt.Errorf("%q must be an array of strings", name)
	}
	for _, m := range ms {
		if m != "TEXT" {
			return fmt.Errorf("%q value %q is not forwarded: only TEXT answers are", name, m)
		}
	}
	return nil
}

func isStringArray(name string, raw json.RawMessage) error {
	var ss []string
	if json.Unmarshal(raw, &ss) != nil {
		return fmt.Errorf("%q must be an array of strings", name)
	}
	return nil
}

func isAny(string, json.RawMessage) error { return nil }

// Hosted tools run on Google's side, where the sandbox's network policy does not reach. The
// search and fetch tools a CLI may send for its web tools are taken out of the request and
// named in the trajectory; every other one (code execution, computer use, file search, maps,
// MCP servers, retrieval) refuses the request.
var geminiRemovedTools = []string{"googleSearch", "googleSearchRetrieval", "urlContext"}

// geminiTools keeps the function declarations (the tools the agent runs itself), removes the
// default hosted tools, refuses any other, and drops tool entries left empty. n counts the
// function declarations kept.
func geminiTools(raw json.RawMessage) (kept json.RawMessage, n int, removed []string, ref *Refusal) {
	var tools []json.RawMessage
	if json.Unmarshal(raw, &tools) != nil {
		return nil, 0, nil, badRequest(`"tools" must be an array of objects`)
	}
	out := make([]json.RawMessage, 0, len(tools))
	for i, t := range tools {
		var tool map[string]json.RawMessage
		if json.Unmarshal(t, &tool) != nil || tool == nil {
			return nil, 0, nil, badRequest("tools[%d] must be an object", i)
		}
		for _, k := range slices.Sorted(maps.Keys(tool)) {
			switch {
			case k == "functionDeclarations":
				var decls []map[string]json.RawMessage
				if json.Unmarshal(tool[k], &decls) != nil {
					return nil, 0, nil, badRequest("tools[%d].functionDeclarations must be an array of objects", i)
				}
				for j, d := range decls {
					if d == nil || isString("name", d["name"]) != nil {
						return nil, 0, nil, badRequest("tools[%d].functionDeclarations[%d] must be an object with a name", i, j)
					}
				}
				n += len(decls)
			case slices.Contains(geminiRemovedTools, k):
				delete(tool, k)
				if !slices.Contains(removed, k) {
					removed = append(removed, k)
				}
			default:
				return nil, 0, nil, badRequest("tools[%d].%s is not forwarded: only functionDeclarations, the tools the agent runs itself, are; hosted tools run outside the sandbox", i, k)
			}
		}
		if len(tool) > 0 {
			out = append(out, mustJSON(tool))
		}
	}
	return mustJSON(out), n, removed, nil
}

// geminiRequest is a parsed generateContent or countTokens request, its field names in
// lowerCamelCase.
type geminiRequest struct {
	// requestInfo's model is the model the path named; stream, that the path asked for one.
	requestInfo
	params map[string]json.RawMessage
	// count: a countTokens request, whose generateContentRequest (if any) is inner.
	count bool
	inner *geminiRequest
}

func (gemini) Parse(rt Route, body []byte) (Request, *Refusal) {
	if rt.Op == geminiArrayStream {
		return nil, badRequest("streamGenerateContent is relayed as server-sent events only: add ?alt=sse to the URL")
	}
	canon, err := geminiCanonical(body, "", 0)
	if err != nil {
		return nil, badRequest("%v", err)
	}
	params, ref := parseObject(canon)
	if ref != nil {
		return nil, ref
	}
	if rt.Kind == Count {
		return parseGeminiCount(rt, params)
	}
	p, ref := parseGeminiGenerate(params)
	if ref != nil {
		return nil, ref
	}
	p.model, p.stream = rt.Model, rt.Stream
	return p, nil
}

// parseGeminiGenerate checks a generateContent body (or a countTokens'
// generateContentRequest).
func parseGeminiGenerate(params map[string]json.RawMessage) (*geminiRequest, *Refusal) {
	if ref := checkFields(params, geminiFields, refusedGeminiFields, geminiDropped, "contents"); ref != nil {
		return nil, ref
	}
	p := &geminiRequest{params: params}
	if raw, ok := params["tools"]; ok {
		kept, n, removed, ref := geminiTools(raw)
		if ref != nil {
			return nil, ref
		}
		params["tools"], p.tools, p.removed = kept, n, removed
		if p.tools == 0 {
			// No function left to call: a tool config would configure nothing.
			delete(params, "tools")
			delete(params, "toolConfig")
		}
	}
	if raw, ok := params["generationConfig"]; ok {
		var gc struct {
			MaxOutputTokens int64 `json:"maxOutputTokens"`
		}
		_ = json.Unmarshal(raw, &gc) // checked by geminiGenerationConfig
		p.maxOutput = gc.MaxOutputTokens
	}
	return p, nil
}

// geminiCountFields: a countTokens body is contents, or a generateContentRequest (checked like
// a generateContent body).
var geminiCountFields = map[string]fieldCheck{
	"contents":               isArray,
	"generateContentRequest": isObject,
}

func parseGeminiCount(rt Route, params map[string]json.RawMessage) (*geminiRequest, *Refusal) {
	if ref := checkFields(params, geminiCountFields, nil, []string{"model"}); ref != nil {
		return nil, ref
	}
	p := &geminiRequest{requestInfo: requestInfo{model: rt.Model}, params: params, count: true}
	raw, ok := params["generateContentRequest"]
	if !ok {
		if _, ok := params["contents"]; !ok {
			return nil, badRequest(`field "contents" or "generateContentRequest" is required`)
		}
		return p, nil
	}
	if _, ok := params["contents"]; ok {
		return nil, badRequest(`fields "contents" and "generateContentRequest" exclude each other; send one`)
	}
	var inner map[string]json.RawMessage
	_ = json.Unmarshal(raw, &inner) // checked by isObject
	in, ref := parseGeminiGenerate(inner)
	if ref != nil {
		ref.Msg = strings.Replace(ref.Msg, "model gateway: ", `model gateway: in "generateContentRequest": `, 1)
		return nil, ref
	}
	p.inner = in
	return p, nil
}

// Build is the upstream body: the checked fields, spelled in lowerCamelCase, and maxOutput as
// generationConfig.maxOutputTokens. The configured model goes in the path (Upstream), except
// in a countTokens' generateContentRequest, which must name it.
func (p *geminiRequest) Build(model string, maxOutput int64) ([]byte, error) {
	out := maps.Clone(p.params)
	if p.inner != nil {
		inner := p.inner.body(0)
		inner["model"] = mustJSON("models/" + model)
		out["generateContentRequest"] = mustJSON(inner)
		return json.Marshal(out)
	}
	if p.count {
		return json.Marshal(out)
	}
	return json.Marshal(p.body(maxOutput))
}

// body is the request with maxOutput (when > 0) as its maxOutputTokens. Gemini counts
// thoughts within maxOutputTokens, so a thinkingBudget the gateway's cap undercut is lowered
// under it (see thinkingUnder); -1 (the model decides) and thinkingLevel name no token count
// and are left: the cap bounds them.
func (p *geminiRequest) body(maxOutput int64) map[string]json.RawMessage {
	out := maps.Clone(p.params)
	if maxOutput <= 0 {
		return out
	}
	gc := map[string]json.RawMessage{}
	if raw, ok := out["generationConfig"]; ok {
		_ = json.Unmarshal(raw, &gc)
	}
	gc["maxOutputTokens"] = mustJSON(maxOutput)
	if raw, ok := gc["thinkingConfig"]; ok && (p.maxOutput == 0 || maxOutput < p.maxOutput) {
		var tc map[string]json.RawMessage
		var budget int64
		if json.Unmarshal(raw, &tc) == nil && json.Unmarshal(tc["thinkingBudget"], &budget) == nil {
			if b, ok := thinkingUnder(budget, maxOutput, 1); ok {
				tc["thinkingBudget"] = mustJSON(b)
				gc["thinkingConfig"] = mustJSON(tc)
			}
		}
	}
	out["generationConfig"] = mustJSON(gc)
	return out
}

// geminiContent is a Content: a role (user or model) and its parts.
type geminiContent struct {
	Role  string            `json:"role"`
	Parts []json.RawMessage `json:"parts"`
}

// Conversation reads the system instruction and the contents. A user content's text is a User
// message and each of its function responses a ToolResult; a model content is one Agent
// message: its text, its thought parts as reasoning, its function calls. Gemini's calls and
// responses may carry no id: a call without one gets fc-<content>-<part>, and a response
// without one answers the oldest call of its name not yet answered, as the API matches them.
func (p *geminiRequest) Conversation() []Message {
	var out []Message
	if raw, ok := p.params["systemInstruction"]; ok {
		msg := Message{Role: System, Raw: raw}
		var c geminiContent
		if json.Unmarshal(raw, &c) == nil {
			msg.Text, _ = geminiTexts(c.Parts)
		} else {
			msg.Role = Unreadable
		}
		out = append(out, msg)
	}
	var contents []json.RawMessage
	_ = json.Unmarshal(p.params["contents"], &contents) // checked by parseGeminiGenerate
	// pending are the calls not answered yet, in order.
	var pending []Call
	for i, raw := range contents {
		var c geminiContent
		if json.Unmarshal(raw, &c) != nil {
			out = append(out, Message{Raw: raw})
			continue
		}
		if c.Role == "model" {
			msg := Message{Role: Agent, Raw: raw}
			var texts, thoughts []string
			for j, pr := range c.Parts {
				var part geminiPart
				if json.Unmarshal(pr, &part) != nil {
					continue
				}
				switch {
				case part.FunctionCall != nil:
					call := Call{ID: part.FunctionCall.ID, Name: part.FunctionCall.Name, Args: part.FunctionCall.args()}
					if call.ID == "" {
						call.ID = fmt.Sprintf("fc-%d-%d", i, j)
					}
					msg.Calls = append(msg.Calls, call)
					pending = append(pending, call)
				case part.Text == nil:
				case part.Thought:
					thoughts = append(thoughts, *part.Text)
				default:
					texts = append(texts, *part.Text)
				}
			}
			msg.Text, msg.Reasoning = strings.Join(texts, ""), strings.Join(thoughts, "")
			out = append(out, msg)
			continue
		}
		// A user's content (role user, or none): its text first as one message, then each
		// function's response.
		var results []Message
		var userParts []json.RawMessage
		for _, pr := range c.Parts {
			var part geminiPart
			if json.Unmarshal(pr, &part) != nil || part.FunctionResponse == nil {
				userParts = append(userParts, pr)
				continue
			}
			fr := part.FunctionResponse
			id := fr.ID
			k := slices.IndexFunc(pending, func(c Call) bool {
				return (id != "" && c.ID == id) || (id == "" && c.Name == fr.Name)
			})
			if k >= 0 {
				id = pending[k].ID
				pending = slices.Delete(pending, k, k+1)
			}
			results = append(results, Message{Role: ToolResult, Text: geminiResponseText(fr.Response),
				CallID: id, CallName: fr.Name, Raw: pr})
		}
		if len(userParts) > 0 || len(results) == 0 {
			text, _ := geminiTexts(userParts)
			// The whole content when it holds no response: what a skill's body may be in.
			r := raw
			if len(results) > 0 {
				r = mustJSON(userParts)
			}
			out = append(out, Message{Role: User, Text: text, Raw: r})
		}
		out = append(out, results...)
	}
	return out
}

// geminiTexts joins the text of parts that are not thoughts; ok is false when a part could
// not be read.
func geminiTexts(parts []json.RawMessage) (string, bool) {
	var texts []string
	ok := true
	for _, pr := range parts {
		var part geminiPart
		if json.Unmarshal(pr, &part) != nil {
			ok = false
			continue
		}
		if part.Text != nil && !part.Thought {
			texts = append(texts, *part.Text)
		}
	}
	return strings.Join(texts, "\n"), ok
}

// geminiResponseText is a function's response as the trajectory keeps it: its output (or
// content) when that is a string, as Gemini CLI and the SDKs send a tool's output, else the
// response's JSON.
func geminiResponseText(raw json.RawMessage) string {
	var r struct {
		Output  json.RawMessage `json:"output"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &r) == nil {
		for _, v := range []json.RawMessage{r.Output, r.Content} {
			var s string
			if json.Unmarshal(v, &s) == nil {
				return s
			}
		}
	}
	return string(raw)
}
