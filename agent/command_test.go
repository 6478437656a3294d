package agent

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/agent/agenttest"
	"github.com/skillfleet/skillfleet/atif"
)

// recordingSandbox records each Exec and answers with a fixed result.
type recordingSandbox struct {
	calls  []execCall
	result ExecResult
	err    error
}

func (r *recordingSandbox) Exec(_ context.Context, cmd []string, stdin []byte, workdir string, _ time.Duration) (ExecResult, error) {
	r.calls = append(r.calls, execCall{Cmd: append([]string(nil), cmd...), Stdin: string(stdin), WorkDir: workdir})
	return r.result, r.err
}

func newCommand(t *testing.T, cfg CommandConfig) *Command {
	t.Helper()
	c, err := NewCommand(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCommandBuildsArgvWithoutAShell(t *testing.T) {
	hostile := `say "hi"; rm -rf / $(id) {{token}} {{workdir}}`
	tests := []struct {
		name      string
		cfg       CommandConfig
		wantCmd   []string
		wantStdin string
	}{
		{
			name:    "prompt in argv",
			cfg:     CommandConfig{Template: []string{"codex", "exec", "--prompt={{prompt}}"}},
			wantCmd: []string{"codex", "exec", "--prompt=" + hostile},
		},
		{
			name:      "no placeholder: prompt on stdin",
			cfg:       CommandConfig{Template: []string{"claude", "-p", "-"}},
			wantCmd:   []string{"claude", "-p", "-"},
			wantStdin: hostile,
		},
		{
			name: "environment through env(1), sorted",
			cfg: CommandConfig{Template: []string{"agent", "{{prompt}}"},
				Env: map[string]string{"Z_MODE": "x", "OPENAI_API_KEY": "{{token}}", "HOME_DIR": "{{workdir}}/h"}},
			wantCmd: []string{"env", "HOME_DIR=/work/h", "OPENAI_API_KEY=", "Z_MODE=x", "agent", hostile},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb := &recordingSandbox{result: ExecResult{Stdout: []byte("DONE\n\n")}}
			out, tr, err := newCommand(t, tt.cfg).Run(context.Background(), sb, Request{Input: hostile, WorkDir: "/work"})
			if err != nil || out != "DONE" || tr.Stop != "final" {
				t.Fatalf("Run = %q, %+v, %v", out, tr, err)
			}
			if len(sb.calls) != 1 {
				t.Fatalf("%d execs, want 1", len(sb.calls))
			}
			c := sb.calls[0]
			if !reflect.DeepEqual(c.Cmd, tt.wantCmd) || c.Stdin != tt.wantStdin || c.WorkDir != "/work" {
				t.Errorf("exec %q stdin %q in %q\nwant %q stdin %q", c.Cmd, c.Stdin, c.WorkDir, tt.wantCmd, tt.wantStdin)
			}
		})
	}
}

func TestCommandFailures(t *testing.T) {
	tests := []struct {
		name     string
		result   ExecResult
		err      error
		wantIs   error
		wantText string
		stop     string
	}{
		{"non-zero exit", ExecResult{ExitCode: 3, Stdout: []byte("partial"), Stderr: []byte("Error: model refused\n")}, nil, nil, `"agent-cli" exited with status 3: Error: model refused`, "error"},
		{"timed out", ExecResult{ExitCode: -1, TimedOut: true}, nil, ErrTimeLimit, "", "time"},
		{"sandbox failed", ExecResult{}, errors.New("container gone"), nil, "container gone", "error"},
		{"truncated", ExecResult{Stdout: []byte("long"), Truncated: true}, nil, nil, "truncated", "error"},
		{"empty", ExecResult{Stdout: []byte(" \n")}, nil, ErrEmptyOutput, "", "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb := &recordingSandbox{result: tt.result, err: tt.err}
			c := newCommand(t, CommandConfig{Template: []string{"agent-cli", "{{prompt}}"}})
			out, tr, err := c.Run(context.Background(), sb, Request{Input: "q"})
			if err == nil || out != "" || tr.Stop != tt.stop {
				t.Fatalf("Run = %q, stop %q, %v; want an error, no output, stop %q", out, tr.Stop, err, tt.stop)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v is not %v", err, tt.wantIs)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error %q does not contain %q", err, tt.wantText)
			}
		})
	}
}

func TestCommandStderrExcerptIsBounded(t *testing.T) {
	stderr := strings.Repeat("x", 10000) + "the real cause"
	sb := &recordingSandbox{result: ExecResult{ExitCode: 1, Stderr: []byte(stderr)}}
	_, _, err := newCommand(t, CommandConfig{Template: []string{"cli"}}).Run(context.Background(), sb, Request{Input: "q"})
	if err == nil || len(err.Error()) > stderrExcerpt+200 || !strings.HasSuffix(err.Error(), "the real cause") {
		t.Errorf("error of %d bytes: want the stderr's end, bounded", len(err.Error()))
	}
}

func TestNewCommandRejectsBadConfigs(t *testing.T) {
	for name, cfg := range map[string]CommandConfig{
		"empty":             {},
		"empty program":     {Template: []string{""}},
		"option as program": {Template: []string{"-i", "sh"}},
		"assignment":        {Template: []string{"A=b", "sh"}},
		"bad env name":      {Template: []string{"cli"}, Env: map[string]string{"A=B": "x"}},
		"empty env name":    {Template: []string{"cli"}, Env: map[string]string{"": "x"}},
		"bad port":          {Template: []string{"cli"}, ForwardPort: 70000},
	} {
		if _, err := NewCommand(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// hostSandbox runs commands on the host, standing in for a sandbox whose loopback and
// mounted gateway socket the command shares.
type hostSandbox struct{}

func (hostSandbox) Exec(ctx context.Context, cmd []string, stdin []byte, workdir string, _ time.Duration) (ExecResult, error) {
	c := exec.CommandContext(ctx, cmd[0], cmd[1:]...)
	c.Stdin, c.Dir = bytes.NewReader(stdin), workdir
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ExecResult{ExitCode: ee.ExitCode(), Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}, nil
	case err != nil:
		return ExecResult{}, err
	}
	return ExecResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}, nil
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
			c := newCommand(t, CommandConfig{
				Template: tmpl,
				Env:      map[string]string{"OPENAI_BASE_URL": "{{base_url}}", "OPENAI_API_KEY": "{{token}}"},
				Gateway:  f.g, GatewaySocket: f.socket, ForwardPort: freePort(t),
			})
			out, tr, err := c.Run(WithJobID(context.Background(), "job-"+mode), hostSandbox{}, Request{Input: "the question", WorkDir: os.TempDir()})
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
	c := newCommand(t, CommandConfig{
		Template: []string{"python3", "-c", twice, cliScript},
		Env:      map[string]string{"OPENAI_BASE_URL": "{{base_url}}", "OPENAI_API_KEY": "{{token}}"},
		Gateway:  f.g, GatewaySocket: f.socket, ForwardPort: freePort(t),
	})
	out, tr, err := c.Run(context.Background(), hostSandbox{}, Request{Input: "q", Limits: Limits{MaxTokens: 20}})
	if !errors.Is(err, ErrTokenLimit) || out != "" || tr.Stop != "tokens" || tr.Usage.Total() != 30 {
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

func TestToolCallsOfATrajectory(t *testing.T) {
	tr := &atif.Trajectory{SchemaVersion: atif.SchemaVersion, Agent: atif.Agent{Name: "cli", Version: "unknown"}}
	tr.Add(atif.SourceUser, "go")
	s := tr.Add(atif.SourceAgent, "")
	s.ToolCalls = []atif.ToolCall{{ToolCallID: "a", FunctionName: "shell", Arguments: atif.Arguments(`{"command":"cat /skills/x/SKILL.md"}`)}, {ToolCallID: "b", FunctionName: "read", Arguments: atif.Arguments(`{}`)}}
	s.Observation = &atif.Observation{Results: []atif.Result{{SourceCallID: "b", Content: "B"}, {SourceCallID: "a", Content: "A"}}}
	s = tr.Add(atif.SourceAgent, "")
	s.ToolCalls = []atif.ToolCall{{ToolCallID: "c", FunctionName: "shell", Arguments: atif.Arguments(`{"command":"ls"}`)}}
	got := toolCallsOf(tr)
	want := []ToolCall{
		{Name: "shell", Arguments: `{"command":"cat /skills/x/SKILL.md"}`, Output: "A", ExitCode: -1},
		{Name: "read", Arguments: `{}`, Output: "B", ExitCode: -1},
		{Name: "shell", Arguments: `{"command":"ls"}`, ExitCode: -1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("toolCallsOf = %+v, want %+v", got, want)
	}
	if toolCallsOf(nil) != nil {
		t.Error("a run without trajectory has calls")
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
