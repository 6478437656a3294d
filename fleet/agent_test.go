package fleet

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/agent/agenttest"
	"github.com/skillfleet/skillfleet/judge"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
	"github.com/skillfleet/skillfleet/worker"
)

const apiKey = "sk-test-SENTINEL-8d1f"

// TestPromptCasesRunTheAgentInTheSandbox: the model (a scripted OpenAI-compatible server)
// activates the skill by reading its SKILL.md, runs the skill's script with bash, and answers;
// the judge decides semantic_match. What the script printed can only have come from the
// sandbox, and the key the worker uses never reaches it.
func TestPromptCasesRunTheAgentInTheSandbox(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker test; skipped with -short")
	}
	t.Setenv("OPENAI_API_KEY", apiKey)
	srv := agenttest.NewFunc(t, func(_ int, r agenttest.Request) agenttest.Reply {
		if r.Params()["model"] == "judge-model" {
			return agenttest.Text(`{"passed": true, "evidence": "the answer asks the user to confirm"}`, 50, 10)
		}
		msgs := r.Messages()
		input, tools := "", 0
		for _, m := range msgs {
			switch m["role"] {
			case "user":
				input, _ = m["content"].(string)
			case "tool":
				tools++
			}
		}
		switch tools {
		case 0:
			return agenttest.ToolCalls(100, 10, agenttest.Call{ID: "c1", Name: "read_file", Arguments: `{"path": "/skills/env-selector/SKILL.md"}`})
		case 1:
			return agenttest.ToolCalls(200, 10, agenttest.Call{ID: "c2", Name: "bash",
				Arguments: `{"command": "cd /skills/env-selector && python3 scripts/select.py ` + input + `; env"}`})
		}
		if strings.Contains(input, "production") {
			return agenttest.Text("1. Tests are green\n2. Rollback plan is written\n3. A second engineer approved the change", 300, 20)
		}
		if strings.Contains(input, "PROD") {
			return agenttest.Text("PROD is selected. Please confirm explicitly before I proceed.", 300, 20)
		}
		return agenttest.Text("Selected DEV.", 300, 20)
	})

	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	runner := startRunner(t, "agent", log)

	client, err := agent.NewClient(agent.Endpoint{Name: "agent", BaseURL: srv.BaseURL(), APIKey: apiKey, Model: "agent-model",
		Price: agent.Price{PromptPerMTok: 1, CompletionPerMTok: 2}}, agent.ClientDeps{})
	if err != nil {
		t.Fatal(err)
	}
	jc, err := agent.NewClient(agent.Endpoint{Name: "judge", BaseURL: srv.BaseURL(), APIKey: apiKey, Model: "judge-model"}, agent.ClientDeps{})
	if err != nil {
		t.Fatal(err)
	}
	j, err := judge.New(judge.Config{Model: "judge-model"}, judge.Deps{Client: jc, Cache: judge.NewLRU(100), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	exec := worker.NewSandboxExecutor(runner, log).WithAgents(
		map[string]worker.AgentSpec{"": {Agent: agent.NewBuiltIn(client, log), Limits: agent.Limits{MaxTurns: 5}}}, j, 1)
	f := startFleet(t, exec, 2, nil)

	rep := runToEnd(t, f, exampleBundle(t), &pb.RunSpec{CaseGlobs: []string{"select_dev", "reject_prod_without_confirmation", "prod_checklist"}})
	for _, c := range rep.Cases {
		if c.Status != report.StatusPassed {
			t.Errorf("%s: %s %s", c.Case, c.Status, c.Reason)
		}
	}
	if rep.Summary.Passed != 3 {
		t.Fatalf("summary %+v", rep.Summary)
	}
	// The judge: one sample for reject_prod_without_confirmation, and for prod_checklist, which
	// asks for votes: 3, samples until a majority agrees (two).
	judged := 0
	for _, r := range srv.Requests() {
		if r.Params()["model"] == "judge-model" {
			judged++
		}
	}
	if judged != 3 {
		t.Fatalf("%d judge requests, want 3 (1 + a 2-of-3 majority)", judged)
	}

	// The tool results the model received came from the sandbox: the script's JSON, the
	// sandbox's user, and no key in the environment there.
	sawScript := false
	for _, r := range srv.Requests() {
		for _, m := range r.Messages() {
			if m["role"] != "tool" {
				continue
			}
			content := fmt.Sprint(m["content"])
			if strings.Contains(content, `{"env": "DEV", "confirm": false}`) && strings.Contains(content, "HOME=/home/sandbox") {
				sawScript = true
			}
			if strings.Contains(content, apiKey) || strings.Contains(content, "OPENAI") {
				t.Errorf("a credential reached the sandbox: %q", content)
			}
		}
		if got := r.Header.Get("Authorization"); got != "Bearer "+apiKey {
			t.Errorf("request to the model without the worker's key: %q", got)
		}
	}
	if !sawScript {
		t.Fatal("no tool result shows the script ran in the sandbox")
	}
	// The agent was shown the run's catalog, which its jobs name by digest and the worker
	// fetched from the store: every skill of the bundle at its place under the mount.
	for _, r := range srv.Requests() {
		if r.Params()["model"] == "judge-model" {
			continue
		}
		system := fmt.Sprint(r.Messages()[0]["content"])
		for _, want := range []string{"<available_skills>", "<location>/skills/env-selector/SKILL.md</location>", "<location>/skills/logging-standards/SKILL.md</location>"} {
			if !strings.Contains(system, want) {
				t.Fatalf("the agent's system prompt lacks %q:\n%s", want, system)
			}
		}
	}

	// The stored results carry the transcript: the tool calls and the activated skill.
	it, err := f.Topology.FollowResults(context.Background(), rep.Run)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Stop()
	m, err := it.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res := &pb.Result{}
	if err := proto.Unmarshal(m.Data, res); err != nil {
		t.Fatal(err)
	}
	tr := res.GetTranscript()
	if len(tr.GetToolCalls()) != 2 || tr.GetToolCalls()[0].GetName() != "read_file" || tr.GetStop() != "final" ||
		len(tr.GetActivatedSkills()) != 1 || tr.GetActivatedSkills()[0] != "env-selector" && tr.GetActivatedSkills()[0] != "deploy-checklist" {
		t.Fatalf("transcript %v", tr)
	}
}
