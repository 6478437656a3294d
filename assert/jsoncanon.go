package assert

import (
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"
)

// maxJSONDepth matches encoding/json's nesting limit; it also stops a cyclic Go value.
const maxJSONDepth = 10000

// canonicalJSON checks an expected stdout_json document and returns it in the form the matcher
// compares: map[string]any, []any, json.Number, string, bool and nil. Numbers of any Go type
// become json.Number; map[any]any with string keys (what some YAML decoders produce) becomes
// map[string]any. A document that is already canonical is returned as is, without copying.
func canonicalJSON(v any) (any, error) {
	if v == nil {
		return nil, invalid("the expected JSON document is missing (null)")
	}
	out, _, err := canonical(v, &pathStack{}, 0)
	return out, err
}

// canonical returns v in canonical form and whether that differs from v.
func canonical(v any, path *pathStack, depth int) (any, bool, error) {
	if depth > maxJSONDepth {
		return nil, false, invalid("the expected JSON document is nested more than %d deep at %s", maxJSONDepth, path)
	}
	switch x := v.(type) {
	case nil, bool:
		return v, false, nil
	case string:
		if !utf8.ValidString(x) {
			return nil, false, invalid("the string at %s is not valid UTF-8", path)
		}
		return v, false, nil
	case json.Number:
		if _, ok := numberKey(string(x)); !ok {
			return nil, false, invalid("%q at %s is not a JSON number", string(x), path)
		}
		return v, false, nil
	case float64:
		return floatNumber(x, 64, path)
	case float32:
		return floatNumber(float64(x), 32, path)
	case int:
		return json.Number(strconv.FormatInt(int64(x), 10)), true, nil
	case int8:
		return json.Number(strconv.FormatInt(int64(x), 10)), true, nil
	case int16:
		return json.Number(strconv.FormatInt(int64(x), 10)), true, nil
	case int32:
		return json.Number(strconv.FormatInt(int64(x), 10)), true, nil
	case int64:
		return json.Number(strconv.FormatInt(x, 10)), true, nil
	case uint:
		return json.Number(strconv.FormatUint(uint64(x), 10)), true, nil
	case uint8:
		return json.Number(strconv.FormatUint(uint64(x), 10)), true, nil
	case uint16:
		return json.Number(strconv.FormatUint(uint64(x), 10)), true, nil
	case uint32:
		return json.Number(strconv.FormatUint(uint64(x), 10)), true, nil
	case uint64:
		return json.Number(strconv.FormatUint(x, 10)), true, nil
	case []any:
		var out []any
		for i, e := range x {
			path.pushIndex(i)
			c, changed, err := canonical(e, path, depth+1)
			path.pop()
			if err != nil {
				return nil, false, err
			}
			if changed && out == nil {
				out = make([]any, len(x))
				copy(out, x)
			}
			if out != nil {
				out[i] = c
			}
		}
		if out != nil {
			return out, true, nil
		}
		return v, false, nil
	case map[string]any:
		var out map[string]any
		for _, k := range sortedKeys(x) {
			if !utf8.ValidString(k) {
				return nil, false, invalid("a key at %s is not valid UTF-8", path)
			}
			path.pushKey(k)
			c, changed, err := canonical(x[k], path, depth+1)
			path.pop()
			if err != nil {
				return nil, false, err
			}
			if changed && out == nil {
				out = make(map[string]any, len(x))
				for k2, v2 := range x {
					out[k2] = v2
				}
			}
			if out != nil {
				out[k] = c
			}
		}
		if out != nil {
			return out, true, nil
		}
		return v, false, nil
	case map[any]any:
		keys := make([]string, 0, len(x))
		byKey := make(map[string]any, len(x))
		for k, e := range x {
			ks, ok := k.(string)
			if !ok {
				return nil, false, invalid("the object key %v at %s is a %T, not a string; quote it", k, path, k)
			}
			keys = append(keys, ks)
			byKey[ks] = e
		}
		sort.Strings(keys)
		out := make(map[string]any, len(x))
		for _, k := range keys {
			path.pushKey(k)
			c, _, err := canonical(byKey[k], path, depth+1)
			path.pop()
			if err != nil {
				return nil, false, err
			}
			out[k] = c
		}
		return out, true, nil
	case time.Time:
		return nil, false, invalid("the value at %s is a timestamp, not JSON; quote it in YAML to compare it as a string", path)
	default:
		return nil, false, invalid("the value at %s has type %T, which is not JSON", path, v)
	}
}

func floatNumber(f float64, bits int, path *pathStack) (any, bool, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, false, invalid("the number at %s is %v, which JSON cannot represent", path, f)
	}
	// The shortest representation that round-trips is what the author wrote in YAML or JSON.
	return json.Number(strconv.FormatFloat(f, 'g', -1, bits)), true, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
