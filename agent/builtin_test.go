package agent

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/activation"
	"github.com/skillfleet/skillfleet/agent/agenttest"
	"github.com/skillfleet/skillfleet/atif"
)

type execCall struct {
	Cmd     []string
	Stdin   string
	WorkDir string
}

// fakeSandbox records commands and answers from a file map and a command map.
type fakeSandbox struct {
	mu       sync.Mutex
	calls    []execCall
	files    map[string]string
	commands map[string]ExecResult // bash -c command → result
	err      error                 // returned by every Exec
}

func (f *fakeSandbox) Exec(ctx context.Context, cmd []string, stdin []byte, workdir string, _ time.Duration) (ExecResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, execCall{Cmd: append([]string(nil), cmd...), Stdin: string(stdin), WorkDir: workdir})
	if f.err != nil {
		return ExecResult{ExitCode: -1}, f.err
	}
	switch {
	case len(cmd) == 3 && cmd[0] == "cat" && cmd[1] == "--":
		p := cmd[2]
		if !strings.HasPrefix(p, "/") {
			p = workdir + "/" + p
		}
		if c, ok := f.files[p]; ok {
			return ExecResult{Stdout: []byte(c)}, nil
		}
		return ExecResult{ExitCode: 1, Stderr: []byte("cat: " + cmd[2] + ": No such file or directory")}, nil
	case len(cmd) == 3 && cmd[0] == "bash" && cmd[1] == "-c":
		if r, ok := f.commands[cmd[2]]; ok {
			return r, nil
		}
		if strings.HasPrefix(cmd[2], "cat ") {
			if c, ok := f.files[strings.TrimPrefix(cmd[2], "cat ")]; ok {
				return ExecResult{Stdout: []byte(c)}, nil
			}
		}
		return ExecResult{ExitCode: 127, Stderr: []byte("command not found")}, nil
	case len(cmd) == 5 && cmd[0] == "sh":
		if f.files == nil {
			f.files = map[string]string{}
		}
		f.files[cmd[4]] = string(stdin)
		return ExecResult{}, nil
	}
	return ExecResult{ExitCode: 2}, nil
}

func (f *fakeSandbox) recorded() []execCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]execCall(nil), f.calls...)
}

const envSkill = "---\nname: env-selector\ndescription: Selects deployment environment.\n---\nAlways answer with the environment name in capitals."

var testCatalog = []SkillRef{
	{Name: "env-selector", Description: "Selects deployment environment (DEV, UAT, PROD).", Location: "/skills/env-selector/SKILL.md"},
	{Name: "logging-standards", Description: "Logging <rules> & conventions.", Location: "/skills/logging-standards/SKILL.md"},
}

func newSandbox() *fakeSandbox {
	return &fakeSandbox{
		files:    map[string]string{"/skills/env-selector/SKILL.md": envSkill},
		commands: map[string]ExecResult{"echo DEV": {Stdout: []byte("DEV\n")}, "git status": {Stdout: []byte("On branch main\n")}},
	}
}

func newTestAgent(t *testing.T, srv *agenttest.Server) (*BuiltIn, clientFixture) {
	t.Helper()
	f := newTestClient(t, srv.BaseURL(), nil)
	return NewBuiltIn(f.c, nil), f
}

func call(id, name, args string) agenttest.Call {
	return agenttest.Call{ID: id, Name: name, Arguments: args}
}

func jsonArgs(kv ...string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// toolMessages are the tool results in a request, by tool_call_id.
func toolMessages(r agenttest.Request) map[string]string {
	out := map[string]string{}
	for _, m := range r.Messages() {
		if m["role"] == "tool" {
			id, _ := m["tool_call_id"].(string)
			c, _ := m["content"].(string)
			out[id] = c
		}
	}
	return out
}

func toolNames(r agenttest.Request) []string {
	var names []string
	tools, _ := r.Params()["tools"].([]any)
	for _, t := range tools {
		fn, _ := t.(map[string]any)["function"].(map[string]any)
		n, _ := fn["name"].(string)
		names = append(names, n)
	}
	return names
}

func systemText(r agenttest.Request) string {
	for _, m := range r.Messages() {
		if m["role"] == "system" {
			s, _ := m["content"].(string)
			return s
		}
	}
	return ""
}

func TestRunActivatesSkillRunsBashAndAnswers(t *testing.T) {
	srv := agenttest.NewScript(t,
		agenttest.ToolCalls(100, 10, call("c1", "read_file", jsonArgs("path", "/skills/env-selector/SKILL.md"))),
		agenttest.ToolCalls(200, 10, call("c2", "bash", jsonArgs("command", "echo DEV"))),
		agenttest.Text("Selected DEV", 300, 5))
	a, _ := newTestAgent(t, srv)
	sb := newSandbox()
	out, tr, err := a.Run(context.Background(), sb, Request{Input: "Select the DEV environment",
		Catalog: testCatalog, WorkDir: "/work"})
	if err != nil {
		t.Fatal(err)
	}
	if out != "Selected DEV" || tr.Stop != "final" || tr.Turns != 3 {
		t.Errorf("output %q stop %q turns %d", out, tr.Stop, tr.Turns)
	}
	if !reflect.DeepEqual(tr.Activated, []string{"env-selector"}) {
		t.Errorf("activated = %v", tr.Activated)
	}
	wantCalls := []execCall{
		{Cmd: []string{"cat", "--", "/skills/env-selector/SKILL.md"}, WorkDir: "/work"},
		{Cmd: []string{"bash", "-c", "echo DEV"}, WorkDir: "/work"},
	}
	if got := sb.recorded(); !reflect.DeepEqual(got, wantCalls) {
		t.Errorf("sandbox calls = %+v, want %+v", got, wantCalls)
	}
	if len(tr.ToolCalls) != 2 || tr.ToolCalls[0].Output != envSkill || tr.ToolCalls[0].ExitCode != 0 ||
		tr.ToolCalls[1].Output != "exit_code: 0\nstdout:\nDEV\n" || tr.ToolCalls[1].Error != "" {
		t.Errorf("tool calls = %+v", tr.ToolCalls)
	}
	if tr.Usage.PromptTokens != 600 || tr.Usage.CompletionTokens != 25 {
		t.Errorf("usage = %+v", tr.Usage)
	}
	reqs := srv.Requests()
	sys := systemText(reqs[0])
	for _, want := range []string{"use the read_file tool to load", "<available_skills>", "<name>env-selector</name>",
		"<location>/skills/env-selector/SKILL.md</location>", "Logging &lt;rules&gt; &amp; conventions."} {
		if !strings.Contains(sys, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, sys)
		}
	}
	if got := toolNames(reqs[0]); !reflect.DeepEqual(got, []string{"bash", "read_file", "write_file"}) {
		t.Errorf("tools = %v", got)
	}
	if got := toolMessages(reqs[1])["c1"]; got != envSkill {
		t.Errorf("read_file result sent back = %q", got)
	}
	// The assistant's tool-calling message precedes its results.
	msgs := reqs[2].Messages()
	if len(msgs) != 6 || msgs[2]["role"] != "assistant" || msgs[4]["role"] != "assistant" || msgs[5]["role"] != "tool" {
		t.Errorf("third request's messages = %v", msgs)
	}
}

func TestRunWritesFilesWithThePathAsAnArgument(t *testing.T) {
	evil := `x"; rm -rf / #`
	srv := agenttest.NewScript(t,
		agenttest.ToolCalls(1, 1, call("w", "write_file", jsonArgs("path", evil, "content", "line 1\n$(reboot)\n"))),
		agenttest.Text("done", 1, 1))
	a, _ := newTestAgent(t, srv)
	sb := newSandbox()
	if _, _, err := a.Run(context.Background(), sb, Request{Input: "write", WorkDir: "/work"}); err != nil {
		t.Fatal(err)
	}
	want := []execCall{{Cmd: []string{"sh", "-c", `cat > "$1"`, "sh", evil}, Stdin: "line 1\n$(reboot)\n", WorkDir: "/work"}}
	if got := sb.recorded(); !reflect.DeepEqual(got, want) {
		t.Errorf("sandbox calls = %+v, want %+v", got, want)
	}
	if got := toolMessages(srv.Requests()[1])["w"]; !strings.HasPrefix(got, "wrote 17 bytes to ") {
		t.Errorf("write_file result = %q", got)
	}
}

func TestRunReportsBadToolCallsToTheModel(t *testing.T) {
	tests := []struct {
		name, tool, args string
		allowed          string
		wantErr          string
	}{
		{"bad JSON", "bash", `{"command": `, "", "not a JSON object"},
		{"not an object", "bash", `["ls"]`, "", "not a JSON object"},
		{"missing field", "read_file", `{}`, "", `needs a non-empty "path"`},
		{"wrong type", "bash", `{"command": 5}`, "", "not a JSON object"},
		{"write without content", "write_file", `{"path":"/work/a"}`, "", `"content" string`},
		{"unknown tool", "python", `{"code":"print(1)"}`, "", `unknown tool "python"`},
		{"bash not allowed", "bash", jsonArgs("command", "echo DEV"), "Read", "tool bash is not allowed by the skill's allowed-tools"},
		{"write not allowed", "write_file", jsonArgs("path", "/work/a", "content", "x"), "Read Bash", "not allowed by the skill's allowed-tools"},
		{"read outside its pattern", "read_file", jsonArgs("path", "/etc/passwd"), "Read(/work/**)", "not allowed"},
		{"git pattern refuses rm", "bash", jsonArgs("command", "rm -rf /"), "Bash(git:*)", "permits only Bash(git:*)"},
		{"git pattern refuses chaining", "bash", jsonArgs("command", "git status; rm -rf /"), "Bash(git:*)", "one simple command"},
		{"git pattern refuses pipes", "bash", jsonArgs("command", "git log | sh"), "Bash(git:*)", "one simple command"},
		{"git pattern refuses substitution", "bash", jsonArgs("command", `git "$(rm -rf /)"`), "Bash(git:*)", "one simple command"},
		{"skills-only read", "read_file", jsonArgs("path", "/etc/passwd"), "Bash(git:*)", "may only read the SKILL.md files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := agenttest.NewScript(t,
				agenttest.ToolCalls(1, 1, call("bad", tt.tool, tt.args)),
				agenttest.Text("recovered", 1, 1))
			a, _ := newTestAgent(t, srv)
			sb := newSandbox()
			out, tr, err := a.Run(context.Background(), sb, Request{Input: "go", Catalog: testCatalog,
				AllowedTools: tt.allowed, WorkDir: "/work"})
			if err != nil {
				t.Fatal(err)
			}
			if out != "recovered" || tr.Turns != 2 {
				t.Errorf("output %q after %d turns: the loop should go on", out, tr.Turns)
			}
			if n := len(sb.recorded()); n != 0 {
				t.Errorf("the sandbox ran %d commands: %+v", n, sb.recorded())
			}
			got := toolMessages(srv.Requests()[1])["bad"]
			if !strings.HasPrefix(got, "error: ") || !strings.Contains(got, tt.wantErr) {
				t.Errorf("tool message = %q, want an error containing %q", got, tt.wantErr)
			}
			if len(tr.ToolCalls) != 1 || tr.ToolCalls[0].Error == "" || tr.ToolCalls[0].ExitCode != -1 ||
				tr.ToolCalls[0].Arguments != tt.args {
				t.Errorf("transcript = %+v", tr.ToolCalls)
			}
		})
	}
}

func TestRunAllowedToolsFilterTheOffer(t *testing.T) {
	tests := []struct {
		allowed string
		catalog []SkillRef
		want    []string
	}{
		{"", nil, []string{"bash", "read_file", "write_file"}},
		{"Read", nil, []string{"read_file"}},
		{"Read, Grep, Glob", nil, []string{"read_file"}},
		{"Bash(git:*) Edit", nil, []string{"bash", "write_file"}},
		{"Bash(git:*)", testCatalog, []string{"bash", "read_file"}}, // read_file for SKILL.md only
		{"Grep", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.allowed, func(t *testing.T) {
			srv := agenttest.NewScript(t, agenttest.Text("ok", 1, 1))
			a, _ := newTestAgent(t, srv)
			if _, _, err := a.Run(context.Background(), newSandbox(), Request{Input: "go", AllowedTools: tt.allowed, Catalog: tt.catalog}); err != nil {
				t.Fatal(err)
			}
			if got := toolNames(srv.Requests()[0]); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("tools = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRunBashPatternAllowsMatchingCommands(t *testing.T) {
	srv := agenttest.NewScript(t,
		agenttest.ToolCalls(1, 1, call("ok", "bash", jsonArgs("command", "git status")),
			call("no", "bash", jsonArgs("command", "rm -rf /"))),
		agenttest.ToolCalls(1, 1, call("skill", "read_file", jsonArgs("path", "/skills/env-selector/SKILL.md"))),
		agenttest.Text("clean", 1, 1))
	a, _ := newTestAgent(t, srv)
	sb := newSandbox()
	_, tr, err := a.Run(context.Background(), sb, Request{Input: "status?", AllowedTools: "Bash(git:*)", Catalog: testCatalog, WorkDir: "/work"})
	if err != nil {
		t.Fatal(err)
	}
	want := []execCall{
		{Cmd: []string{"bash", "-c", "git status"}, WorkDir: "/work"},
		{Cmd: []string{"cat", "--", "/skills/env-selector/SKILL.md"}, WorkDir: "/work"},
	}
	if got := sb.recorded(); !reflect.DeepEqual(got, want) {
		t.Errorf("sandbox calls = %+v, want %+v", got, want)
	}
	msgs := toolMessages(srv.Requests()[1])
	if !strings.Contains(msgs["ok"], "On branch main") || !strings.HasPrefix(msgs["no"], "error: command refused") {
		t.Errorf("tool messages = %q", msgs)
	}
	if !reflect.DeepEqual(tr.Activated, []string{"env-selector"}) {
		t.Errorf("activated = %v", tr.Activated)
	}
}

func TestRunActivationByCatAndRelativePath(t *testing.T) {
	srv := agenttest.NewScript(t,
		agenttest.ToolCalls(1, 1, call("a", "bash", jsonArgs("command", "cat /skills/env-selector/SKILL.md"))),
		agenttest.ToolCalls(1, 1, call("b", "read_file", jsonArgs("path", "SKILL.md"))),
		agenttest.ToolCalls(1, 1, call("c", "read_file", jsonArgs("path", "/skills/missing/SKILL.md"))),
		agenttest.Text("ok", 1, 1))
	a, _ := newTestAgent(t, srv)
	sb := newSandbox()
	sb.files["/skills/logging-standards/SKILL.md"] = "logging"
	catalog := append(testCatalog, SkillRef{Name: "missing", Description: "d", Location: "/skills/missing/SKILL.md"})
	_, tr, err := a.Run(context.Background(), sb, Request{Input: "go", Catalog: catalog, WorkDir: "/skills/logging-standards"})
	if err != nil {
		t.Fatal(err)
	}
	// The failed read of a missing SKILL.md activates nothing.
	if want := []string{"env-selector", "logging-standards"}; !reflect.DeepEqual(tr.Activated, want) {
		t.Errorf("activated = %v, want %v", tr.Activated, want)
	}
	// Each body entered the context of the turn after the call that read it.
	if want := []activation.Activation{{Skill: "env-selector", Turn: 2}, {Skill: "logging-standards", Turn: 3}}; !reflect.DeepEqual(tr.Activations, want) || !tr.ToolsSeen || !tr.ActivationsSeen {
		t.Errorf("activations %v, want %v; tools seen %v, activations seen %v", tr.Activations, want, tr.ToolsSeen, tr.ActivationsSeen)
	}
	if tr.ToolCalls[2].ExitCode != 1 || !strings.Contains(tr.ToolCalls[2].Error, "No such file") {
		t.Errorf("missing read = %+v", tr.ToolCalls[2])
	}
}

func TestRunCapsToolOutput(t *testing.T) {
	srv := agenttest.NewScript(t,
		agenttest.ToolCalls(1, 1, call("big", "bash", jsonArgs("command", "yes"))),
		agenttest.Text("ok", 1, 1))
	a, _ := newTestAgent(t, srv)
	sb := newSandbox()
	sb.commands["yes"] = ExecResult{Stdout: []byte(strings.Repeat("y\n", 5000)), Truncated: true}
	_, tr, err := a.Run(context.Background(), sb, Request{Input: "go", Limits: Limits{MaxToolOutput: 100}})
	if err != nil {
		t.Fatal(err)
	}
	got := toolMessages(srv.Requests()[1])["big"]
	if !strings.HasPrefix(got, "exit_code: 0\nstdout:\ny\ny\n") ||
		!strings.Contains(got, "\n[output truncated: 100 of 10021 bytes shown]") ||
		!strings.HasSuffix(got, "\n[output truncated by the sandbox]") || len(got) > 200 {
		t.Errorf("tool message (%d bytes) = %q", len(got), got)
	}
	if tr.ToolCalls[0].Output != got {
		t.Errorf("the transcript should record what the model saw")
	}
}

func TestRunLimits(t *testing.T) {
	loop := func(n int, _ agenttest.Request) agenttest.Reply {
		return agenttest.ToolCalls(40, 10, call("c", "bash", jsonArgs("command", "echo DEV")))
	}
	tests := []struct {
		name     string
		answer   func(int, agenttest.Request) agenttest.Reply
		limits   Limits
		ctx      func() (context.Context, context.CancelFunc)
		sb       func(*fakeSandbox)
		wantErr  error
		wantStop string
		wantRuns int // commands the sandbox ran
	}{
		{name: "turns", answer: loop, limits: Limits{MaxTurns: 3}, wantErr: ErrTurnLimit, wantStop: "turns", wantRuns: 2},
		{name: "tokens", answer: loop, limits: Limits{MaxTokens: 120}, wantErr: ErrTokenLimit, wantStop: "tokens", wantRuns: 2},
		{name: "wall time", answer: func(n int, r agenttest.Request) agenttest.Reply {
			if n == 0 {
				return loop(n, r)
			}
			return agenttest.Reply{Block: true}
		}, limits: Limits{WallTime: 30 * time.Millisecond}, wantErr: ErrTimeLimit, wantStop: "time", wantRuns: 1},
		{name: "caller's deadline", answer: func(int, agenttest.Request) agenttest.Reply { return agenttest.Reply{Block: true} },
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 30*time.Millisecond)
			}, wantErr: context.DeadlineExceeded, wantStop: "time"},
		{name: "sandbox timed out", answer: loop, sb: func(f *fakeSandbox) {
			f.commands["echo DEV"] = ExecResult{ExitCode: -1, TimedOut: true}
		}, wantErr: ErrTimeLimit, wantStop: "time", wantRuns: 1},
		{name: "sandbox failed", answer: loop, sb: func(f *fakeSandbox) { f.err = errors.New("container gone") },
			wantErr: nil, wantStop: "error", wantRuns: 1},
		{name: "empty answer", answer: func(int, agenttest.Request) agenttest.Reply { return agenttest.Text("  \n", 1, 1) },
			wantErr: ErrEmptyOutput, wantStop: "error"},
		{name: "endpoint down", answer: func(int, agenttest.Request) agenttest.Reply { return agenttest.Fail(http.StatusUnauthorized) },
			wantStop: "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := agenttest.NewFunc(t, tt.answer)
			a, _ := newTestAgent(t, srv)
			sb := newSandbox()
			if tt.sb != nil {
				tt.sb(sb)
			}
			ctx := context.Background()
			if tt.ctx != nil {
				var cancel context.CancelFunc
				ctx, cancel = tt.ctx()
				defer cancel()
			}
			out, tr, err := a.Run(ctx, sb, Request{Input: "loop", Limits: tt.limits})
			if err == nil {
				t.Fatalf("no error; output %q", out)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.name == "caller's deadline" && !errors.Is(err, ErrTimeLimit) {
				t.Errorf("err = %v, want also ErrTimeLimit", err)
			}
			if out != "" {
				t.Errorf("output %q on error, want none", out)
			}
			if tr.Stop != tt.wantStop {
				t.Errorf("stop = %q, want %q (err %v)", tr.Stop, tt.wantStop, err)
			}
			if got := len(sb.recorded()); got != tt.wantRuns {
				t.Errorf("sandbox ran %d commands, want %d", got, tt.wantRuns)
			}
		})
	}
}

func TestRunWithoutSkillsHasNoCatalog(t *testing.T) {
	srv := agenttest.NewScript(t, agenttest.Text("ok", 1, 1))
	a, _ := newTestAgent(t, srv)
	if _, _, err := a.Run(context.Background(), newSandbox(), Request{Input: "hi"}); err != nil {
		t.Fatal(err)
	}
	sys := systemText(srv.Requests()[0])
	if strings.Contains(sys, "available_skills") || strings.Contains(sys, "SKILL.md") {
		t.Errorf("system prompt mentions skills without a catalog:\n%s", sys)
	}
	msgs := srv.Requests()[0].Messages()
	if len(msgs) != 2 || msgs[1]["role"] != "user" || msgs[1]["content"] != "hi" {
		t.Errorf("messages = %v", msgs)
	}
}

func TestParseAllowedTools(t *testing.T) {
	tests := []struct {
		field             string
		bash, read, write bool
		bashAll           bool
		rules             int
		ignored           int
		wantErr           bool
	}{
		{field: "", bash: true, read: true, write: true, bashAll: true},
		{field: "Bash Read Write", bash: true, read: true, write: true, bashAll: true},
		{field: "bash,read_file", bash: true, read: true, bashAll: true},
		{field: "Bash(git:*) Bash(npm run test:*)", bash: true, rules: 2},
		{field: "Bash(git status *)", bash: true, rules: 1},
		{field: "Bash(*)", bash: true, bashAll: true},
		{field: "Edit MultiEdit", write: true},
		{field: "WebFetch mcp__github__x", ignored: 2},
		{field: "Bash(git:*", wantErr: true},
		{field: "Bash(git; rm:*)", wantErr: true},
	}
	for _, tt := range tests {
		p, err := parseAllowedTools(tt.field)
		if (err != nil) != tt.wantErr {
			t.Errorf("%q: err = %v", tt.field, err)
			continue
		}
		if tt.wantErr {
			continue
		}
		if p.bash != tt.bash || p.read != tt.read || p.write != tt.write || p.bashAll != tt.bashAll ||
			len(p.bashRules) != tt.rules || len(p.ignored) != tt.ignored {
			t.Errorf("%q: policy = %+v", tt.field, p)
		}
	}
}

func TestBashPatterns(t *testing.T) {
	tests := []struct {
		allowed, command string
		ok               bool
	}{
		{"Bash(git:*)", "git status", true},
		{"Bash(git:*)", "git", true},
		{"Bash(git:*)", `git commit -m "fix: a b"`, true},
		{"Bash(git:*)", "gitk", false},
		{"Bash(git:*)", "rm -rf /", false},
		{"Bash(git:*)", "git status && rm -rf /", false},
		{"Bash(git:*)", "git status\nrm -rf /", false},
		{"Bash(git:*)", "git log > /etc/x", false},
		{"Bash(git:*)", "git `id`", false},
		{"Bash(git:*)", `git "\$HOME"`, true},
		{"Bash(git:*)", "FOO=1 git status", false},
		{"Bash(git status:*)", "git status --short", true},
		{"Bash(git status:*)", "git push", false},
		{"Bash(npm test)", "npm test", true},
		{"Bash(npm test)", "npm test --watch", false},
		{"Bash(git:*) Bash(ls:*)", "ls -la", true},
		{"Bash(git:*) Bash", "rm -rf /tmp/x; echo", true},
	}
	for _, tt := range tests {
		p, err := parseAllowedTools(tt.allowed)
		if err != nil {
			t.Fatalf("%q: %v", tt.allowed, err)
		}
		if ok, why := p.allowsBash(tt.command); ok != tt.ok {
			t.Errorf("%s allows %q = %v (%s), want %v", tt.allowed, tt.command, ok, why, tt.ok)
		}
	}
}

// TestRunActivationByContent: with the skills' bodies known, a skill is activated by its body
// reaching the model whatever command showed it (here sed, which no path rule knows), at the
// turn that shows it; a read of a body-less skill's SKILL.md still counts by path; a command
// that prints only the frontmatter activates nothing.
func TestRunActivationByContent(t *testing.T) {
	srv := agenttest.NewScript(t,
		agenttest.ToolCalls(1, 1, call("a", "bash", jsonArgs("command", "sed -n 1,4p /skills/release-notes/SKILL.md"))),
		agenttest.ToolCalls(1, 1, call("b", "bash", jsonArgs("command", "sed -n 1,40p /skills/release-notes/SKILL.md"))),
		agenttest.ToolCalls(1, 1, call("c", "read_file", jsonArgs("path", "/skills/env-selector/SKILL.md"))),
		agenttest.Text("ok", 1, 1))
	a, _ := newTestAgent(t, srv)
	sb := newSandbox()
	file := "---\nname: release-notes\ndescription: Writes release notes.\n---\n" + fixtureBody
	sb.commands["sed -n 1,4p /skills/release-notes/SKILL.md"] = ExecResult{Stdout: []byte("---\nname: release-notes\ndescription: Writes release notes.\n---\n")}
	sb.commands["sed -n 1,40p /skills/release-notes/SKILL.md"] = ExecResult{Stdout: []byte(file)}
	catalog := append(testCatalog, SkillRef{Name: "release-notes", Description: "Writes release notes.", Location: "/skills/release-notes/SKILL.md"})
	det := activation.New([]activation.Skill{
		{Name: "release-notes", Body: fixtureBody},
		{Name: "env-selector", Body: activation.BodyOf(envSkill)}, // one short line: no fingerprint
	})
	_, tr, err := a.Run(context.Background(), sb, Request{Input: "go", Catalog: catalog, Skills: det})
	if err != nil {
		t.Fatal(err)
	}
	want := []activation.Activation{{Skill: "release-notes", Turn: 3}, {Skill: "env-selector", Turn: 4}}
	if !reflect.DeepEqual(tr.Activations, want) || !reflect.DeepEqual(tr.Activated, []string{"release-notes", "env-selector"}) {
		t.Errorf("activations = %v (%v), want %v", tr.Activations, tr.Activated, want)
	}
}

// TestRunRecordsATIFTrajectory: the trajectory holds the system prompt, the input, each turn
// with its calls (arguments as written, a malformed one kept raw), what each call returned as
// the model saw it, and the tokens of each turn; it validates, on success and on a limit.
func TestRunRecordsATIFTrajectory(t *testing.T) {
	srv := agenttest.NewScript(t,
		agenttest.ToolCalls(10, 2, call("a", "bash", jsonArgs("command", "echo DEV")), call("", "bash", `{"command":`)),
		agenttest.Text("DEV it is", 20, 3))
	a, _ := newTestAgent(t, srv)
	out, tr, err := a.Run(context.Background(), newSandbox(), Request{Input: "which env?", Catalog: testCatalog})
	if err != nil || out != "DEV it is" {
		t.Fatalf("Run = %q, %v", out, err)
	}
	traj := tr.Trajectory
	if err := traj.Validate(); err != nil {
		t.Fatalf("invalid trajectory: %v", err)
	}
	if len(traj.Steps) != 4 || traj.Steps[0].Source != atif.SourceSystem || traj.Steps[1].Message != "which env?" {
		t.Fatalf("steps %+v", traj.Steps)
	}
	turn := traj.Steps[2]
	if len(turn.ToolCalls) != 2 || string(turn.ToolCalls[0].Arguments) != `{"command":"echo DEV"}` ||
		string(turn.ToolCalls[1].Arguments) != `{"_raw":"{\"command\":"}` || turn.ToolCalls[1].ToolCallID != "turn1-call2" {
		t.Errorf("tool calls %+v", turn.ToolCalls)
	}
	sent := toolMessages(srv.Requests()[1])
	if r := turn.Observation.Results; len(r) != 2 || r[0].SourceCallID != "a" || r[0].Content != sent["a"] {
		t.Errorf("results %+v, want what the model was sent: %q", r, sent["a"])
	}
	if m := turn.Metrics; m.PromptTokens != 10 || m.CompletionTokens != 2 {
		t.Errorf("turn metrics %+v", m)
	}
	if last := traj.Steps[3]; last.Message != "DEV it is" || last.Source != atif.SourceAgent {
		t.Errorf("last step %+v", last)
	}
	if fm := traj.FinalMetrics; fm == nil || fm.TotalPromptTokens != 30 || fm.TotalCompletionTokens != 5 || fm.TotalSteps != 4 {
		t.Errorf("final metrics %+v", fm)
	}

	// A run that ends on its turn limit keeps what it did.
	loop := agenttest.NewFunc(t, func(int, agenttest.Request) agenttest.Reply {
		return agenttest.ToolCalls(1, 1, call("c", "bash", jsonArgs("command", "echo DEV")))
	})
	a, _ = newTestAgent(t, loop)
	_, tr, err = a.Run(context.Background(), newSandbox(), Request{Input: "go", Limits: Limits{MaxTurns: 2}})
	if !errors.Is(err, ErrTurnLimit) || tr.Trajectory == nil || len(tr.Trajectory.Steps) != 4 || tr.Trajectory.Validate() != nil {
		t.Errorf("after the turn limit: err %v, trajectory %+v", err, tr.Trajectory)
	}
}

// fixtureBody is a skill body long enough to fingerprint.
const fixtureBody = `# Release notes

Collect every merged pull request since the last tag with git log.
Group the entries under Added, Changed and Fixed, newest first.
Write the result to CHANGELOG.md above the previous release's section.
`

// An answer the provider cut at its max output is marked on its step and counted on the
// trajectory, as the model gateway marks a CLI's.
func TestRunMarksAnAnswerCutAtItsMaxOutput(t *testing.T) {
	cut := agenttest.Reply{Status: http.StatusOK, Header: map[string]string{"Content-Type": "application/json"},
		Body: `{"id":"c","object":"chat.completion","model":"test-model","choices":[{"index":0,"message":{"role":"assistant","content":"part of it"},"finish_reason":"length"}],"usage":{"prompt_tokens":10,"completion_tokens":50,"total_tokens":60}}`}
	a, _ := newTestAgent(t, agenttest.NewScript(t, cut))
	out, tr, err := a.Run(context.Background(), newSandbox(), Request{Input: "write it"})
	if err != nil || out != "part of it" {
		t.Fatalf("Run = %q, %v", out, err)
	}
	last := tr.Trajectory.Steps[len(tr.Trajectory.Steps)-1]
	if last.Extra[atif.ExtraMaxOutputReached] != int64(50) || tr.Trajectory.Extra[atif.ExtraMaxOutputAnswers] != 1 {
		t.Errorf("step extra %v, trajectory extra %v; want the answer marked cut at 50 tokens, one such answer", last.Extra, tr.Trajectory.Extra)
	}
}
