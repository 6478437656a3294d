package queue

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
)

// parsePubAck reads what the server writes (its ack template, with and without a domain, a
// duplicate as the server spells it, an error) as the client library's JSON decoding does.
func TestParsePubAck(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		dup        bool
		err        bool
		code       int // of an APIError
	}{
		{name: "stored", data: `{"stream":"SKILLFLEET_JOBS","seq":42}`},
		{name: "stored in a domain", data: `{"stream":"S","domain":"hub","seq":7}`},
		{name: "duplicate as the server writes it", data: `{"stream":"S","seq":42,"duplicate": true}`, dup: true},
		{name: "duplicate without the space", data: `{"stream":"S","seq":42,"duplicate":true}`, dup: true},
		{name: "duplicate false", data: `{"stream":"S","seq":42,"duplicate":false}`},
		{name: "batch duplicate", data: `{"stream":"S","seq":3,"duplicate": true,"batch":"b","count":2}`, dup: true},
		{name: "a name with an escaped key in it", data: `{"stream":"a\"duplicate\": true","seq":1}`},
		{name: "error", data: `{"error":{"code":503,"err_code":10077,"description":"maximum messages exceeded"}}`, err: true, code: 503},
		{name: "error after stream", data: `{"stream":"S","error":{"code":400,"err_code":10060,"description":"expected stream does not match"}}`, err: true, code: 400},
		{name: "empty stream", data: `{"stream":"","seq":1}`, err: true},
		{name: "no stream", data: `{"seq":1}`, err: true},
		{name: "truncated", data: `{"stream":"S","seq":1`, err: true},
		{name: "not JSON", data: `+OK`, err: true},
		{name: "empty", data: ``, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dup, err := parsePubAck([]byte(tc.data))
			if (err != nil) != tc.err || dup != tc.dup {
				t.Fatalf("parsePubAck(%s) = %v, %v; want duplicate %v, error %v", tc.data, dup, err, tc.dup, tc.err)
			}
			var apiErr *jetstream.APIError
			if tc.code != 0 && (!errors.As(err, &apiErr) || apiErr.Code != tc.code) {
				t.Errorf("error %v, want an APIError with code %d", err, tc.code)
			}
			if err != nil {
				return
			}
			// What the library's decoding makes of the same bytes.
			var lib struct {
				jetstream.PubAck
			}
			if json.Unmarshal([]byte(tc.data), &lib) != nil || lib.Duplicate != dup {
				t.Errorf("the library reads duplicate=%v", lib.Duplicate)
			}
		})
	}
}

// A publish whose ack does not come is failed by the sweeper and resent under a new reply
// subject, so a late ack of an earlier send is not taken for the resend's; the publish settles
// exactly once, as stored when an ack comes, as failed when the resends run out.
func TestAsyncPublisherOverdueAcks(t *testing.T) {
	e, err := StartEmbedded(EmbeddedConfig{StoreDir: t.TempDir()}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	nc, err := e.connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for _, tc := range []struct {
		name string
		// answerAfter: the responder answers nothing until this many sends came, then every
		// send it has seen, oldest first; 0 never answers.
		answerAfter int
		retries     int
		wantErr     error
		want        PublishStats
	}{
		{name: "acks never come", retries: 2, wantErr: jetstream.ErrAsyncPublishTimeout, want: PublishStats{Failed: 1, Retried: 2}},
		{name: "late ack of the first send", answerAfter: 2, retries: 3, want: PublishStats{Stored: 1, Retried: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			subject := "test.overdue." + nats.NewInbox()[len("_INBOX."):]
			sends := make(chan *nats.Msg, 16)
			sub, err := nc.Subscribe(subject, func(m *nats.Msg) { sends <- m })
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe()
			p, err := newAsyncPublisher(nc, PublisherConfig{MaxInFlight: 4, AckTimeout: 200 * time.Millisecond, Retries: tc.retries, RetryWait: time.Millisecond}, "test")
			if err != nil {
				t.Fatal(err)
			}
			defer p.close(ctx)
			settled := make(chan error, 4)
			m := &nats.Msg{Subject: subject, Data: []byte("x"), Header: nats.Header{jetstream.MsgIDHeader: {"id1"}}}
			if err := p.publish(ctx, m, func(err error) { settled <- err }); err != nil {
				t.Fatal(err)
			}
			var seen []*nats.Msg
			var got error
		wait:
			for {
				select {
				case s := <-sends:
					seen = append(seen, s)
					if tc.answerAfter > 0 && len(seen) == tc.answerAfter {
						for _, s := range seen {
							if err := nc.Publish(s.Reply, []byte(`{"stream":"S","seq":1}`)); err != nil {
								t.Fatal(err)
							}
						}
					}
				case got = <-settled:
					break wait
				case <-ctx.Done():
					t.Fatal("the publish never settled")
				}
			}
			if !errors.Is(got, tc.wantErr) {
				t.Fatalf("settled with %v, want %v", got, tc.wantErr)
			}
			if err := p.wait(ctx); (err != nil) != (tc.wantErr != nil) {
				t.Errorf("wait = %v", err)
			}
			// Nothing settles twice, even once the late acks are in.
			if err := nc.Flush(); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-settled:
				t.Fatalf("settled a second time: %v", err)
			case <-time.After(100 * time.Millisecond):
			}
			if st := p.snapshot(); st != tc.want {
				t.Errorf("stats = %+v, want %+v", st, tc.want)
			}
			replies := map[string]bool{}
			for _, s := range seen {
				replies[s.Reply] = true
			}
			if len(replies) != len(seen) {
				t.Errorf("%d sends on %d reply subjects, want one each", len(seen), len(replies))
			}
		})
	}
}
