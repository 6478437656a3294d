package agent

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

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

// forwarderCLI is a stand-in agent CLI: it posts its first argument to
// $OPENAI_BASE_URL/chat/completions with $OPENAI_API_KEY and prints the answer's content.
const forwarderCLI = `
import json, os, sys, urllib.request, urllib.error
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps({"model": "m", "messages": [{"role": "user", "content": sys.argv[1]}]}).encode(),
    headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"})
try:
    with urllib.request.urlopen(req) as r:
        print(json.load(r)["choices"][0]["message"]["content"])
except urllib.error.HTTPError as e:
    print("HTTP %d: %s" % (e.code, e.read().decode()), file=sys.stderr)
    sys.exit(3)
`

// TestForwarderCarriesTCPToTheGatewaySocket: the in-sandbox forwarder gives a CLI a TCP base
// URL on loopback, carries its requests to a Unix socket and exits with the CLI's status.
func TestForwarderCarriesTCPToTheGatewaySocket(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	dir, err := os.MkdirTemp("", "fw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer good" {
			http.Error(w, `{"error":{"message":"bad token"}}`, http.StatusUnauthorized)
			return
		}
		var body struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"content": "echo: " + body.Messages[0].Content}}}})
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	l2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l2.Addr().(*net.TCPAddr).Port)
	_ = l2.Close()
	run := func(token string) (string, string, int) {
		cmd := exec.Command("python3", "-c", forwarderScript, sock, port, "python3", "-c", forwarderCLI, "hello gateway")
		cmd.Env = append(os.Environ(), "OPENAI_BASE_URL=http://127.0.0.1:"+port+"/v1", "OPENAI_API_KEY="+token)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), code
	}
	if out, errOut, code := run("good"); code != 0 || out != "echo: hello gateway\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// The CLI's exit status comes through the forwarder.
	if _, errOut, code := run("bad"); code != 3 || !strings.Contains(errOut, "HTTP 401") {
		t.Errorf("bad token: exit %d, stderr %q; want 3 and the socket's 401", code, errOut)
	}
}
