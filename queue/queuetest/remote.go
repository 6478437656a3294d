package queuetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/internal/natsopts"
)

// The helpers below reach any server, a nats-server process or a cluster, logged in as cfg
// says, the way a daemon with the same settings logs in. Each opens a connection of its own
// and closes it before it returns: they are called in polling loops and once per subject, and
// one user's refusal must not be mistaken for another's.

// JetStreamReady reports whether a client logged in as cfg says gets JetStream's answer to an
// account-info request within ctx: nil once the server (or the cluster's meta leader) serves
// JetStream to that user. For a readiness loop, which decides how long to wait.
func JetStreamReady(ctx context.Context, cfg queue.ConnectConfig) error {
	nc, err := dial(cfg)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("queuetest: JetStream context: %w", err)
	}
	if _, err := js.AccountInfo(ctx); err != nil {
		return fmt.Errorf("queuetest: JetStream account info: %w", err)
	}
	return nil
}

// PublishAs publishes data on subject (core NATS, no stream acknowledgement) as cfg's user and
// returns what the server said about it: its permissions violation, or nil when it took the
// message. A failure to connect or to reach the server fails the test instead, so that it is
// never taken for a refusal.
func PublishAs(t testing.TB, cfg queue.ConnectConfig, subject string, data []byte) error {
	t.Helper()
	return refusal(t, cfg, "publish on "+subject, func(nc *nats.Conn) error { return nc.Publish(subject, data) })
}

// SubscribeAs subscribes to subject as cfg's user and returns what the server said about it:
// its permissions violation, or nil when it took the subscription. A failure to connect or to
// reach the server fails the test instead.
func SubscribeAs(t testing.TB, cfg queue.ConnectConfig, subject string) error {
	t.Helper()
	return refusal(t, cfg, "subscribe to "+subject, func(nc *nats.Conn) error {
		_, err := nc.SubscribeSync(subject)
		return err
	})
}

// StoreAs publishes data on subject through JetStream as cfg's user, as a client holding
// those credentials could, and returns nil once a stream has stored it, or what refused it
// (the server, or no stream answering). A failure to connect fails the test.
func StoreAs(t testing.TB, cfg queue.ConnectConfig, subject string, data []byte) error {
	t.Helper()
	// A publish the server refuses gets no acknowledgement, only an asynchronous error: it
	// ends the wait at once rather than at the deadline.
	ctx, refused := context.WithCancelCause(testCtx(t))
	defer refused(nil)
	nc, err := dial(cfg, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { refused(err) }))
	if err != nil {
		t.Fatalf("queuetest: %v", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("queuetest: JetStream context: %v", err)
	}
	if _, err := js.Publish(ctx, subject, data); err != nil {
		if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
			return cause
		}
		return err
	}
	return nil
}

// Placement is where a stream's replicas are in a JetStream cluster, by server name.
type Placement struct {
	// Cluster names the cluster; "" for a server in none.
	Cluster string
	// Leader is the replica that leads now; "" while none is elected.
	Leader string
	// Followers are the other replicas.
	Followers []string
	// Replicas is how many replicas the stream's config asks for.
	Replicas int
}

// StreamPlacement returns where the stream named stream is placed now, asked as cfg's user.
// The test fails if the server cannot say.
func StreamPlacement(t testing.TB, cfg queue.ConnectConfig, stream string) Placement {
	t.Helper()
	nc, err := dial(cfg)
	if err != nil {
		t.Fatalf("queuetest: %v", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("queuetest: JetStream context: %v", err)
	}
	s, err := js.Stream(testCtx(t), stream)
	if err != nil {
		t.Fatalf("queuetest: stream %s: %v", stream, err)
	}
	info := s.CachedInfo()
	p := Placement{Replicas: info.Config.Replicas}
	if c := info.Cluster; c != nil {
		p.Cluster, p.Leader = c.Name, c.Leader
		for _, r := range c.Replicas {
			p.Followers = append(p.Followers, r.Name)
		}
	}
	return p
}

// refusal does op on a connection of its own and returns the error the server sent back for
// it. The server answers a connection's operations in order, so once the ping that follows op
// has its pong, a refusal of op has arrived and is the connection's last error.
func refusal(t testing.TB, cfg queue.ConnectConfig, what string, op func(*nats.Conn) error) error {
	t.Helper()
	nc, err := dial(cfg)
	if err != nil {
		t.Fatalf("queuetest: %v", err)
	}
	defer nc.Close()
	if err := op(nc); err != nil {
		t.Fatalf("queuetest: %s: %v", what, err)
	}
	if err := nc.FlushWithContext(testCtx(t)); err != nil {
		t.Fatalf("queuetest: %s: no answer from the server: %v", what, err)
	}
	return nc.LastError()
}

// dial connects once, without reconnecting: a helper's connection that drops should fail
// what it was doing, not wait for the server to come back.
func dial(cfg queue.ConnectConfig, extra ...nats.Option) (*nats.Conn, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opts, err := natsopts.Options(natsopts.Settings(cfg))
	if err != nil {
		return nil, err
	}
	if cfg.Name == "" {
		opts = append(opts, nats.Name("queuetest"))
	}
	// The helpers return the server's refusals; the library's default handler would also
	// print them to stderr.
	opts = append(opts, nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	url := cfg.URL
	if url == "" {
		url = nats.DefaultURL
	}
	nc, err := nats.Connect(url, append(append(opts, nats.NoReconnect()), extra...)...)
	if err != nil {
		return nil, fmt.Errorf("queuetest: connect to %s: %w", url, err)
	}
	return nc, nil
}
