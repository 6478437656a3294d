// Package queuetest starts a throw-away embedded nats-server with the skillfleet topology for
// tests of any package.
package queuetest

import (
	"context"
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
func Start(t testing.TB) (*queue.Embedded, *nats.Conn, *queue.Topology) {
	t.Helper()
	return StartConfig(t, queue.DefaultConfig(), queue.EmbeddedConfig{})
}

// StartConfig is Start with a topology config (a short AckWait, say) and server config. An
// empty ecfg.StoreDir means a directory under t.TempDir().
func StartConfig(t testing.TB, cfg queue.Config, ecfg queue.EmbeddedConfig) (*queue.Embedded, *nats.Conn, *queue.Topology) {
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
	nc := Connect(t, e)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("queuetest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topo, err := queue.Ensure(ctx, js, cfg)
	if err != nil {
		t.Fatalf("queuetest: %v", err)
	}
	return e, nc, topo
}

// Connect opens one more client connection to e, closed by t.Cleanup before e shuts down.
func Connect(t testing.TB, e *queue.Embedded, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := e.Connect(opts...)
	if err != nil {
		t.Fatalf("queuetest: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}
