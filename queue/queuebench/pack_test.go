package queuebench_test

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/skillfleet/skillfleet/queue/queuebench"
)

func TestPackKeepsEveryMessage(t *testing.T) {
	for _, tc := range []struct {
		name string
		msgs queuebench.Msgs
	}{
		{"none", queuebench.Msgs{}},
		{"bare", queuebench.Msgs{{Subject: "a.b"}}},
		{"jobs", queuebench.Msgs{
			{Subject: "skillfleet.jobs.ondemand.r1", Data: []byte("first job"), Header: nats.Header{"Nats-Msg-Id": {"r1.j1"}, "Nats-Expected-Stream": {"SKILLFLEET_JOBS"}}},
			{Subject: "skillfleet.jobs.scheduled.r2", Data: bytes.Repeat([]byte{0, 0xff}, 300), Header: nats.Header{"K": {"v1", "", "v3"}}},
			{Subject: "s", Data: []byte{}, Header: nats.Header{}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := queuebench.Pack(nil, tc.msgs)
			got, err := queuebench.Unpack(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.msgs) {
				t.Fatalf("%d messages back, want %d", len(got), len(tc.msgs))
			}
			for i, want := range tc.msgs {
				g := got[i]
				if g.Subject != want.Subject || !bytes.Equal(g.Data, want.Data) || len(g.Header) != len(want.Header) {
					t.Errorf("message %d = %q %q %v, want %q %q %v", i, g.Subject, g.Data, g.Header, want.Subject, want.Data, want.Header)
					continue
				}
				for k, vs := range want.Header {
					if !reflect.DeepEqual(g.Header[k], vs) {
						t.Errorf("message %d header %s = %q, want %q", i, k, g.Header[k], vs)
					}
				}
			}
			// The copies are the caller's: changing one changes nothing packed.
			if len(got) > 0 && len(got[0].Data) > 0 {
				got[0].Data[0] ^= 1
				again, err := queuebench.Unpack(p)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(again[0].Data, tc.msgs[0].Data) {
					t.Error("a message's copy shares its data with the packed buffer")
				}
			}
			// Cut short or with bytes left over, it is refused rather than read wrong.
			for _, bad := range [][]byte{p[:len(p)-1], append(p[:len(p):len(p)], 0)} {
				if len(bad) == 0 {
					continue
				}
				if _, err := queuebench.Unpack(bad); err == nil {
					t.Errorf("Unpack of %d of the %d bytes packed: no error", len(bad), len(p))
				}
			}
		})
	}
}
