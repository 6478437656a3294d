package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// A request is parsed and rebuilt, never forwarded as it came: only the fields of its
// protocol's allow-list reach the upstream, each checked for its type, so that a sandboxed
// program cannot switch on what the job's owner did not configure (another model, hosted
// tools that reach the network from the provider's side, content the provider fetches from a
// URL, stored state that outlives the job and escapes its meter). An unknown field is refused
// rather than dropped: the agent's author learns what the gateway does not carry, instead of
// a silently different answer. What the checks below share is here; each protocol's
// allow-list is in its own file.

// fieldCheck validates one field's value (never JSON null: a null field is dropped).
type fieldCheck func(name string, raw json.RawMessage) error

// maxOutputBound bounds any max output a client names: far above every model's output limit,
// far below what could overflow a reservation.
const maxOutputBound = 1 << 24

func badRequest(format string, args ...any) *Refusal {
	return &Refusal{Status: http.StatusBadRequest, Code: "invalid_request", Msg: "model gateway: " + fmt.Sprintf(format, args...)}
}

// checkFields checks params against an allow-list (fields named in refused are refused with
// their reason, in ignored are accepted and dropped), deletes JSON nulls and ignored fields,
// and requires the required ones.
func checkFields(params map[string]json.RawMessage, allowed map[string]fieldCheck, refused map[string]string, ignored []string, required ...string) *Refusal {
	// Sorted, so that the first of several bad fields is always the one named.
	for _, name := range slices.Sorted(maps.Keys(params)) {
		raw := params[name]
		if slices.Contains(ignored, name) {
			delete(params, name)
			continue
		}
		check, ok := allowed[name]
		if !ok {
			if why, ok := refused[name]; ok {
				return badRequest("field %q is not forwarded: %s", name, why)
			}
			return badRequest("field %q is not forwarded (allowed: %s)", name, strings.Join(slices.Sorted(maps.Keys(allowed)), ", "))
		}
		if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			delete(params, name)
			continue
		}
		if err := check(name, raw); err != nil {
			return badRequest("%v", err)
		}
	}
	for _, r := range required {
		if _, ok := params[r]; !ok {
			return badRequest("field %q is required", r)
		}
	}
	return nil
}

// parseObject reads a body known to be one JSON value as an object of raw fields.
func parseObject(body []byte) (map[string]json.RawMessage, *Refusal) {
	var params map[string]json.RawMessage
	if err := json.Unmarshal(body, &params); err != nil || params == nil {
		return nil, &Refusal{Status: http.StatusBadRequest, Code: "invalid_json", Msg: "the request body is not a JSON object"}
	}
	return params, nil
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

// isMaxOutput accepts a max output from 1 to maxOutputBound: it feeds the reservation.
func isMaxOutput(name string, raw json.RawMessage) error {
	var n int64
	if json.Unmarshal(raw, &n) != nil || n < 1 || n > maxOutputBound {
		return fmt.Errorf("%q must be an integer from 1 to %d", name, maxOutputBound)
	}
	return nil
}

// isBoundedInt accepts a non-negative integer up to maxOutputBound (a thinking budget).
func isBoundedInt(name string, raw json.RawMessage) error {
	var n int64
	if json.Unmarshal(raw, &n) != nil || n < 0 || n > maxOutputBound {
		return fmt.Errorf("%q must be an integer from 0 to %d", name, maxOutputBound)
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

// fetchedContent finds, anywhere in a conversation, content that would make the provider
// fetch something the sandbox cannot reach (a URL) or read state that outlives the job (a
// stored file or item). bad says, for one JSON object at path, why it is refused ("" when it
// is not). Only the JSON structure is walked: a tool result's text that merely mentions a URL
// is a string, not such an object.
func fetchedContent(raw json.RawMessage, root string, bad func(obj map[string]any) string) error {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil // the allow-list checked the type; nothing to walk
	}
	var walk func(v any, path string) error
	walk = func(v any, path string) error {
		switch x := v.(type) {
		case []any:
			for i, e := range x {
				if err := walk(e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		case map[string]any:
			if why := bad(x); why != "" {
				return fmt.Errorf("%s: %s; send the content inline (base64 data) instead", path, why)
			}
			for _, k := range slices.Sorted(maps.Keys(x)) {
				if err := walk(x[k], path+"."+k); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(v, root)
}

// isRemoteURL says a URL is one the provider would fetch: anything but inline data.
func isRemoteURL(u string) bool {
	return !strings.HasPrefix(strings.TrimSpace(strings.ToLower(u)), "data:")
}

// jsonField reads an object's field the way encoding/json matches a key to a struct field:
// exactly, else case-insensitively. A relay written in Go between the gateway and the
// provider decodes so, and to it IMAGE_URL is image_url: every check of a key the provider or
// a relay could act on reads it here. The gateway's JSON check refuses an object with two
// keys that fold together, so at most one matches.
func jsonField(obj map[string]any, key string) (any, bool) {
	if v, ok := obj[key]; ok {
		return v, true
	}
	for k, v := range obj {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return nil, false
}

// jsonString reads a JSON string field of an object (jsonField; "" when absent or not a
// string).
func jsonString(obj map[string]any, key string) string {
	v, _ := jsonField(obj, key)
	s, _ := v.(string)
	return s
}

// jsonIs says an object's string field holds want, compared case-insensitively: refusing
// "URL" with "url" costs nothing, and a lenient reader could take one for the other.
func jsonIs(obj map[string]any, key, want string) bool {
	return strings.EqualFold(jsonString(obj, key), want)
}
