package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// validDepth is the nesting encoding/json's scanner allows; checking with it, Check must
// agree with json.Valid on every text without a repeated key.
const validDepth = 10000

// FuzzCheck holds Check to encoding/json: Check accepts a text exactly when json.Valid does
// and no object in it repeats a key, as found by a json.Decoder token walk (which decodes
// keys with encoding/json's own unquoting, so escapes, surrogates and invalid UTF-8 are
// judged by it and not by Check's copy of those rules).
func FuzzCheck(f *testing.F) {
	for _, seed := range []string{
		`{"type":"a","type":"b"}`, `{"type":"a","\u0074ype":"b"}`, `{"tools":[{"type":"a"},{"type":"b"}]}`,
		`{"\ud800":1,"\udfff":2}`, `{"\ud83d\ude00":1,"😀":2}`, "{\"a\xff\":1,\"a\\ufffd\":2}",
		`{"\ud800\u0041":1,"\ufffdA":2}`, `{"a\/b":1,"a/b":2}`, `[0,-0.5e+7,1E9]`, `01`, `"\u12"`,
		`{"a":[1,{"b":null}],"c":true}`, `[1,]`, `{"a" 1}`, " \t\n\r[] ", "\"\x7f\x00\"",
		`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k1\u0037":17}`,
		strings.Repeat("[", 65) + strings.Repeat("]", 65),
	} {
		f.Add([]byte(seed))
	}
	// A small request only: the fuzzer minimizes every new interesting input, without
	// counting the runs as execs, and minimizing inputs grown from kilobytes stalls it for
	// tens of seconds each.
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"h\u00e9\n"}]},` +
		`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"cmd\":\"ls\"}"}}]}],` +
		`"tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{}}}}],"temperature":0.2,"stream":false}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		err := Check(data, Options{MaxDepth: validDepth})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is no *Error", err)
			}
			if e.Offset < 0 || e.Offset > int64(len(data)) || e.Msg == "" {
				t.Fatalf("error %+v out of the text of %d bytes", *e, len(data))
			}
		}
		if !json.Valid(data) {
			if err == nil {
				t.Fatalf("Check accepts %q, which json.Valid refuses", data)
			}
			return
		}
		dup, repeated := repeatedKey(t, data)
		switch {
		case err == nil && repeated:
			t.Fatalf("Check accepts %q, which repeats key %q", data, dup)
		case err != nil && !repeated:
			t.Fatalf("Check refuses %q, valid without repeated keys: %v", data, err)
		case err != nil && !strings.HasPrefix(err.(*Error).Msg, "duplicate key "):
			t.Fatalf("Check refuses %q, which repeats key %q, for another reason: %v", data, dup, err)
		}
		// The default bound refuses only by depth what the large one accepted.
		if derr := Check(data, Options{}); derr != nil && (err == nil || derr.Error() != err.Error()) &&
			!strings.HasPrefix(derr.(*Error).Msg, "nesting deeper than") {
			t.Fatalf("Check with the default depth: %v; with %d: %v", derr, validDepth, err)
		}
	})
}

// repeatedKey returns the first key of a valid text that its object repeats (equal, or equal
// under Unicode case folding, as encoding/json matches fields), found independently of
// Check: encoding/json decodes the keys and a list per open object remembers them.
func repeatedKey(t *testing.T, data []byte) (string, bool) {
	type open struct {
		keys *[]string // nil for an array
		key  bool      // the next string token is a key
	}
	var stack []open
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return "", false
		}
		if err != nil {
			t.Fatalf("token walk of a valid text: %v", err)
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, open{keys: &[]string{}, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, open{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		default:
			if n := len(stack); n > 0 && stack[n-1].keys != nil && stack[n-1].key {
				k := tok.(string)
				for _, seen := range *stack[n-1].keys {
					if strings.EqualFold(seen, k) {
						return k, true
					}
				}
				*stack[n-1].keys = append(*stack[n-1].keys, k)
				stack[n-1].key = false
				continue
			}
		}
		// A value ended: its object, if it is in one, expects a key next.
		if n := len(stack); n > 0 && stack[n-1].keys != nil {
			stack[n-1].key = true
		}
	}
}
