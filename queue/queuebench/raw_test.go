package queuebench_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/queue/queuebench"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

func TestRawMovesEveryMessage(t *testing.T) {
	_, nc, _ := queuetest.Start(t)
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
	_, nc, _ := queuetest.Start(b)
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
	_, nc, _ := queuetest.Start(t)
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
	_, nc, _ := queuetest.Start(b)
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
