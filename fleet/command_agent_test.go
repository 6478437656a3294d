package fleet

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/skillfleet/skillfleet/agent/agenttest"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
	"github.com/skillfleet/skillfleet/worker"
)

// cliScript stands in for an agent CLI: it reads the OpenAI variables the command agent's env
// gives it, asks the model once through the in-sandbox forwarder, and prints the answer. It
// sends its whole environment along and prints its key to stderr, so that what the sandbox
// held is visible upstream.
const cliScript = `
import json, os, sys, urllib.request
key = os.environ["OPENAI_API_KEY"]
print("cli key: " + key, file=sys.stderr)
body = json.dumps({"model": "cli-model", "messages": [
    {"role": "user", "content": sys.argv[1]},
    {"role": "user", "content": "sandbox env: " + json.dumps(dict(os.environ), sort_keys=True)},
]}).encode()
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=body,
    headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
with urllib.request.urlopen(req, timeout=30) as r:
    print(json.load(r)["choices"][0]["message"]["content"])
`

// TestCommandAgentRunsTheCLIInTheSandboxThroughTheGateway: a command agent configured in
// skillfleet.yaml runs its CLI in the job's sandbox; the CLI reaches the model only through the
// worker's gateway (socket mounted into the sandbox, forwarder on the sandbox's loopback),
// holding a per-job token while the upstream gets the real key, and the gateway meters usage.
func TestCommandAgentRunsTheCLIInTheSandboxThroughTheGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker test; skipped with -short")
	}
	const realKey = "sk-test-REAL-KEY-3c9a"
	t.Setenv("CLI_UPSTREAM_KEY", realKey)
	srv := agenttest.NewFunc(t, func(_ int, r agenttest.Request) agenttest.Reply {
		return agenttest.Text("Selected DEV.", 40, 6)
	})

	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	models := modelsFromConfig(t, map[string]any{"agents": []map[string]any{{
		"name": "cli", "model": "cli-model", "base_url": srv.BaseURL(), "api_key_env": "CLI_UPSTREAM_KEY",
		"max_tokens": 10000, "price": map[string]any{"prompt_per_mtok": 1, "completion_per_mtok": 2},
		"command": []string{"python3", "-c", strings.TrimSpace(cliScript), "{{prompt}}"},
		"env":     map[string]string{"OPENAI_BASE_URL": "{{base_url}}", "OPENAI_API_KEY": "{{token}}"},
	}}}, log)

	runner := startRunner(t, "cmdagent", log)

	exec := worker.NewSandboxExecutor(runner, log).WithAgents(models.Agents, models.Judge, models.Votes)
	f := startFleet(t, exec, 1, nil)
	rep := runToEnd(t, f, exampleBundle(t), &pb.RunSpec{SkillGlobs: []string{"env-selector"}, CaseGlobs: []string{"select_dev"}, Agents: models.Names})
	if len(rep.Cases) != 1 {
		t.Fatalf("cases %+v", rep.Cases)
	}
	c := rep.Cases[0]
	if c.Status != report.StatusPassed || c.Agent != "cli" {
		t.Fatalf("%s (agent %q): %s %s", c.Case, c.Agent, c.Status, c.Reason)
	}
	// Metered by the gateway from the upstream's answer, priced with the agent's price.
	if c.Usage == nil || c.Usage.PromptTokens != 40 || c.Usage.CompletionTokens != 6 || c.Usage.Cost <= 0 {
		t.Fatalf("usage %+v, want the gateway's metering of 40+6 tokens with a cost", c.Usage)
	}
	if s := fmt.Sprintf("%+v", rep); strings.Contains(s, realKey) {
		t.Fatalf("the real key is in the report: %s", s)
	}

	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests upstream, want the CLI's one", len(reqs))
	}
	r := reqs[0]
	if got := r.Header.Get("Authorization"); got != "Bearer "+realKey {
		t.Fatalf("upstream Authorization %q, want the real key", got)
	}
	msgs := r.Messages()
	if len(msgs) != 2 || msgs[0]["content"] != "Select the DEV environment for deployment" {
		t.Fatalf("upstream messages %v, want the case's input from the CLI", msgs)
	}
	// What the CLI sent was made in the sandbox: its user's home, the forwarder's base URL,
	// and a per-job token instead of any key.
	env, _ := msgs[1]["content"].(string)
	if !strings.Contains(env, `"HOME": "/home/sandbox"`) || !strings.Contains(env, `"OPENAI_BASE_URL": "http://127.0.0.1:8765/v1"`) {
		t.Fatalf("the CLI did not run in the sandbox behind the forwarder: %s", env)
	}
	if !regexp.MustCompile(`"OPENAI_API_KEY": "[0-9a-f]{64}"`).MatchString(env) {
		t.Fatalf("the CLI's key is not a gateway token: %s", env)
	}
	if strings.Contains(string(r.Body), realKey) || strings.Contains(env, "CLI_UPSTREAM_KEY") {
		t.Fatalf("the real key or its variable reached the sandbox: %s", env)
	}
}
