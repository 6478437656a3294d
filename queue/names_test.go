package queue

import (
	"net/textproto"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

func TestValidIDs(t *testing.T) {
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"run-20261122-abc_DEF", true},
		{"j8ee62990e022185c12f3", true},
		{strings.Repeat("a", 128), true},
		{"", false},
		{strings.Repeat("a", 129), false},
		{"a.b", false},    // a subject separator
		{"a*", false},     // a wildcard
		{"a>", false},     // a wildcard
		{"a b", false},    // whitespace
		{"a/b", false},    // a KV separator
		{"a=b", false},    // not a KV key character
		{"ünï", false},    // not ASCII
		{"a\x00b", false}, // a control character
	} {
		if err := ValidateRunID(tc.id); (err == nil) != tc.ok {
			t.Errorf("ValidateRunID(%q) = %v, want ok %v", tc.id, err, tc.ok)
		}
		if err := ValidateJobID(tc.id); (err == nil) != tc.ok {
			t.Errorf("ValidateJobID(%q) = %v, want ok %v", tc.id, err, tc.ok)
		}
	}
}

// jobMsg and resultMsg assign their headers directly: the keys must be canonical for the
// server and for Header.Get to find them.
func TestMessageHeadersAreCanonical(t *testing.T) {
	for _, k := range []string{jetstream.MsgIDHeader, jetstream.ExpectedStreamHeader} {
		if c := textproto.CanonicalMIMEHeaderKey(k); c != k {
			t.Errorf("header key %q is not canonical (%q)", k, c)
		}
	}
	jm, err := jobMsg(LaneOnDemand, "run1", "job1", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if jm.Header.Get(jetstream.MsgIDHeader) != JobMsgID("run1", "job1") || jm.Header.Get(jetstream.ExpectedStreamHeader) != JobsStream || jm.Subject != JobSubject(LaneOnDemand, "run1") {
		t.Errorf("job message %+v", jm)
	}
	rm, err := resultMsg("run1", "", "job1", 2, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if rm.Header.Get(jetstream.MsgIDHeader) != ResultMsgID("run1", "job1", 2, []byte("x")) || rm.Header.Get(jetstream.ExpectedStreamHeader) != ResultsStream || rm.Subject != ResultSubject("run1") {
		t.Errorf("result message %+v", rm)
	}
}

// BenchmarkResultMsgID measures the content digest a result's message id now includes, for a
// typical result and for one at NATS's default 1 MiB payload limit.
func BenchmarkResultMsgID(b *testing.B) {
	for _, size := range []int{4 << 10, 1 << 20} {
		data := make([]byte, size)
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				_ = ResultMsgID("r20260101t000000-00000000", "j0123456789abcdef0123", 1, data)
			}
		})
	}
}

// TestDeliveredOf: a delivery's attempt is read from its ack subject, as nats.go's Metadata
// reads it, in both forms the server writes; anything else is left to Metadata.
func TestDeliveredOf(t *testing.T) {
	for _, tc := range []struct {
		reply string
		want  uint64
		ok    bool
	}{
		{"$JS.ACK.SKILLFLEET_JOBS.lane-ondemand.1.42.40.1764412345678901234.7", 1, true},
		{"$JS.ACK.SKILLFLEET_JOBS.lane-ondemand.3.42.40.1764412345678901234.0", 3, true},
		{"$JS.ACK._.ACCHASH.SKILLFLEET_JOBS.lane-ondemand.2.42.40.1764412345678901234.7.abc", 2, true},
		{"$JS.ACK.hub.ACCHASH.SKILLFLEET_JOBS.lane-ondemand.5.42.40.1764412345678901234.7.abc.more", 5, true},
		{"$JS.ACK.S.C.0.1.1.1.0", 0, false},     // no delivery is the 0th
		{"$JS.ACK.S.C.x.1.1.1.0", 0, false},     // not a number
		{"$JS.ACK.S.C.1.1.1.0", 0, false},       // 8 tokens
		{"$JS.ACK.a.b.S.C.1.1.1.0.0", 0, false}, // 11 tokens
		{"_INBOX.abc.def", 0, false},
		{"", 0, false},
	} {
		got, ok := deliveredOf(tc.reply)
		if got != tc.want || ok != tc.ok {
			t.Errorf("deliveredOf(%q) = %d, %v; want %d, %v", tc.reply, got, ok, tc.want, tc.ok)
		}
	}
}
