package queue_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

// BenchmarkQueuePath20k moves 20,000 jobs of 256 bytes the way skillfleet does, for comparison
// with queuebench.BenchmarkRaw20k: a JobPublisher publishes them while slots workers take one
// job each with NextJob and ack it. The gap to the raw baseline is the price of fetching one
// job per free slot instead of batches.
func BenchmarkQueuePath20k(b *testing.B) {
	for _, slots := range []int{8, 64} {
		b.Run(fmt.Sprintf("slots=%d", slots), func(b *testing.B) {
			_, _, topo := queuetest.Start(b)
			ctx := context.Background()
			payload := make([]byte, 256)
			const jobs = 20_000
			var total float64
			for i := 0; b.Loop(); i++ {
				run := fmt.Sprintf("bench%d", i)
				start := time.Now()
				var taken atomic.Int64
				var wg sync.WaitGroup
				errs := make(chan error, slots+1)
				for range slots {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for taken.Add(1) <= jobs {
							m, _, err := topo.NextJob(ctx, time.Second)
							if err != nil {
								errs <- err
								return
							}
							if err := m.Ack(); err != nil {
								errs <- err
								return
							}
						}
					}()
				}
				p, err := topo.NewJobPublisher(queue.DefaultJobPublisherConfig())
				if err != nil {
					b.Fatal(err)
				}
				for j := range jobs {
					if err := p.Publish(ctx, queue.LaneScheduled, run, fmt.Sprintf("j%d", j), payload); err != nil {
						b.Fatal(err)
					}
				}
				if err := p.Close(ctx); err != nil {
					b.Fatal(err)
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
				total += jobs / time.Since(start).Seconds()
			}
			b.ReportMetric(total/float64(b.N), "msgs/s")
		})
	}
}
