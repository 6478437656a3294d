package history

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// BenchmarkIngest writes 1,000,000 results through a Writer (its default batches and writers)
// into each backend and reports rows/s. Run it alone: go test -run '^$' -bench Ingest -benchtime 1x ./history
func BenchmarkIngest(b *testing.B) {
	const rows = 1_000_000
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				s := open(b, be.target(b))
				w := NewWriter(s, WriterConfig{QueueRows: 200_000}, zap.NewNop())
				st := status(fmt.Sprint("bench", i), "bench", 0, pb.RunState_RUN_STATE_RUNNING, t0)
				res := result(st.GetId(), "", "skill", "case", 0, pb.Verdict_VERDICT_FAILED, "assertion output_contains failed", t0)
				b.StartTimer()
				start := time.Now()
				for j := range rows {
					res.JobId = fmt.Sprintf("job-%07d", j)
					res.CaseName = fmt.Sprintf("case-%d", j%5000)
					w.Record(res, st)
				}
				if err := w.Close(context.Background()); err != nil {
					b.Fatal(err)
				}
				elapsed := time.Since(start)
				b.StopTimer()
				if w.Dropped() != 0 || w.Written() != rows {
					b.Fatalf("written %d, dropped %d", w.Written(), w.Dropped())
				}
				b.ReportMetric(float64(rows)/elapsed.Seconds(), "rows/s")
			}
		})
	}
}

// BenchmarkWriterSustained feeds a Writer 1,000,000 results at the coordinator's peak rate
// (20,000/s, in bursts of 200 every 10 ms, catching up when a Record waited) and reports what
// the caller sees: how far behind the pace it ended, its longest wait in one Record, and how
// many results were dropped. Run it alone: go test -run '^$' -bench WriterSustained -benchtime 1x ./history
func BenchmarkWriterSustained(b *testing.B) {
	const (
		rows  = 1_000_000
		burst = 200
		every = 10 * time.Millisecond
	)
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				s := open(b, be.target(b))
				w := NewWriter(s, WriterConfig{}, zap.NewNop())
				st := status(fmt.Sprint("sustained", i), "bench", 0, pb.RunState_RUN_STATE_RUNNING, t0)
				res := result(st.GetId(), "", "skill", "case", 0, pb.Verdict_VERDICT_FAILED, "assertion output_contains failed", t0)
				start := time.Now()
				var longest time.Duration
				for j := range rows {
					if j%burst == 0 {
						if due := start.Add(time.Duration(j/burst) * every); time.Until(due) > 0 {
							time.Sleep(time.Until(due))
						}
					}
					res.JobId = fmt.Sprintf("job-%07d", j)
					res.CaseName = fmt.Sprintf("case-%d", j%5000)
					t := time.Now()
					w.Record(res, st)
					longest = max(longest, time.Since(t))
				}
				behind := time.Since(start) - rows/burst*every
				if err := w.Close(context.Background()); err != nil {
					b.Log(err)
				}
				b.ReportMetric(behind.Seconds(), "s-behind")
				b.ReportMetric(float64(longest.Milliseconds()), "ms-longest-Record")
				b.ReportMetric(float64(w.Dropped()), "dropped")
				b.ReportMetric(float64(w.Written()), "written")
			}
		})
	}
}
