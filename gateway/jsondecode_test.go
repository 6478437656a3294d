package gateway

import (
	"encoding/json"
	"reflect"
	"testing"
)

// checkAsUnmarshal holds a one-pass decoder to json.Unmarshal on data: decode into got (zero,
// or a stream's reused buffers made ready as the stream makes them) must succeed exactly
// when json.Unmarshal into a zero T does, and then give the same value once normal has made
// what no reader tells apart (an empty slice and a nil one, the reused buffers) alike.
func checkAsUnmarshal[T any](t *testing.T, data string, got *T, decode func([]byte, *T) bool, normal func(T) T) {
	t.Helper()
	var want T
	wantOK := json.Unmarshal([]byte(data), &want) == nil
	gotOK := decode([]byte(data), got)
	if gotOK != wantOK {
		t.Errorf("%q: one-pass decoder ok %v, json.Unmarshal ok %v", data, gotOK, wantOK)
		return
	}
	if !wantOK {
		return
	}
	if normal != nil {
		*got, want = normal(*got), normal(want)
	}
	if !reflect.DeepEqual(*got, want) {
		g, _ := json.Marshal(*got)
		w, _ := json.Marshal(want)
		t.Errorf("%q:\n one-pass decoder %s\n json.Unmarshal   %s", data, g, w)
	}
}

// hostileEvents are texts every event decoder must judge as json.Unmarshal does, whatever
// the protocol: not JSON, or JSON of the wrong kind, at the top and one level down.
var hostileEvents = []string{
	``, ` `, `{`, `}`, `[]`, `"event"`, `1`, `true`, `null`, `{}`, `{,}`, `{"type"}`, `{"type":}`,
	`{"type":"x",}`, `{"type":"x"}}`, `{"type":"x"} x`, `{"type":"x"}{}`, `{type:"x"}`, `{"type":'x'}`,
	`{"type":"x" "index":1}`, `{"type":nul}`, `{"type":nulL}`, `{"type":"\q"}`, `{"type":"\u12G4"}`,
	"{\"type\":\"tab\tinside\"}", `{"type":"unterminated}`, `{"skipped":[1,2,}`, `{"skipped":{"a":1,}}`,
	`{"skipped":tru,"type":"x"}`, `{"skipped":1e,"type":"x"}`, `{"skipped":01,"type":"x"}`,
	`{"skipped":-,"type":"x"}`, `{"skipped":0.,"type":"x"}`, `{"skipped":[{"deep":[[[[[]]]]]}],"type":"x"}`,
	"\ufeff{}", `{"type":"x"}` + "\x00", " { \"type\" : \"spaced\" } ", `{"type":1}`, `{"type":["x"]}`,
	`{"type":{}}`, `{"TYPE":"upper","Type":"title"}`, `{"type":"a","type":"b"}`, `{"\u0074ype":"escaped key"}`,
	`{"type":"\u0072esponse.output_text.delta"}`, `{"type":"response.output_text.delta\u0000"}`,
}
