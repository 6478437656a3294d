package worker

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/activation"
	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/assert"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// costlyJudge passes every criterion and reports the tokens it spent.
type costlyJudge struct{ tokens int64 }

func (j costlyJudge) Evaluate(ctx context.Context, criterion, input, output string, votes int) (assert.Result, agent.Usage, error) {
	return assert.Result{Type: assert.SemanticMatch, Passed: true, Message: "ok"}, agent.Usage{PromptTokens: j.tokens}, nil
}

func (j costlyJudge) EvaluateWithReference(ctx context.Context, criterion, input, _, output string, votes int) (assert.Result, agent.Usage, error) {
	return j.Evaluate(ctx, criterion, input, output, votes)
}

// TestPromptTrajectory: the trajectory assertions see every tool call of the agent's
// transcript (not the ones the report keeps), the activations with their turns, and the
// agent's tokens without the judge's.
func TestPromptTrajectory(t *testing.T) {
	calls := make([]agent.ToolCall, maxTranscriptCalls+10)
	for i := range calls {
		calls[i] = agent.ToolCall{Name: "read_file", Arguments: fmt.Sprintf(`{"path":"f%d"}`, i)}
	}
	// The one call that matters is past the report's cap.
	calls[len(calls)-1] = agent.ToolCall{Name: "bash", Arguments: `{"command":"rm -rf /work"}`}
	tr := agent.Transcript{
		ToolCalls: calls, Activated: []string{"s"}, Activations: []activation.Activation{{Skill: "s", Turn: 3}}, ToolsSeen: true, ActivationsSeen: true,
		Turns: 4, Usage: agent.Usage{PromptTokens: 900, CompletionTokens: 100}, Stop: "final",
	}
	job := promptJob(
		&pb.Assertion{Type: string(assert.SkillNotActivated), Value: "s"},
		&pb.Assertion{Type: string(assert.ToolCalled), Value: "bash", ArgsMatch: `rm -rf`, MaxSet: true},
		&pb.Assertion{Type: string(assert.MaxToolCalls), Max: int64(maxTranscriptCalls + 10)},
		&pb.Assertion{Type: string(assert.MaxTokens), Max: 1000},
		&pb.Assertion{Type: string(assert.MaxTurns), Max: 3},
		semanticHey,
	)
	e := NewExecutor(&fakeSandboxes{sb: &fakeSandbox{}}, nil)
	e.WithAgents(map[string]AgentSpec{"": {Agent: fakeAgent{output: "done", tr: tr}}}, costlyJudge{tokens: 5000}, 1)
	res, err := e.Execute(context.Background(), job, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if res.GetVerdict() != pb.Verdict_VERDICT_FAILED {
		t.Fatalf("verdict %v (%s), want failed", res.GetVerdict(), res.GetReason())
	}
	want := []struct {
		passed  bool
		message string
	}{
		{false, `skill "s" was activated at turn 3`},
		{false, fmt.Sprintf(`tool "bash" was called 1 time whose arguments match /rm -rf/, first at call %d of %d; want never; calls: read_file×%d, bash×1`,
			len(calls), len(calls), len(calls)-1)},
		{true, fmt.Sprintf("the agent made %d tool calls, at most %d", len(calls), len(calls))},
		// 1000 agent tokens: the judge's 5000 do not count.
		{true, "the agent used 1000 tokens, at most 1000"},
		{false, "the agent took 4 turns, more than 3"},
		{true, "ok"},
	}
	got := res.GetAssertions()
	if len(got) != len(want) {
		t.Fatalf("%d results, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].GetPassed() != w.passed || got[i].GetErrored() || !strings.HasPrefix(got[i].GetMessage(), w.message) {
			t.Errorf("result %d (%s): passed %v errored %v %q; want passed %v %q", i, got[i].GetType(),
				got[i].GetPassed(), got[i].GetErrored(), got[i].GetMessage(), w.passed, w.message)
		}
	}
	// The report keeps its cap; the judge's tokens are in the job's usage.
	if n := len(res.GetTranscript().GetToolCalls()); n != maxTranscriptCalls+1 {
		t.Errorf("the report kept %d tool calls, want %d", n, maxTranscriptCalls+1)
	}
	if u := res.GetUsage(); u.GetPromptTokens() != 5900 {
		t.Errorf("usage %v, want the judge's tokens added", u)
	}
}
