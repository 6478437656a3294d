package gateway

import (
	"bytes"
	"cmp"
	"encoding"
	"encoding/binary"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/skillfleet/skillfleet/internal/jsonscan"
)

// A request body is checked whole once (jsonscan.Check: one JSON value, no repeated key, no
// deep nesting) before any protocol reads it. encoding/json cannot take that for granted: every
// json.Unmarshal validates its input first, and a json.RawMessage it fills is read again, and
// validated again, by the next Unmarshal, so reading a conversation level by level scanned a
// 270 KB body a dozen times (issue 31). What follows reads text already known to be valid JSON
// in one pass per level, skipping the values it does not decode (a string by IndexByte), and
// aliases the body instead of copying it. It decodes as json.Unmarshal does, value for value:
// the same fields matched the same way (the exact name, else case-insensitively), null leaving
// a value as it was, a value of the wrong type an error that does not stop the rest, JSON
// strings unquoted alike; what it does not know (another type, a number too large) it leaves
// to json.Unmarshal. Only text the gateway checked, or produced, is read here: a streamed
// answer's events are read by the one-pass decoders of jsondecode.go, which validate as they
// read, and a whole answer still goes through encoding/json.

// errChecked is what decodeChecked reports for a value of the wrong type, as json.Unmarshal
// reports an *UnmarshalTypeError: the callers only test for an error.
type errChecked struct{ what, into string }

func (e *errChecked) Error() string { return "json: cannot unmarshal " + e.what + " into " + e.into }

// skipSpace is the index of the first byte at or after i that is not JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString is the index just past the JSON string whose opening quote is at i.
func skipString(b []byte, i int) int {
	i++
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b)
		}
		i += j
		// The quote ends the string unless an odd run of backslashes escapes it.
		k := i - 1
		for k >= 0 && b[k] == '\\' {
			k--
		}
		i++
		if (i-2-k)%2 == 0 {
			return i
		}
	}
}

// skipValue is the index just past the JSON value that starts at i (no whitespace before it).
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	// A number or a literal: up to the next delimiter.
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// eachMember calls f with each member of the object raw (its key unquoted, its value without
// whitespace around it), in order, until f returns false; ok is false when raw is no object.
func eachMember(raw []byte, f func(key string, val []byte) bool) (ok bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	i = skipSpace(raw, i+1)
	for i < len(raw) && raw[i] == '"' {
		end := skipString(raw, i)
		key := unquote(raw[i:end])
		i = skipSpace(raw, end)
		i = skipSpace(raw, i+1) // past the colon
		vend := skipValue(raw, i)
		if vend == i {
			return true // not JSON: never so in what the gateway checked
		}
		if !f(key, raw[i:vend:vend]) {
			return true
		}
		i = skipSpace(raw, vend)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return true
}

// eachElement calls f with each element of the array raw, in order, until f returns false; ok
// is false when raw is no array.
func eachElement(raw []byte, f func(i int, val []byte) bool) (ok bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return false
	}
	i = skipSpace(raw, i+1)
	for n := 0; i < len(raw) && raw[i] != ']'; n++ {
		end := skipValue(raw, i)
		if end == i {
			return true // not JSON: never so in what the gateway checked
		}
		if !f(n, raw[i:end:end]) {
			return true
		}
		i = skipSpace(raw, end)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return true
}

// unquote decodes a JSON string token as encoding/json does: a string without escapes in
// valid UTF-8 as it is, any other by jsonscan's decoder (the token was validated).
func unquote(tok []byte) string {
	s := tok[1 : len(tok)-1]
	if bytes.IndexByte(s, '\\') < 0 && (isASCII(s) || utf8.Valid(s)) {
		return string(s)
	}
	return string(jsonscan.AppendUnquoted(make([]byte, 0, len(s)), s))
}

// isASCII says whether s holds no byte from 0x80 up: eight at a time, as every streamed
// delta's text goes through it.
func isASCII(s []byte) bool {
	for len(s) >= 8 {
		if binary.LittleEndian.Uint64(s)&0x8080808080808080 != 0 {
			return false
		}
		s = s[8:]
	}
	for _, c := range s {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// jsonKind names the kind of the value that starts raw, as json.Unmarshal's errors do.
func jsonKind(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

var (
	rawMessageType      = reflect.TypeFor[json.RawMessage]()
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	numberType          = reflect.TypeFor[json.Number]()
)

// decodeChecked is json.Unmarshal(raw, v) for raw that the gateway checked (a part of a body
// jsonscan.Check accepted) or produced: see the top of this file.
func decodeChecked(raw []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return json.Unmarshal(raw, v)
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return json.Unmarshal(raw, v)
	}
	var d checkedDecoder
	d.value(raw, rv.Elem())
	return d.err
}

type checkedDecoder struct {
	// err is the first value of a wrong type; decoding goes on past it, as json.Unmarshal's.
	err error
}

func (d *checkedDecoder) fail(raw []byte, t reflect.Type) {
	if d.err == nil {
		d.err = &errChecked{what: jsonKind(raw), into: t.String()}
	}
}

// value decodes the value raw (no whitespace around it) into v.
func (d *checkedDecoder) value(raw []byte, v reflect.Value) {
	t := v.Type()
	if t == rawMessageType {
		// As json.RawMessage's UnmarshalJSON: the text itself, null too.
		v.SetBytes(raw)
		return
	}
	if pt := reflect.PointerTo(t); pt.Implements(unmarshalerType) || pt.Implements(textUnmarshalerType) || t == numberType {
		// A type that reads itself (or json.Number, which takes a number as a string):
		// encoding/json's own reading, of this value alone.
		d.fallback(raw, v)
		return
	}
	if raw[0] == 'n' {
		// null: an interface, pointer, map or slice becomes nil, anything else is left.
		switch v.Kind() {
		case reflect.Interface, reflect.Pointer, reflect.Map, reflect.Slice:
			v.SetZero()
		}
		return
	}
	switch v.Kind() {
	case reflect.Interface:
		if v.NumMethod() != 0 {
			break
		}
		if x, ok := decodeAny(raw); ok {
			if x == nil {
				v.SetZero()
			} else {
				v.Set(reflect.ValueOf(x))
			}
			return
		}
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		d.value(raw, v.Elem())
		return
	case reflect.String:
		if raw[0] != '"' {
			d.fail(raw, t)
			return
		}
		v.SetString(unquote(raw))
		return
	case reflect.Bool:
		switch raw[0] {
		case 't':
			v.SetBool(true)
		case 'f':
			v.SetBool(false)
		default:
			d.fail(raw, t)
		}
		return
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if jsonKind(raw) != "number" {
			d.fail(raw, t)
			return
		}
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || v.OverflowInt(n) {
			d.fail(raw, t)
			return
		}
		v.SetInt(n)
		return
	case reflect.Float64:
		if jsonKind(raw) != "number" {
			d.fail(raw, t)
			return
		}
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			break // out of range: json.Unmarshal's own error
		}
		v.SetFloat(f)
		return
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			break // base64 bytes: json.Unmarshal's
		}
		if raw[0] != '[' {
			d.fail(raw, t)
			return
		}
		n := 0
		s := reflect.MakeSlice(t, 0, 4)
		eachElement(raw, func(_ int, e []byte) bool {
			s = reflect.Append(s, reflect.Zero(t.Elem()))
			d.value(e, s.Index(n))
			n++
			return true
		})
		v.Set(s)
		return
	case reflect.Map:
		if t.Key().Kind() != reflect.String || t.Key() != reflect.TypeFor[string]() {
			break
		}
		if raw[0] != '{' {
			d.fail(raw, t)
			return
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(t))
		}
		eachMember(raw, func(k string, e []byte) bool {
			ev := reflect.New(t.Elem()).Elem()
			d.value(e, ev)
			v.SetMapIndex(reflect.ValueOf(k), ev)
			return true
		})
		return
	case reflect.Struct:
		fields, ok := structFields(t)
		if !ok {
			break
		}
		if raw[0] != '{' {
			d.fail(raw, t)
			return
		}
		eachMember(raw, func(k string, e []byte) bool {
			if i := fields.find(k); i >= 0 {
				d.value(e, v.Field(i))
			}
			return true
		})
		return
	}
	// A type the above does not know: encoding/json's own reading, of this value alone.
	d.fallback(raw, v)
}

func (d *checkedDecoder) fallback(raw []byte, v reflect.Value) {
	if err := json.Unmarshal(raw, v.Addr().Interface()); err != nil && d.err == nil {
		d.err = err
	}
}

// fieldSet is a struct type's JSON names, by field index (-1: no JSON name).
type fieldSet []string

// find is the field a key decodes into as encoding/json matches it: the exact name, else one
// equal under case folding; -1 for none.
func (fs fieldSet) find(k string) int {
	if i := slices.Index(fs, k); i >= 0 {
		return i
	}
	for i, name := range fs {
		if name != "" && strings.EqualFold(name, k) {
			return i
		}
	}
	return -1
}

var structCache sync.Map // reflect.Type → fieldSet, or nil when decodeChecked leaves it to encoding/json

// structFields are a struct type's JSON names; ok is false for a struct with an embedded field,
// a tag option or two fields of one name (its decoding is encoding/json's).
func structFields(t reflect.Type) (fieldSet, bool) {
	if c, ok := structCache.Load(t); ok {
		fs, _ := c.(fieldSet)
		return fs, fs != nil
	}
	fs := make(fieldSet, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if f.Anonymous || strings.Contains(tag, ",") {
			fs = nil
			break
		}
		if !f.IsExported() || tag == "-" {
			continue
		}
		fs[i] = cmp.Or(tag, f.Name)
		if slices.Contains(fs[:i], fs[i]) {
			// Two fields of one name: encoding/json fills neither.
			fs = nil
			break
		}
	}
	if fs == nil {
		structCache.Store(t, nil)
		return nil, false
	}
	structCache.Store(t, fs)
	return fs, true
}

// decodeAny decodes a value into what json.Unmarshal gives an any (map[string]any, []any,
// string, float64, bool, nil); ok is false when it holds a number float64 cannot hold, which
// json.Unmarshal refuses (the rest is decoded all the same, such a number as 0).
func decodeAny(raw []byte) (any, bool) {
	v, _, ok := parseAny(raw, skipSpace(raw, 0))
	return v, ok
}

// parseAny decodes the value that starts at b[i] in one pass (see decodeAny) and returns
// the index just past it.
func parseAny(b []byte, i int) (v any, next int, ok bool) {
	if i >= len(b) {
		return nil, i, true
	}
	ok = true
	switch b[i] {
	case '{':
		m := map[string]any{}
		i = skipSpace(b, i+1)
		for i < len(b) && b[i] == '"' {
			end := skipString(b, i)
			k := unquote(b[i:end])
			i = skipSpace(b, skipSpace(b, end)+1) // past the colon
			var x any
			var xok bool
			x, i, xok = parseAny(b, i)
			m[k], ok = x, ok && xok
			if i = skipSpace(b, i); i < len(b) && b[i] == ',' {
				i = skipSpace(b, i+1)
			}
		}
		return m, i + 1, ok // past the brace
	case '[':
		a := []any{}
		i = skipSpace(b, i+1)
		for i < len(b) && b[i] != ']' {
			x, end, xok := parseAny(b, i)
			if end == i {
				break // not JSON: never so in what the gateway checked
			}
			a, ok = append(a, x), ok && xok
			if i = skipSpace(b, end); i < len(b) && b[i] == ',' {
				i = skipSpace(b, i+1)
			}
		}
		return a, i + 1, ok
	case '"':
		end := skipString(b, i)
		return unquote(b[i:end]), end, true
	case 't':
		return true, i + 4, true
	case 'f':
		return false, i + 5, true
	case 'n':
		return nil, i + 4, true
	}
	end := skipValue(b, i)
	f, err := strconv.ParseFloat(string(b[i:end]), 64)
	return f, end, err == nil
}

// appendObject appends m as a JSON object, its keys sorted as json.Marshal sorts a map's, its
// values as they are: a rebuilt body copies what it does not change.
func appendObject(b []byte, m map[string]json.RawMessage) []byte {
	b = append(b, '{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendKey(b, k)
		b = append(b, m[k]...)
	}
	return append(b, '}')
}

// appendKey appends a key and its colon, quoted as json.Marshal quotes it.
func appendKey(b []byte, k string) []byte {
	for i := range len(k) {
		// What json.Marshal would escape: quotes, backslashes, control bytes, HTML's
		// characters, anything not ASCII (invalid UTF-8, U+2028 and U+2029).
		if c := k[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b = append(b, mustJSON(k)...)
			return append(b, ':')
		}
	}
	b = append(b, '"')
	b = append(b, k...)
	return append(b, '"', ':')
}

// marshalObject is m as a JSON object (see appendObject).
func marshalObject(m map[string]json.RawMessage) ([]byte, error) {
	n := 2
	for k, v := range m {
		n += len(k) + len(v) + 4
	}
	return appendObject(make([]byte, 0, n), m), nil
}

// marshalArray is a as a JSON array of its values as they are (see appendObject).
func marshalArray(a []json.RawMessage) json.RawMessage {
	n := 2
	for _, v := range a {
		n += len(v) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, v := range a {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, v...)
	}
	return append(b, ']')
}

// mustObject is m as a JSON object (see appendObject).
func mustObject(m map[string]json.RawMessage) json.RawMessage {
	b, _ := marshalObject(m)
	return b
}

// appendElements appends the elements of the array raw to out (none when raw is no array).
func appendElements(out []json.RawMessage, raw json.RawMessage) []json.RawMessage {
	eachElement(raw, func(_ int, e []byte) bool {
		out = append(out, e)
		return true
	})
	return out
}
