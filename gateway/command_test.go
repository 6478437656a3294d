package gateway

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/agent/agenttest"
	"github.com/skillfleet/skillfleet/atif"
)

// newCommand makes a command agent, failing the test on error.
func newCommand(t *testing.T, cfg agent.CommandConfig) *agent.Command {
	t.Helper()
	c, err := agent.NewCommand(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// hostSandbox runs commands on the host, standing in for a sandbox whose loopback and
// mounted gateway socket the command shares.
type hostSandbox struct{}

func (hostSandbox) Exec(ctx context.Context, cmd []string, stdin []byte, workdir string, _ time.Duration) (agent.ExecResult, error) {
	c := exec.CommandContext(ctx, cmd[0], cmd[1:]...)
	c.Stdin, c.Dir = bytes.NewReader(stdin), workdir
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return agent.ExecResult{ExitCode: ee.ExitCode(), Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}, nil
	case err != nil:
		return agent.ExecResult{}, err
	}
	return agent.ExecResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}, nil
}

func TestCommandThroughTheGateway(t *testing.T) {
	needPython(t)
	f := newGatewayFixture(t, func(_ int, r agenttest.Request) agenttest.Reply {
		c, _ := r.Messages()[0]["content"].(string)
		return agenttest.Text("answer to "+c, 12, 8)
	}, nil)
	for _, mode := range []string{"argv", "stdin"} {
		t.Run(mode, func(t *testing.T) {
			tmpl := []string{"python3", "-c", cliScript, "{{prompt}}"}
			if mode == "stdin" {
				tmpl = tmpl[:3]
			}
			c := newCommand(t, agent.CommandConfig{
				Template: tmpl,
				Env:      map[string]string{"OPENAI_BASE_URL": "{{base_url}}", "OPENAI_API_KEY": "{{token}}"},
				Gateway:  f.g.Opener(), GatewayDir: filepath.Dir(f.socket), ForwardPort: freePort(t),
			})
			out, tr, err := c.Run(agent.WithJobID(context.Background(), "job-"+mode), hostSandbox{}, agent.Request{Input: "the question", WorkDir: os.TempDir()})
			if err != nil || out != "answer to the question" {
				t.Fatalf("Run = %q, %v", out, err)
			}
			if tr.Usage.PromptTokens != 12 || tr.Usage.CompletionTokens != 8 || tr.Turns != 1 || tr.Stop != "final" {
				t.Errorf("transcript %+v, want the gateway's metered 12+8 tokens in 1 turn", tr)
			}
			// The gateway's record of the run: the CLI's question, the model's answer, its tokens.
			traj := tr.Trajectory
			if traj == nil || traj.Validate() != nil || len(traj.Steps) != 2 || traj.Steps[0].Message != "the question" ||
				traj.Steps[1].Message != "answer to the question" || traj.Steps[1].Metrics == nil || traj.Steps[1].Metrics.PromptTokens != 12 {
				t.Errorf("trajectory %+v", traj)
			}
			// The stand-in CLI's version, from the User-Agent Python's urllib sends.
			if !strings.HasPrefix(tr.AgentVersion, "Python-urllib/3.") {
				t.Errorf("agent version %q, want Python-urllib/3.x", tr.AgentVersion)
			}
			// One whole conversation, no call: the (empty) list of calls is complete.
			if !tr.ToolsSeen || len(tr.ToolCalls) != 0 {
				t.Errorf("tools seen %v, calls %v; want a complete empty list", tr.ToolsSeen, tr.ToolCalls)
			}
		})
	}
	last := f.up.Requests()[len(f.up.Requests())-1]
	if last.Header.Get("Authorization") != "Bearer "+realKey {
		t.Errorf("upstream Authorization %q", last.Header.Get("Authorization"))
	}
}

func TestCommandBudgetExhaustedIsATokenLimit(t *testing.T) {
	needPython(t)
	f := newGatewayFixture(t, textReply(30, 0), nil)
	// The CLI asks twice; the second ask is refused (429) and the CLI fails.
	twice := "import subprocess, sys\nfor _ in range(2):\n    subprocess.run([sys.executable, '-c', sys.argv[1], 'q'], check=True)\n"
	c := newCommand(t, agent.CommandConfig{
		Template: []string{"python3", "-c", twice, cliScript},
		Env:      map[string]string{"OPENAI_BASE_URL": "{{base_url}}", "OPENAI_API_KEY": "{{token}}"},
		Gateway:  f.g.Opener(), GatewayDir: filepath.Dir(f.socket), ForwardPort: freePort(t),
	})
	out, tr, err := c.Run(context.Background(), hostSandbox{}, agent.Request{Input: "q", Limits: agent.Limits{MaxTokens: 20}})
	if !errors.Is(err, agent.ErrTokenLimit) || out != "" || tr.Stop != "tokens" || tr.Usage.Total() != 30 {
		t.Fatalf("Run = %q, %+v, %v; want ErrTokenLimit after 30 tokens", out, tr, err)
	}
	// A failed run keeps what the gateway saw: the one answered request.
	if traj := tr.Trajectory; traj == nil || traj.Validate() != nil || len(traj.Steps) != 2 || traj.FinalMetrics.TotalPromptTokens != 30 {
		t.Errorf("trajectory after the budget ran out: %+v", traj)
	}
	if !strings.Contains(err.Error(), "token budget is exhausted") {
		t.Errorf("error %q does not quote the gateway's refusal", err)
	}
	if n := f.up.Count(); n != 1 {
		t.Errorf("upstream got %d requests, want 1", n)
	}
}

// TestGatewayTrajectoryComplete: the calls of a gateway trajectory are trusted only when it
// holds the whole conversation.
func TestGatewayTrajectoryComplete(t *testing.T) {
	whole := func() *atif.Trajectory {
		tr := &atif.Trajectory{SchemaVersion: atif.SchemaVersion, Agent: atif.Agent{Name: "cli", Version: "unknown"}}
		tr.Add(atif.SourceUser, "go")
		tr.Add(atif.SourceAgent, "done").Extra = map[string]any{"streamed": true}
		return tr
	}
	unmatched, skipped, cut := whole(), whole(), whole()
	unmatched.Extra = map[string]any{extraUnmatched: 1}
	skipped.Extra = map[string]any{extraSkipped: 2}
	cut.Steps[1].Extra[extraIncomplete] = true
	for name, tc := range map[string]struct {
		t    *atif.Trajectory
		want bool
	}{
		"whole, streamed": {whole(), true}, "unmatched requests": {unmatched, false},
		"skipped messages": {skipped, false}, "an answer cut": {cut, false}, "none": {nil, false},
	} {
		if got := complete(tc.t); got != tc.want {
			t.Errorf("%s: complete = %v, want %v", name, got, tc.want)
		}
	}
}

// retryingCLI asks the same question three times while the answer comes back cut at its max
// output, then gives up with an error of its own, as Codex does with response.incomplete.
const retryingCLI = `
import json, os, sys, urllib.request
for _ in range(3):
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        data=json.dumps({"model": "m", "max_tokens": 50, "messages": [{"role": "user", "content": sys.argv[1]}]}).encode(),
        headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        choice = json.load(r)["choices"][0]
    if choice["finish_reason"] != "length":
        print(choice["message"]["content"])
        sys.exit(0)
print("stream disconnected before completion: Incomplete response returned, reason: max_output_tokens", file=sys.stderr)
sys.exit(1)
`

// TestCommandCapReachedInReason: a CLI that fails over answers cut at their max output fails
// with a reason that says so, not only with the CLI's own words about a retry.
func TestCommandCapReachedInReason(t *testing.T) {
	needPython(t)
	cut := `{"model":"up","choices":[{"index":0,"message":{"role":"assistant","content":"part of it"},"finish_reason":"length"}],"usage":{"prompt_tokens":10,"completion_tokens":50}}`
	up := scriptedUpstream(t, "application/json", cut, cut, cut)
	f := serveGateway(t, up.URL+"/v1", nil)
	c := newCommand(t, agent.CommandConfig{
		Template: []string{"python3", "-c", retryingCLI, "{{prompt}}"},
		Env:      map[string]string{"OPENAI_BASE_URL": "{{base_url}}", "OPENAI_API_KEY": "{{token}}"},
		Gateway:  f.g.Opener(), GatewayDir: filepath.Dir(f.socket), ForwardPort: freePort(t),
	})
	out, tr, err := c.Run(context.Background(), hostSandbox{}, agent.Request{Input: "write it", WorkDir: os.TempDir(), Limits: agent.Limits{MaxTokens: 1_000_000}})
	if err == nil || out != "" || tr.Stop != "error" {
		t.Fatalf("Run = %q, %+v, %v; want an error", out, tr, err)
	}
	for _, want := range []string{"exited with status 1", "max_output_tokens", "3 answers of the model were cut at their max output (up to 50 tokens)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if n := tr.Trajectory.Extra[atif.ExtraMaxOutputAnswers]; n != 3 {
		t.Errorf("trajectory extra %v, want 3 answers cut", tr.Trajectory.Extra)
	}
}
