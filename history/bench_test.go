package history

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// BenchmarkIngest writes 1,000,000 results through a Writer (its default batches and writers) into each
// backend and reports rows/s. Run it alone: go test -run '^$' -bench Ingest -benchtime 1x ./history
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
