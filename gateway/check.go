package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
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
	if err := decodeChecked(body, &params); err != nil || params == nil {
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
	if decodeChecked(raw, &s) != nil {
		return fmt.Errorf("%q must be a string", name)
	}
	return nil
}

func isBool(name string, raw json.RawMessage) error {
	var b bool
	if decodeChecked(raw, &b) != nil {
		return fmt.Errorf("%q must be a boolean", name)
	}
	return nil
}

func isNumber(name string, raw json.RawMessage) error {
	var f float64
	if decodeChecked(raw, &f) != nil {
		return fmt.Errorf("%q must be a number", name)
	}
	return nil
}

func isInt(name string, raw json.RawMessage) error {
	var n int64
	if decodeChecked(raw, &n) != nil {
		return fmt.Errorf("%q must be an integer", name)
	}
	return nil
}

// isMaxOutput accepts a max output from 1 to maxOutputBound: it feeds the reservation.
func isMaxOutput(name string, raw json.RawMessage) error {
	var n int64
	if decodeChecked(raw, &n) != nil || n < 1 || n > maxOutputBound {
		return fmt.Errorf("%q must be an integer from 1 to %d", name, maxOutputBound)
	}
	return nil
}

// isBoundedInt accepts a non-negative integer up to maxOutputBound (a thinking budget).
func isBoundedInt(name string, raw json.RawMessage) error {
	var n int64
	if decodeChecked(raw, &n) != nil || n < 0 || n > maxOutputBound {
		return fmt.Errorf("%q must be an integer from 0 to %d", name, maxOutputBound)
	}
	return nil
}

func isOne(name string, raw json.RawMessage) error {
	var n int64
	if decodeChecked(raw, &n) != nil || n != 1 {
		return fmt.Errorf("%q must be 1: the gateway forwards one choice per request", name)
	}
	return nil
}

func isObject(name string, raw json.RawMessage) error {
	var m map[string]json.RawMessage
	if decodeChecked(raw, &m) != nil {
		return fmt.Errorf("%q must be an object", name)
	}
	return nil
}

func isArray(name string, raw json.RawMessage) error {
	var a []json.RawMessage
	if decodeChecked(raw, &a) != nil {
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
	if isString(name, raw) != nil && decodeChecked(raw, &ss) != nil {
		return fmt.Errorf("%q must be a string or an array of strings", name)
	}
	return nil
}

// isFalse accepts only false, for flags whose true the gateway refuses, and says why.
func isFalse(why string) fieldCheck {
	return func(name string, raw json.RawMessage) error {
		var b bool
		if decodeChecked(raw, &b) != nil || b {
			return fmt.Errorf("%q must be false: %s", name, why)
		}
		return nil
	}
}

// fetchedContent finds, anywhere in a conversation, content that would make the provider
// fetch something the sandbox cannot reach (a URL) or read state that outlives the job (a
// stored file or item). bad says, for one JSON object at path, why it is refused ("" when it
// is not). Only the JSON structure is walked: a tool result's text that merely mentions a URL
// is a string, not such an object. Nothing is decoded but what bad reads: a conversation is
// mostly tool output, which no check reads.
func fetchedContent(raw json.RawMessage, root string, bad func(obj jsonObject) string) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil // no such field
	}
	why, where := walkFetched(raw, bad)
	if why == "" {
		return nil
	}
	// The path is spelled only for a refusal: where collected its segments on the way back.
	slices.Reverse(where)
	return fmt.Errorf("%s%s: %s; send the content inline (base64 data) instead", root, strings.Join(where, ""), why)
}

// walkFetched walks a value for fetchedContent, an object's members in the order of their
// keys, and says why the first object bad refuses is refused, and where (innermost first).
func walkFetched(raw []byte, bad func(obj jsonObject) string) (why string, where []string) {
	switch raw[0] {
	case '[':
		eachElement(raw, func(i int, e []byte) bool {
			if why, where = walkFetched(e, bad); why != "" {
				where = append(where, "["+strconv.Itoa(i)+"]")
				return false
			}
			return true
		})
	case '{':
		obj := readObject(raw)
		if why = bad(obj); why != "" {
			return why, nil
		}
		slices.SortFunc(obj, func(a, b jsonMember) int { return strings.Compare(a.key, b.key) })
		for _, m := range obj {
			if why, where = walkFetched(m.val, bad); why != "" {
				return why, append(where, "."+m.key)
			}
		}
	}
	return why, where
}

// jsonObject is a JSON object's members, their values as they are: what a check reads of an
// object without decoding what it does not read.
type jsonObject []jsonMember

type jsonMember struct {
	key string
	val []byte
}

// readObject reads the members of an object (none when raw is no object).
func readObject(raw []byte) jsonObject {
	var obj jsonObject
	eachMember(raw, func(k string, v []byte) bool {
		obj = append(obj, jsonMember{k, v})
		return true
	})
	return obj
}

// field is an object's field as jsonField reads one: by its exact key, else
// case-insensitively.
func (o jsonObject) field(key string) ([]byte, bool) {
	for _, m := range o {
		if m.key == key {
			return m.val, true
		}
	}
	for _, m := range o {
		if strings.EqualFold(m.key, key) {
			return m.val, true
		}
	}
	return nil, false
}

// str is a string field (field; "" when absent or not a string).
func (o jsonObject) str(key string) string {
	if v, ok := o.field(key); ok && v[0] == '"' {
		return unquote(v)
	}
	return ""
}

// is says a string field holds want, compared case-insensitively: refusing "URL" with "url"
// costs nothing, and a lenient reader could take one for the other.
func (o jsonObject) is(key, want string) bool { return strings.EqualFold(o.str(key), want) }

// object is an object field (ok false when absent or not an object).
func (o jsonObject) object(key string) (jsonObject, bool) {
	if v, ok := o.field(key); ok && v[0] == '{' {
		return readObject(v), true
	}
	return nil, false
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
