// Package queuetest starts a throw-away embedded nats-server with the skillfleet topology for
// tests of any package, and gives tests outside queue the raw access they need (a message
// published as a forger would, a stream's size) without the client library's types. The
// helpers of remote.go do the same on any server or cluster, logged in as a
// queue.ConnectConfig says: what end-to-end tests ask of nats-server processes.
package queuetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/skillfleet/skillfleet/queue"
)

// Start starts an in-process server (no network port) with a store under t.TempDir(), connects
// to it and ensures the default topology. Everything is torn down by t.Cleanup, clients first.
func Start(t testing.TB) (*queue.Embedded, *queue.Conn, *queue.Topology) {
	t.Helper()
	return StartConfig(t, queue.DefaultConfig(), queue.EmbeddedConfig{})
}

// StartConfig is Start with a topology config (a short AckWait, say) and server config. An
// empty ecfg.StoreDir means a directory under t.TempDir().
func StartConfig(t testing.TB, cfg queue.Config, ecfg queue.EmbeddedConfig) (*queue.Embedded, *queue.Conn, *queue.Topology) {
	t.Helper()
	if ecfg.StoreDir == "" {
		ecfg.StoreDir = t.TempDir()
	}
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	e, err := queue.StartEmbedded(ecfg, log)
	if err != nil {
		t.Fatalf("queuetest: %v", err)
	}
	t.Cleanup(e.Shutdown)
	conn := Connect(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topo, err := queue.Ensure(ctx, conn, cfg)
	if err != nil {
		t.Fatalf("queuetest: %v", err)
	}
	return e, conn, topo
}

// PermissionsConfig writes a nats-server config into a new temporary directory, the lines of
// extra followed by an include of a copy of the permissions file at permissions (the shipped
// deploy/nats/permissions.conf, whose users' passwords the server reads from its
// environment), and returns its path: for queue.EmbeddedConfig.ConfigFile.
func PermissionsConfig(t testing.TB, permissions, extra string) string {
	t.Helper()
	perms, err := os.ReadFile(permissions)
	if err != nil {
		t.Fatalf("queuetest: %v", err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "nats.conf")
	for name, text := range map[string]string{"permissions.conf": string(perms), "nats.conf": extra + "\ninclude ./permissions.conf\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatalf("queuetest: %v", err)
		}
	}
	return conf
}

// Connect opens one more client connection to e, closed by t.Cleanup before e shuts down.
func Connect(t testing.TB, e *queue.Embedded) *queue.Conn {
	t.Helper()
	c, err := e.Connect("queuetest")
	if err != nil {
		t.Fatalf("queuetest: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// RawConn opens a plain client connection to e with opts, closed by t.Cleanup: for the tests
// of the queue packages themselves, which look at the server below the topology's API. A
// server with a token needs nats.Token among opts.
func RawConn(t testing.TB, e *queue.Embedded, opts ...nats.Option) *nats.Conn {
	t.Helper()
	url := e.ClientURL()
	if url == "" {
		opts = append([]nats.Option{nats.InProcessServer(e)}, opts...)
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatalf("queuetest: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// StreamMsgs returns how many messages the stream named stream holds on e's server.
func StreamMsgs(t testing.TB, e *queue.Embedded, stream string) uint64 {
	t.Helper()
	js, done := rawJS(t, e)
	defer done()
	s, err := js.Stream(testCtx(t), stream)
	if err != nil {
		t.Fatalf("queuetest: stream %s: %v", stream, err)
	}
	info, err := s.Info(testCtx(t))
	if err != nil {
		t.Fatalf("queuetest: stream %s: %v", stream, err)
	}
	return info.State.Msgs
}

// AckPending returns how many messages the durable consumer of stream holds delivered and not
// yet acked, on e's server.
func AckPending(t testing.TB, e *queue.Embedded, stream, consumer string) int {
	t.Helper()
	js, done := rawJS(t, e)
	defer done()
	c, err := js.Consumer(testCtx(t), stream, consumer)
	if err != nil {
		t.Fatalf("queuetest: consumer %s > %s: %v", stream, consumer, err)
	}
	return c.CachedInfo().NumAckPending
}

// Publish stores data on subject through JetStream on e's server, below the topology's API
// (no message id, no expected stream): a message skillfleet did not write.
func Publish(t testing.TB, e *queue.Embedded, subject string, data []byte) {
	t.Helper()
	js, done := rawJS(t, e)
	defer done()
	if _, err := js.Publish(testCtx(t), subject, data); err != nil {
		t.Fatalf("queuetest: publish on %s: %v", subject, err)
	}
}

// ReplaceBundle overwrites the object stored under digest with data, as a tampered store would
// hold it.
func ReplaceBundle(t testing.TB, e *queue.Embedded, digest string, data []byte) {
	t.Helper()
	js, done := rawJS(t, e)
	defer done()
	ctx := testCtx(t)
	os, err := js.ObjectStore(ctx, queue.BundlesBucket)
	if err != nil {
		t.Fatalf("queuetest: object store: %v", err)
	}
	if _, err := os.PutBytes(ctx, digest, data); err != nil {
		t.Fatalf("queuetest: replace bundle %s: %v", digest, err)
	}
}

// rawJS is a JetStream context on a connection of its own, closed by done: helpers called
// in a polling loop must not pile up connections until the test ends.
func rawJS(t testing.TB, e *queue.Embedded) (jetstream.JetStream, func()) {
	t.Helper()
	opts := []nats.Option{nats.Name("queuetest")}
	url := e.ClientURL()
	if url == "" {
		opts = append(opts, nats.InProcessServer(e))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatalf("queuetest: %v", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		t.Fatalf("queuetest: %v", err)
	}
	return js, nc.Close
}

// testCtx bounds one helper's requests, so a hung server fails the test instead of blocking.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// PurgeSubject removes the messages of stream on subject ("" for all of them), as their
// expiry (MaxAge) would.
func PurgeSubject(t testing.TB, e *queue.Embedded, stream, subject string) {
	t.Helper()
	js, done := rawJS(t, e)
	defer done()
	ctx := testCtx(t)
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("queuetest: stream %s: %v", stream, err)
	}
	var opts []jetstream.StreamPurgeOpt
	if subject != "" {
		opts = append(opts, jetstream.WithPurgeSubject(subject))
	}
	if err := s.Purge(ctx, opts...); err != nil {
		t.Fatalf("queuetest: purge %s %s: %v", stream, subject, err)
	}
}
