package monitoring_test

import (
	"context"
	"testing"

	"github.com/moby/moby/client"
	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/fleet"
	"github.com/skillfleet/skillfleet/internal/metricstest"
	"github.com/skillfleet/skillfleet/judge"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/sandbox"
)

// noop passes every job: the metrics are registered when the parts are built, not by jobs.
type noop struct{}

func (noop) Execute(context.Context, *pb.Job, string) (*pb.Result, error) {
	return &pb.Result{Verdict: pb.Verdict_VERDICT_PASSED}, nil
}

// exported builds the coordinator, a worker, a sandbox runner, a model client and a judge the
// way the daemons do and returns what they register.
func exported(t *testing.T) metricstest.Metrics {
	t.Helper()
	reg := metricstest.Metrics{}
	ctx := context.Background()
	f, err := fleet.StartInProcess(ctx, fleet.InProcessConfig{DataDir: t.TempDir(), Workers: 1, Slots: 1, Executor: noop{}, Log: zap.NewNop(), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close(ctx) })
	docker, err := client.New(client.FromEnv) // never called: New only registers metrics
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = docker.Close() })
	if _, err := sandbox.New(sandbox.Config{WorkerID: "metricstest"}, docker, zap.NewNop(), reg); err != nil {
		t.Fatal(err)
	}
	c, err := agent.NewClient(agent.Endpoint{Name: "e", BaseURL: "http://127.0.0.1:1", Model: "m"}, agent.ClientDeps{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := judge.New(judge.Config{}, judge.Deps{Client: c, Registry: reg}); err != nil {
		t.Fatal(err)
	}
	return reg
}
