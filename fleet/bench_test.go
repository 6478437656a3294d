package fleet

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/testutil"
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

// BenchmarkDispatch20k moves 20,000 no-op jobs from submission to a finished run: 200 skills
// of 50 cases of 2 epochs, as 20,000 case files would be over a bundle's entry limit.
func BenchmarkDispatch20k(b *testing.B) {
	root := b.TempDir()
	if err := suitetest.GenerateCommandEpochs(root, 200, 50, 2, "true"); err != nil {
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
		f, err := StartInProcess(ctx, InProcessConfig{DataDir: b.TempDir(), Workers: 4, Slots: 16, Executor: noop{}, Log: zap.NewNop()})
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
			testutil.Eventually(b, 10*time.Minute, 5*time.Millisecond, func() bool {
				cur, _ := f.Coordinator.Status(ctx, st.GetId())
				return cur.GetState() != pb.RunState_RUN_STATE_RUNNING
			}, "run %s still running", st.GetId())
		}
		b.StopTimer()
		_ = f.Close(ctx)
		b.StartTimer()
	}
	b.ReportMetric(20000*float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkAdmission measures what `skillfleet test` costs the coordinator before the first job
// is published, for a suite of 200 skills × 20 command cases (4,000 jobs), the two ways a run
// comes in: Submit, which extracts, loads and plans the bundle again (the HTTP path, and
// `skillfleet test` until it planned once), and SubmitPlanned, which takes the plan the CLI
// made. The CLI's own load, plan and bundle are the same for both and are not timed.
func BenchmarkAdmission(b *testing.B) {
	root := b.TempDir()
	if err := suitetest.GenerateCommands(root, 200, 20, "true"); err != nil {
		b.Fatal(err)
	}
	s := suite.Load([]string{root}, skill.Options{})
	plan, err := s.Plan(suite.PlanOptions{})
	if err != nil {
		b.Fatal(err)
	}
	bundlePath := filepath.Join(b.TempDir(), "bundle.tar")
	bf, err := os.Create(bundlePath)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := suite.WriteBundle(bf, s.Graph, s.Catalog.Skills()); err != nil {
		b.Fatal(err)
	}
	if err := bf.Close(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	f, err := StartInProcess(ctx, InProcessConfig{DataDir: b.TempDir(), Executor: noop{}, Log: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close(ctx)
	for _, tc := range []struct {
		name   string
		submit func() (*pb.RunStatus, error)
	}{
		{"Submit", func() (*pb.RunStatus, error) {
			bundle, err := os.Open(bundlePath)
			if err != nil {
				return nil, err
			}
			defer bundle.Close()
			return f.Coordinator.Submit(ctx, bundle, &pb.RunSpec{})
		}},
		{"SubmitPlanned", func() (*pb.RunStatus, error) {
			return f.Coordinator.SubmitPlanned(ctx, coordinator.Planned{Suite: s, Plan: plan, Bundle: bundlePath}, &pb.RunSpec{})
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				st, err := tc.submit()
				if err != nil {
					b.Fatal(err)
				}
				if st.GetTotalJobs() != 4000 {
					b.Fatalf("%d jobs, want 4000", st.GetTotalJobs())
				}
				// No workers: cancelled at once, so the runs' jobs neither pile up nor count
				// against the jobs a caller may have in unfinished runs.
				b.StopTimer()
				if _, err := f.Coordinator.Cancel(ctx, st.GetId()); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
