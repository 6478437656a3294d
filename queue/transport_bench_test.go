package queue_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

// cpuTime is the process's user and system CPU so far: the embedded server's too.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLaneFetch takes jobs four at a time, as a worker with four free slots does, and acks
// them: through the client library's FetchNoWait ("library", what LaneConsumer.Fetch did before)
// and through LaneConsumer.Fetch. An op is one job; cpu-µs/job counts the whole process, the
// in-process server included. The jobs are published before the timer runs.
func BenchmarkLaneFetch(b *testing.B) {
	const batch = 4
	for _, path := range []string{"library", "lane"} {
		b.Run(path, func(b *testing.B) {
			b.ReportAllocs()
			_, _, topo := queuetest.Start(b)
			ctx := context.Background()
			lane := topo.LaneConsumers()[1]
			payload := make([]byte, 512)
			jobs := 0
			var cpu time.Duration
			for b.Loop() {
				if jobs == 0 {
					b.StopTimer()
					p, err := topo.NewJobPublisher(queue.DefaultJobPublisherConfig())
					if err != nil {
						b.Fatal(err)
					}
					run := fmt.Sprintf("r%d", time.Now().UnixNano())
					for j := range 2000 {
						if err := p.Publish(ctx, queue.LaneScheduled, run, fmt.Sprintf("j%d", j), payload); err != nil {
							b.Fatal(err)
						}
					}
					if err := p.Close(ctx); err != nil {
						b.Fatal(err)
					}
					jobs = 2000
					b.StartTimer()
				}
				start := cpuTime(b)
				// One fetch per batch of ops: the loop's remaining iterations take the rest.
				if path == "library" {
					mb, err := topo.RawScheduled().FetchNoWait(batch)
					if err != nil {
						b.Fatal(err)
					}
					for m := range mb.Messages() {
						if err := m.Ack(); err != nil {
							b.Fatal(err)
						}
						jobs--
					}
				} else {
					ds, err := lane.Fetch(batch, 0)
					if err != nil {
						b.Fatal(err)
					}
					for _, d := range ds {
						if err := d.Ack(); err != nil {
							b.Fatal(err)
						}
						jobs--
					}
				}
				cpu += cpuTime(b) - start
			}
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N)/batch, "cpu-µs/job")
		})
	}
}

// BenchmarkPublishAcked publishes messages with ids and waits for all their acks, 1,000 at a
// time: through the client library's PublishMsgAsync ("library", what the publishers did
// before) and through a JobPublisher. An op is one message.
func BenchmarkPublishAcked(b *testing.B) {
	const window = 1000
	for _, path := range []string{"library", "publisher"} {
		b.Run(path, func(b *testing.B) {
			b.ReportAllocs()
			_, conn, topo := queuetest.Start(b)
			ctx := context.Background()
			payload := make([]byte, 512)
			js, err := jetstream.New(conn.NATS(), jetstream.WithPublishAsyncMaxPending(window+1))
			if err != nil {
				b.Fatal(err)
			}
			p, err := topo.NewJobPublisher(queue.DefaultJobPublisherConfig())
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close(ctx)
			start := cpuTime(b)
			i := 0
			for b.Loop() {
				run := fmt.Sprintf("r%d", i/window)
				id := fmt.Sprintf("j%d", i)
				if path == "library" {
					m := &nats.Msg{Subject: queue.JobSubject(queue.LaneScheduled, run), Data: payload, Header: nats.Header{
						jetstream.MsgIDHeader: {run + "." + id}, jetstream.ExpectedStreamHeader: {queue.JobsStream}}}
					if _, err := js.PublishMsgAsync(m); err != nil {
						b.Fatal(err)
					}
				} else if err := p.Publish(ctx, queue.LaneScheduled, run, id, payload); err != nil {
					b.Fatal(err)
				}
				i++
				if i%window == 0 {
					if path == "library" {
						<-js.PublishAsyncComplete()
					} else if err := p.Wait(ctx, run); err != nil {
						b.Fatal(err)
					}
					// Keep the work queue short: what is stored is not what is measured.
					b.StopTimer()
					if err := topo.RawJobs().Purge(ctx); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			}
			b.ReportMetric(float64((cpuTime(b)-start).Microseconds())/float64(b.N), "cpu-µs/msg")
		})
	}
}
