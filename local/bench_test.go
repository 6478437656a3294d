package local

import (
	"bytes"
	"context"
	"testing"
	"time"

	"go.uber.org/zap"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
	"github.com/skillfleet/skillfleet/suite/suitetest"
)

// noop passes every job without running anything: the dispatch path alone is measured.
type noop struct{}

func (noop) Execute(context.Context, *pb.Job, string) (*pb.Result, error) {
	return &pb.Result{Verdict: pb.Verdict_VERDICT_PASSED, Assertions: []*pb.AssertionResult{{Type: "exit_code", Passed: true}}}, nil
}

// BenchmarkDispatch20k moves 20,000 no-op jobs from submission to a finished run.
func BenchmarkDispatch20k(b *testing.B) {
	root := b.TempDir()
	if err := suitetest.GenerateCommands(root, 200, 100, "true"); err != nil {
		b.Fatal(err)
	}
	s := suite.Load([]string{root}, skill.Options{})
	var bundle bytes.Buffer
	if _, err := suite.WriteBundle(&bundle, s.Graph, s.Catalog.Skills()); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		f, err := Start(ctx, Config{DataDir: b.TempDir(), Workers: 4, Slots: 16, Executor: noop{}, Log: zap.NewNop()})
		if err != nil {
			b.Fatal(err)
		}
		// A first run warms the workers' bundle caches, as any earlier run of a suite does.
		for i := range 2 {
			st, err := f.Coordinator.Submit(ctx, bytes.NewReader(bundle.Bytes()), &pb.RunSpec{})
			if err != nil {
				b.Fatal(err)
			}
			if i == 1 {
				b.StartTimer()
			}
			for {
				cur, _ := f.Coordinator.Status(ctx, st.GetId())
				if cur.GetState() != pb.RunState_RUN_STATE_RUNNING {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		b.StopTimer()
		_ = f.Close(ctx)
		b.StartTimer()
	}
	b.ReportMetric(20000*float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}
