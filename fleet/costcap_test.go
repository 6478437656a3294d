package fleet

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/agent/agenttest"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
)

// pricedExecutor runs every job as one request to a priced model endpoint and passes it with
// the usage the client priced: the cost a job reports is what its model call cost.
type pricedExecutor struct {
	client *agent.Client
	calls  atomic.Int64
}

func (e *pricedExecutor) Execute(ctx context.Context, job *pb.Job, _ string) (*pb.Result, error) {
	e.calls.Add(1)
	_, u, err := e.client.Converse(ctx, agent.Conversation{Messages: []agent.Message{{Role: agent.RoleUser, Text: job.GetCaseName()}}})
	if err != nil {
		return nil, err
	}
	return &pb.Result{
		Verdict:    pb.Verdict_VERDICT_PASSED,
		Assertions: []*pb.AssertionResult{{Type: "exit_code", Passed: true, Message: "priced"}},
		Usage:      &pb.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, Cost: u.Cost},
	}, nil
}

// TestCostCapStopsTheRun: every job makes one model request of 1,000 prompt tokens at $1,000
// per million, so $1 a job, and the example suite's 21 jobs would cost $21. With --max-cost 5,
// once the spend plus what the jobs in flight are expected to spend reaches $5 nothing more is
// dispatched; once the spend reaches $5 (or nothing is in flight and the next job would pass
// it) the run is cancelled and marked cost_capped, its unfinished cases skipped ("cost
// cap"), its report partial with what it spent. The model was paid for no more than the cap
// plus the jobs in flight: before the first result says what a job costs, the lane's
// initial backlog (8) and the worker's two slots.
func TestCostCapStopsTheRun(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", apiKey)
	srv := agenttest.NewFunc(t, func(int, agenttest.Request) agenttest.Reply { return agenttest.Text("ok", 1000, 0) })
	client, err := agent.NewClient(agent.Endpoint{Name: "agent", BaseURL: srv.BaseURL(), APIKey: apiKey, Model: "m",
		Price: agent.Price{PromptPerMTok: 1000}}, agent.ClientDeps{})
	if err != nil {
		t.Fatal(err)
	}
	exec := &pricedExecutor{client: client}
	f := startFleet(t, exec, 1, nil)
	const limit, perJob, inFlight = 5.0, 1.0, 8 + 2
	st, err := f.Coordinator.Submit(context.Background(), strings.NewReader(string(exampleBundle(t))), &pb.RunSpec{MaxCost: limit})
	if err != nil {
		t.Fatal(err)
	}
	if full := float64(st.GetTotalJobs()) * perJob; full <= limit {
		t.Fatalf("the run would cost $%v in all, not more than the cap", full)
	}
	final := wait(t, f.Coordinator, st.GetId())
	if final.GetState() != pb.RunState_RUN_STATE_CANCELLED || !final.GetCostCapped() || !strings.HasPrefix(final.GetReason(), "cost cap: spent $") {
		t.Fatalf("state %v, cost capped %v, reason %q", final.GetState(), final.GetCostCapped(), final.GetReason())
	}
	paid := float64(srv.Count()) * perJob
	if paid > limit+inFlight*perJob {
		t.Errorf("the model was paid $%v: more than the cap $%v plus the jobs in flight", paid, limit)
	}
	if final.GetSpent() > paid || final.GetSpent() <= limit-perJob {
		t.Errorf("spent $%v reported, $%v paid", final.GetSpent(), paid)
	}
	if final.GetDoneJobs() >= final.GetTotalJobs() {
		t.Errorf("%d of %d jobs done: the cap stopped nothing", final.GetDoneJobs(), final.GetTotalJobs())
	}
	rep, err := f.Coordinator.Report(context.Background(), st.GetId())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Partial == nil || rep.Partial.Spent != final.GetSpent() || rep.Partial.MaxCost != limit {
		t.Errorf("report partial %+v, want spent %v of %v", rep.Partial, final.GetSpent(), limit)
	}
	skipped := 0
	for _, c := range rep.Cases {
		if c.Status == report.StatusSkipped {
			skipped++
			if !strings.Contains(c.Reason, "cost cap") {
				t.Errorf("%s skipped for %q", c.Case, c.Reason)
			}
		}
	}
	if skipped == 0 || rep.Summary.Skipped != skipped {
		t.Errorf("%d cases skipped, summary %+v", skipped, rep.Summary)
	}
	// Rebuilt from its results (the stored report lost, a new coordinator), the report
	// still says it is partial and what it spent.
	if err := f.Topology.DeleteReport(context.Background(), st.GetId()); err != nil {
		t.Fatal(err)
	}
	restartCoordinator(t, f)
	again, err := f.Coordinator.Report(context.Background(), st.GetId())
	if err != nil {
		t.Fatal(err)
	}
	if again.Partial == nil || *again.Partial != *rep.Partial {
		t.Errorf("rebuilt report partial %+v, want %+v", again.Partial, rep.Partial)
	}
}
