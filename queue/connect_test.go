package queue_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/skillfleet/skillfleet/queue"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestConnectRetryWaitsForTheServer: a daemon started while NATS is unreachable logs each
// failure and connects once the server is up, instead of exiting.
func TestConnectRetryWaitsForTheServer(t *testing.T) {
	port := freePort(t)
	core, logs := observer.New(zapcore.WarnLevel)
	type outcome struct {
		err       error
		connected bool
	}
	done := make(chan outcome, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		nc, err := queue.ConnectRetry(ctx, queue.ConnectConfig{URL: fmt.Sprintf("nats://127.0.0.1:%d", port)},
			queue.RetryConfig{First: 20 * time.Millisecond, Max: 100 * time.Millisecond}, zap.New(core))
		o := outcome{err: err}
		if nc != nil {
			o.connected = nc.IsConnected()
			nc.Close()
		}
		done <- o
	}()
	// The server comes up only after the worker has failed twice.
	for logs.FilterMessage("cannot connect to NATS; retrying").Len() < 2 {
		select {
		case o := <-done:
			t.Fatalf("ConnectRetry returned before the server was up: %v", o.err)
		case <-ctx.Done():
			t.Fatal("no failed attempts logged")
		case <-time.After(10 * time.Millisecond):
		}
	}
	e, err := queue.StartEmbedded(queue.EmbeddedConfig{StoreDir: t.TempDir(), Port: port}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown()
	select {
	case o := <-done:
		if o.err != nil || !o.connected {
			t.Fatalf("ConnectRetry = connected %v, %v; want a connection", o.connected, o.err)
		}
	case <-ctx.Done():
		t.Fatal("ConnectRetry did not connect once the server was up")
	}
}

// TestConnectRetryStopsWithItsContext: SIGTERM (the context) ends the wait with an error that
// says why, and settings that can never work are not retried.
func TestConnectRetryStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := queue.ConnectRetry(ctx, queue.ConnectConfig{URL: fmt.Sprintf("nats://127.0.0.1:%d", freePort(t))},
		queue.RetryConfig{First: 20 * time.Millisecond}, zap.NewNop())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want one wrapping the context's", err)
	}
	_, err = queue.ConnectRetry(context.Background(), queue.ConnectConfig{Password: "p"}, queue.RetryConfig{}, zap.NewNop())
	if err == nil {
		t.Fatal("a password without a user was retried, not refused")
	}
}

// TestConnectRetryGivesUpOnARefusal: a server that is there and refuses the credentials is not
// waited for: the daemon exits (1) at once, as before it retried.
func TestConnectRetryGivesUpOnARefusal(t *testing.T) {
	e, err := queue.StartEmbedded(queue.EmbeddedConfig{StoreDir: t.TempDir(), Port: -1, Token: "right-token"}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = queue.ConnectRetry(ctx, queue.ConnectConfig{URL: e.ClientURL(), Token: "wrong-token"},
		queue.RetryConfig{First: 20 * time.Millisecond, Max: 100 * time.Millisecond}, zap.NewNop())
	if err == nil || ctx.Err() != nil || !queue.Refused(err) {
		t.Fatalf("err = %v (context: %v), want the server's refusal at once", err, ctx.Err())
	}
}
