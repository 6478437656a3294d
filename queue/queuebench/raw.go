// Package queuebench measures what raw JetStream can do on a connection, as the baseline that
// skillfleet's own dispatch is compared against in the same run.
package queuebench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// Stats is the outcome of one measurement.
type Stats struct {
	// Messages moved and the size of each.
	Messages, Size int
	// Elapsed runs from the first publish to the server's confirmation of the last ack.
	Elapsed time.Duration
	// PublishElapsed runs from the first publish to the last publish ack.
	PublishElapsed time.Duration
	// MsgsPerSec is Messages / Elapsed.
	MsgsPerSec float64
}

const (
	// fetchBatch is how many messages one pull request asks for.
	fetchBatch = 256
	// maxPending bounds unacknowledged async publishes.
	maxPending = 4096
)

// Raw moves n messages of size bytes through a throw-away work-queue stream on file storage
// (like the jobs stream): one goroutine publishes with PublishAsync, another pulls batches of
// fetchBatch with a durable pull consumer and acks each message; they run concurrently. The
// stream is deleted afterwards.
func Raw(ctx context.Context, nc *nats.Conn, n, size int) (Stats, error) {
	if n < 1 || size < 0 {
		return Stats{}, fmt.Errorf("queuebench: want n >= 1 and size >= 0, got %d and %d", n, size)
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(maxPending))
	if err != nil {
		return Stats{}, err
	}
	defer js.CleanupPublisher()
	id := nuid.Next()
	name, subject := "QUEUEBENCH_"+id, "queuebench."+id
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:      name,
		Subjects:  []string{subject},
		Retention: jetstream.WorkQueuePolicy,
		Storage:   jetstream.FileStorage,
	})
	if err != nil {
		return Stats{}, fmt.Errorf("queuebench: create stream: %w", err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = js.DeleteStream(dctx, name)
	}()
	cons, err := stream.CreateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       "bench",
		AckPolicy:     jetstream.AckExplicitPolicy,
		MaxAckPending: 100_000,
	})
	if err != nil {
		return Stats{}, fmt.Errorf("queuebench: create consumer: %w", err)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	payload := make([]byte, size)
	var (
		wg              sync.WaitGroup
		pubErr, recvErr error
		pubElapsed      time.Duration
	)
	start := time.Now()
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < n; i++ {
			if _, err := js.PublishAsync(subject, payload); err != nil {
				pubErr = fmt.Errorf("queuebench: publish %d: %w", i, err)
				cancel()
				return
			}
		}
		select {
		case <-js.PublishAsyncComplete():
			pubElapsed = time.Since(start)
		case <-ctx.Done():
			pubErr = fmt.Errorf("queuebench: wait for publish acks: %w", ctx.Err())
		}
	}()
	go func() {
		defer wg.Done()
		for got := 0; got < n; {
			batch, err := cons.Fetch(min(fetchBatch, n-got), jetstream.FetchMaxWait(5*time.Second))
			if err != nil {
				recvErr = fmt.Errorf("queuebench: fetch: %w", err)
				cancel()
				return
			}
			for m := range batch.Messages() {
				if err := m.Ack(); err != nil {
					recvErr = fmt.Errorf("queuebench: ack: %w", err)
					cancel()
					return
				}
				got++
			}
			if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
				recvErr = fmt.Errorf("queuebench: fetch: %w", err)
				cancel()
				return
			}
			if ctx.Err() != nil {
				recvErr = fmt.Errorf("queuebench: after %d of %d messages: %w", got, n, ctx.Err())
				return
			}
		}
	}()
	wg.Wait()
	if err := errors.Join(pubErr, recvErr); err != nil {
		return Stats{}, err
	}
	// Acks are fire-and-forget; a flush makes the server have read the last one.
	if err := nc.FlushTimeout(30 * time.Second); err != nil {
		return Stats{}, fmt.Errorf("queuebench: flush: %w", err)
	}
	elapsed := time.Since(start)
	return Stats{
		Messages:       n,
		Size:           size,
		Elapsed:        elapsed,
		PublishElapsed: pubElapsed,
		MsgsPerSec:     float64(n) / elapsed.Seconds(),
	}, nil
}
