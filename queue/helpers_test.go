package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

// testCtx is a context bounded well beyond what any test step needs, so a hang fails instead
// of blocking the suite.
func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func testLog(t testing.TB) *zap.Logger {
	return zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
}

// startBare starts a server and a client without any topology; js is the client's raw view.
func startBare(t testing.TB) (*queue.Embedded, *queue.Conn, jetstream.JetStream) {
	t.Helper()
	e, err := queue.StartEmbedded(queue.EmbeddedConfig{StoreDir: t.TempDir()}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	conn := queuetest.Connect(t, e)
	js, err := jetstream.New(conn.NATS())
	if err != nil {
		t.Fatal(err)
	}
	return e, conn, js
}

// fastConfig is DefaultConfig with an AckWait short enough to test redelivery.
func fastConfig() queue.Config {
	cfg := queue.DefaultConfig()
	cfg.AckWait = 300 * time.Millisecond
	return cfg
}

// streamMsgs returns how many messages stream holds, optionally only on subject.
func streamMsgs(t testing.TB, s jetstream.Stream, subject string) uint64 {
	t.Helper()
	var opts []jetstream.StreamInfoOpt
	if subject != "" {
		opts = append(opts, jetstream.WithSubjectFilter(subject))
	}
	info, err := s.Info(testCtx(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if subject == "" {
		return info.State.Msgs
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n
}

// fetchOne fetches one message from c, waiting up to wait; nil if none came.
func fetchOne(t testing.TB, c jetstream.Consumer, wait time.Duration) jetstream.Msg {
	t.Helper()
	batch, err := c.Fetch(1, jetstream.FetchMaxWait(wait))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		return m
	}
	return nil
}

func metadata(t testing.TB, m jetstream.Msg) *jetstream.MsgMetadata {
	t.Helper()
	md, err := m.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	return md
}
