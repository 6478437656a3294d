package queuebench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// RoundTrip moves n jobs of size bytes the way a job queue with durable results must, and no
// more: a PublishAsync publisher stores each job (with a message id) in a work-queue stream; a
// consumer pulls batches of fetchBatch, stores a result of resultSize bytes (with a message id)
// for each in a second stream, and acks each job once its result is stored; an ordered
// consumer reads the results. Elapsed runs from the first publish to the last result read.
// Both streams are file-backed and deleted afterwards.
//
// It is the floor under any such dispatcher: two stored messages, an ack and two deliveries
// per job, with nothing decoded, aggregated or run.
func RoundTrip(ctx context.Context, nc *nats.Conn, n, size, resultSize int) (Stats, error) {
	if n < 1 || size < 0 || resultSize < 0 {
		return Stats{}, fmt.Errorf("queuebench: want n >= 1 and sizes >= 0, got %d, %d and %d", n, size, resultSize)
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(maxPending))
	if err != nil {
		return Stats{}, err
	}
	defer js.CleanupPublisher()
	id := nuid.Next()
	jobsName, jobsSubject := "QUEUEBENCH_JOBS_"+id, "queuebench.jobs."+id
	resName, resSubject := "QUEUEBENCH_RESULTS_"+id, "queuebench.results."+id
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = js.DeleteStream(dctx, jobsName)
		_ = js.DeleteStream(dctx, resName)
	}()
	jobs, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: jobsName, Subjects: []string{jobsSubject},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage,
	})
	if err != nil {
		return Stats{}, fmt.Errorf("queuebench: create stream: %w", err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: resName, Subjects: []string{resSubject}, Storage: jetstream.FileStorage,
	}); err != nil {
		return Stats{}, fmt.Errorf("queuebench: create stream: %w", err)
	}
	cons, err := jobs.CreateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: "bench", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 100_000,
	})
	if err != nil {
		return Stats{}, fmt.Errorf("queuebench: create consumer: %w", err)
	}
	results, err := js.OrderedConsumer(ctx, resName, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return Stats{}, fmt.Errorf("queuebench: results consumer: %w", err)
	}
	it, err := results.Messages()
	if err != nil {
		return Stats{}, fmt.Errorf("queuebench: results consumer: %w", err)
	}
	defer it.Stop()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	payload, result := make([]byte, size), make([]byte, resultSize)
	var (
		wg              sync.WaitGroup
		pubErr, workErr error
	)
	start := time.Now()
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range n {
			m := nats.NewMsg(jobsSubject)
			m.Data = payload
			m.Header.Set(jetstream.MsgIDHeader, "j"+strconv.Itoa(i))
			if _, err := js.PublishMsgAsync(m, stallWait); err != nil {
				pubErr = fmt.Errorf("queuebench: publish job %d: %w", i, err)
				cancel()
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		workErr = work(ctx, js, cons, n, resSubject, result)
		if workErr != nil {
			cancel()
		}
	}()
	var readErr error
	for got := 0; got < n; got++ {
		if _, err := it.Next(jetstream.NextContext(ctx)); err != nil {
			readErr = fmt.Errorf("queuebench: read result %d of %d: %w", got+1, n, err)
			cancel()
			break
		}
	}
	elapsed := time.Since(start)
	wg.Wait()
	if err := errors.Join(pubErr, workErr, readErr); err != nil {
		return Stats{}, err
	}
	return Stats{Messages: n, Size: size, Elapsed: elapsed, MsgsPerSec: float64(n) / elapsed.Seconds()}, nil
}

// work takes n jobs in batches, stores a result for each and acks each job after its result.
func work(ctx context.Context, js jetstream.JetStream, cons jetstream.Consumer, n int, subject string, result []byte) error {
	var (
		msgs    []jetstream.Msg
		futures []jetstream.PubAckFuture
	)
	for got := 0; got < n; {
		batch, err := cons.Fetch(min(fetchBatch, n-got), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return fmt.Errorf("queuebench: fetch: %w", err)
		}
		msgs, futures = msgs[:0], futures[:0]
		for m := range batch.Messages() {
			r := nats.NewMsg(subject)
			r.Data = result
			r.Header.Set(jetstream.MsgIDHeader, "r"+strconv.Itoa(got))
			f, err := js.PublishMsgAsync(r, stallWait)
			if err != nil {
				return fmt.Errorf("queuebench: publish result: %w", err)
			}
			msgs, futures = append(msgs, m), append(futures, f)
			got++
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return fmt.Errorf("queuebench: fetch: %w", err)
		}
		for i, f := range futures {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				return fmt.Errorf("queuebench: store result: %w", err)
			case <-ctx.Done():
				return ctx.Err()
			}
			if err := msgs[i].Ack(); err != nil {
				return fmt.Errorf("queuebench: ack: %w", err)
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}
