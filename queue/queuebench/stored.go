package queuebench

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/queue"
)

// Msgs are messages as a raw baseline publishes them, headers included.
type Msgs = []*nats.Msg

// Dial opens a plain client connection to e, for the raw baselines; close it when done.
func Dial(e *queue.Embedded, name string) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name(name)}
	url := e.ClientURL()
	if url == "" {
		opts = append(opts, nats.InProcessServer(e))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("queuebench: connect: %w", err)
	}
	return nc, nil
}

// StoredJobs waits, for up to wait, until the jobs stream of the server e holds n messages,
// and returns the first n as the server holds them, headers included: what a raw baseline
// moves in skillfleet's stead.
func StoredJobs(ctx context.Context, e *queue.Embedded, n int, wait time.Duration) (Msgs, error) {
	nc, err := Dial(e, "bench-jobs")
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	jobs, err := js.Stream(ctx, queue.JobsStream)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		info, err := jobs.Info(ctx)
		if err != nil {
			return nil, err
		}
		if info.State.Msgs >= uint64(n) {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("queuebench: the jobs stream holds %d of %d jobs after %s", info.State.Msgs, n, wait)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	msgs := make(Msgs, 0, n)
	for seq := uint64(1); len(msgs) < n; seq++ {
		m, err := jobs.GetMsg(ctx, seq)
		if err != nil {
			return nil, fmt.Errorf("queuebench: read job message %d: %w", seq, err)
		}
		msgs = append(msgs, &nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data})
	}
	return msgs, nil
}
