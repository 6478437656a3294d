package worker

import (
	"context"
	"testing"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/assert"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// describingJudge is costlyJudge that names its model and prompt.
type describingJudge struct{ costlyJudge }

func (describingJudge) Describe(reference string) (string, string) {
	if reference != "" {
		return "judge-m", "prompt-ref/1"
	}
	return "judge-m", "prompt/1"
}

// TestResultConfiguration: a prompt result names the agent's model and the CLI version the
// agent reported, and the judge's model and prompt version only when the job asked the judge.
func TestResultConfiguration(t *testing.T) {
	tests := []struct {
		name                    string
		assertions              []*pb.Assertion
		reference               string
		judgeModel, judgePrompt string
	}{
		{name: "no semantic_match", assertions: []*pb.Assertion{{Type: string(assert.OutputContains), Value: "done"}}},
		{name: "semantic_match", assertions: []*pb.Assertion{semanticHey}, judgeModel: "judge-m", judgePrompt: "prompt/1"},
		{name: "with a reference", assertions: []*pb.Assertion{semanticHey}, reference: "hey", judgeModel: "judge-m", judgePrompt: "prompt-ref/1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := promptJob(tt.assertions...)
			job.Reference = tt.reference
			e := NewExecutor(&fakeSandboxes{sb: &fakeSandbox{}}, nil)
			e.WithAgents(map[string]AgentSpec{"": {Agent: fakeAgent{output: "done", tr: agent.Transcript{AgentVersion: "claude-cli/2.1.240"}}, Model: "agent-m"}}, describingJudge{}, 1)
			res, err := e.Execute(context.Background(), job, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if res.GetAgentVersion() != "claude-cli/2.1.240" {
				t.Errorf("agent version %q, want the transcript's claude-cli/2.1.240", res.GetAgentVersion())
			}
			if res.GetModel() != "agent-m" || res.GetJudgeModel() != tt.judgeModel || res.GetJudgePrompt() != tt.judgePrompt {
				t.Errorf("model %q judge %q %q, want agent-m %q %q", res.GetModel(), res.GetJudgeModel(), res.GetJudgePrompt(), tt.judgeModel, tt.judgePrompt)
			}
		})
	}
}
