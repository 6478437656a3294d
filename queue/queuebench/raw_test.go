package queuebench_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuebench"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

func TestRawMovesEveryMessage(t *testing.T) {
	e, _, _ := queuetest.Start(t)
	nc := queuetest.RawConn(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := queuebench.Raw(ctx, nc, 1000, 64)
	if err != nil {
		t.Fatal(err)
	}
	if st.Messages != 1000 || st.Size != 64 || st.Elapsed <= 0 || st.MsgsPerSec <= 0 {
		t.Errorf("stats = %+v", st)
	}
	// The throw-away stream is gone.
	noStreamsLeft(t, ctx, nc)
	if _, err := queuebench.Raw(ctx, nc, 0, 64); err == nil {
		t.Error("Raw accepted n = 0")
	}
}

// BenchmarkRaw20k is the dispatch baseline: 20,000 messages of 256 bytes (about a job's size)
// through a work-queue stream with raw nats.go, on an in-process server.
func BenchmarkRaw20k(b *testing.B) {
	e, _, _ := queuetest.Start(b)
	nc := queuetest.RawConn(b, e)
	ctx := context.Background()
	var total float64
	for b.Loop() {
		st, err := queuebench.Raw(ctx, nc, 20_000, 256)
		if err != nil {
			b.Fatal(err)
		}
		total += st.MsgsPerSec
	}
	b.ReportMetric(total/float64(b.N), "msgs/s")
}

func TestRoundTripStoresAResultPerJob(t *testing.T) {
	e, _, _ := queuetest.Start(t)
	nc := queuetest.RawConn(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := queuebench.RoundTrip(ctx, nc, 1000, 64, 32)
	if err != nil {
		t.Fatal(err)
	}
	if st.Messages != 1000 || st.Elapsed <= 0 || st.MsgsPerSec <= 0 {
		t.Errorf("stats = %+v", st)
	}
	noStreamsLeft(t, ctx, nc)
	if _, err := queuebench.RoundTrip(ctx, nc, 0, 64, 32); err == nil {
		t.Error("RoundTrip accepted n = 0")
	}
}

// BenchmarkRoundTrip20k is the floor under a job queue with durable results: 20,000 jobs of
// 256 bytes, each with a stored result, with raw nats.go.
func BenchmarkRoundTrip20k(b *testing.B) {
	e, _, _ := queuetest.Start(b)
	nc := queuetest.RawConn(b, e)
	ctx := context.Background()
	var total float64
	for b.Loop() {
		st, err := queuebench.RoundTrip(ctx, nc, 20_000, 256, 128)
		if err != nil {
			b.Fatal(err)
		}
		total += st.MsgsPerSec
	}
	b.ReportMetric(total/float64(b.N), "jobs/s")
}

// noStreamsLeft fails t if a throw-away benchmark stream is still there.
func noStreamsLeft(t *testing.T, ctx context.Context, nc *nats.Conn) {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for name := range js.StreamNames(ctx).Name() {
		if strings.HasPrefix(name, "QUEUEBENCH_") {
			t.Errorf("stream %s left behind", name)
		}
	}
}

func TestRawMsgsMovesMessagesAsTheyAre(t *testing.T) {
	// A server without skillfleet's streams: the messages keep the jobs' own subjects.
	srv, err := queue.StartEmbedded(queue.EmbeddedConfig{StoreDir: t.TempDir()}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc := queuetest.RawConn(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var msgs []*nats.Msg
	for i := range 500 {
		m := nats.NewMsg(queue.JobSubject(queue.Lanes()[i%2], "r1"))
		m.Data = []byte(strings.Repeat("j", 10+i%7))
		m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("r1.j%d", i))
		// Publishing this as it is would fail: no stream of that name exists here.
		m.Header.Set(jetstream.ExpectedStreamHeader, queue.JobsStream)
		msgs = append(msgs, m)
	}
	st, err := queuebench.RawMsgs(ctx, nc, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if st.Messages != 500 || st.Size != 12 || st.MsgsPerSec <= 0 {
		t.Errorf("stats = %+v, want 500 messages of 12 bytes on average", st)
	}
	if got := msgs[0].Header.Get(jetstream.ExpectedStreamHeader); got != queue.JobsStream {
		t.Errorf("the caller's message was changed: expected stream %q", got)
	}
	noStreamsLeft(t, ctx, nc)
	if _, err := queuebench.RawMsgs(ctx, nc, nil); err == nil {
		t.Error("RawMsgs accepted no messages")
	}
	// A message id twice: the second is never delivered, so RawMsgs must say so, not wait.
	dup := []*nats.Msg{msgs[0], msgs[2], msgs[0]}
	if _, err := queuebench.RawMsgs(ctx, nc, dup); err == nil || !strings.Contains(err.Error(), `message id "r1.j0" stored twice`) {
		t.Errorf("RawMsgs with a duplicate message id = %v", err)
	}
	noStreamsLeft(t, ctx, nc)
}
