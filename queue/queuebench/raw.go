// Package queuebench measures what raw JetStream can do on a connection, as the baseline that
// skillfleet's own dispatch is compared against in the same run.
package queuebench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// Stats is the outcome of one measurement.
type Stats struct {
	// Messages moved and their mean payload size in bytes.
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

// Raw moves n messages of size bytes on one subject through a throw-away work-queue stream, as
// RawMsgs does.
func Raw(ctx context.Context, nc *nats.Conn, n, size int) (Stats, error) {
	if n < 1 || size < 0 {
		return Stats{}, fmt.Errorf("queuebench: want n >= 1 and size >= 0, got %d and %d", n, size)
	}
	subject := "queuebench." + nuid.Next()
	payload := make([]byte, size)
	msgs := make([]*nats.Msg, n)
	for i := range msgs {
		msgs[i] = &nats.Msg{Subject: subject, Data: payload}
	}
	return RawMsgs(ctx, nc, msgs)
}

// stallWait is how long a publish waits for room among the pending acks: the default 200 ms
// gave up on a machine loaded by other work, and a baseline that stops there measures nothing.
var stallWait = jetstream.WithStallWait(time.Minute)

// RawMsgs moves msgs, headers included, through a throw-away work-queue stream on file storage
// (like the jobs stream) that takes their subjects: one goroutine publishes them in order with
// PublishMsgAsync, another pulls batches of fetchBatch with a durable pull consumer and acks
// each message; they run concurrently. The stream is deleted afterwards. A message's
// Nats-Expected-Stream header, if any, names the throw-away stream instead, so the server makes
// the same check. The server must hold no other stream on those subjects, and message ids, if
// the messages carry them, must be distinct: a duplicate is an error.
func RawMsgs(ctx context.Context, nc *nats.Conn, msgs []*nats.Msg) (Stats, error) {
	n := len(msgs)
	if n < 1 {
		return Stats{}, errors.New("queuebench: no messages to move")
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(maxPending),
		// A message the server refuses never arrives: stop rather than wait for it.
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, _ *nats.Msg, err error) {
			cancel(fmt.Errorf("queuebench: store message: %w", err))
		}),
		// Nor does one the server took for a duplicate.
		jetstream.WithPublishAsyncAckHandler(func(_ jetstream.JetStream, m *nats.Msg, ack *jetstream.PubAck) {
			if ack.Duplicate {
				cancel(fmt.Errorf("queuebench: message id %q stored twice", m.Header.Get(jetstream.MsgIDHeader)))
			}
		}))
	if err != nil {
		return Stats{}, err
	}
	defer js.CleanupPublisher()
	name := "QUEUEBENCH_" + nuid.Next()
	subjects := make(map[string]bool)
	payload := 0
	out := make([]*nats.Msg, n)
	for i, m := range msgs {
		subjects[m.Subject] = true
		payload += len(m.Data)
		c := &nats.Msg{Subject: m.Subject, Data: m.Data}
		if len(m.Header) > 0 {
			c.Header = maps.Clone(m.Header)
			if _, ok := c.Header[jetstream.ExpectedStreamHeader]; ok {
				c.Header[jetstream.ExpectedStreamHeader] = []string{name}
			}
		}
		out[i] = c
	}
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:      name,
		Subjects:  slices.Sorted(maps.Keys(subjects)),
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

	// The first failure cancels ctx with its cause; the other goroutine then stops too.
	var (
		wg         sync.WaitGroup
		got        int
		pubElapsed time.Duration
	)
	start := time.Now()
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i, m := range out {
			if _, err := js.PublishMsgAsync(m, stallWait); err != nil {
				cancel(fmt.Errorf("queuebench: publish %d: %w", i, err))
				return
			}
		}
		select {
		case <-js.PublishAsyncComplete():
			pubElapsed = time.Since(start)
		case <-ctx.Done():
		}
	}()
	go func() {
		defer wg.Done()
		for got < n && ctx.Err() == nil {
			batch, err := cons.Fetch(min(fetchBatch, n-got), jetstream.FetchMaxWait(5*time.Second))
			if err != nil {
				cancel(fmt.Errorf("queuebench: fetch: %w", err))
				return
			}
			for m := range batch.Messages() {
				if err := m.Ack(); err != nil {
					cancel(fmt.Errorf("queuebench: ack: %w", err))
					return
				}
				got++
			}
			if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
				cancel(fmt.Errorf("queuebench: fetch: %w", err))
				return
			}
		}
	}()
	wg.Wait()
	if got < n {
		return Stats{}, fmt.Errorf("queuebench: %d of %d messages moved: %w", got, n, context.Cause(ctx))
	}
	// Acks are fire-and-forget; a flush makes the server have read the last one.
	if err := nc.FlushTimeout(30 * time.Second); err != nil {
		return Stats{}, fmt.Errorf("queuebench: flush: %w", err)
	}
	elapsed := time.Since(start)
	return Stats{
		Messages:       n,
		Size:           payload / n,
		Elapsed:        elapsed,
		PublishElapsed: pubElapsed,
		MsgsPerSec:     float64(n) / elapsed.Seconds(),
	}, nil
}
