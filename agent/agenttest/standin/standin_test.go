package standin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/agent/agenttest"
	"github.com/skillfleet/skillfleet/agent/agenttest/standin"
)

func TestFrontmatter(t *testing.T) {
	tests := []struct {
		name, doc string
		want      map[string]string
	}{
		{"plain", "---\nname: notes\ndescription: Writes notes.\n---\n# Body\nname: not this\n",
			map[string]string{"name": "notes", "description": "Writes notes."}},
		{"quoted", "---\nname: \"notes\"\ndescription: 'Writes: notes, \"fast\"'\n---\n",
			map[string]string{"name": "notes", "description": `Writes: notes, "fast"`}},
		{"folded block", "---\nname: notes\ndescription: >\n  Writes release\n  notes.\nlicense: MIT\n---\n",
			map[string]string{"name": "notes", "description": "Writes release notes.", "license": "MIT"}},
		{"nested map skipped", "---\nmetadata:\n  name: inner\nname: outer\n---\n",
			map[string]string{"metadata": "", "name": "outer"}},
		{"no frontmatter", "# notes\nname: x\n", map[string]string{}},
		{"crlf", "---\r\nname: notes\r\ndescription: d\r\n---\r\n", map[string]string{"name": "notes", "description": "d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := standin.Frontmatter(tt.doc); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func writeSkill(t *testing.T, dir, name, frontmatter, body string) string {
	t.Helper()
	p := filepath.Join(dir, name, "SKILL.md")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("---\n"+frontmatter+"---\n"+body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadSkills(t *testing.T) {
	project, user := t.TempDir(), t.TempDir()
	a := writeSkill(t, project, "a", "name: alpha\ndescription: project alpha\n", "")
	writeSkill(t, user, "a2", "name: alpha\ndescription: user alpha, shadowed\n", "")
	b := writeSkill(t, user, "b", "description: no name\n", "")
	if err := os.MkdirAll(filepath.Join(user, "no-skill-md"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := standin.LoadSkills([]string{project, filepath.Join(project, "missing"), user})
	if err != nil {
		t.Fatal(err)
	}
	want := []standin.Skill{{Name: "alpha", Description: "project alpha", Path: a}, {Name: "b", Description: "no name", Path: b}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	prompt := standin.SystemPrompt(got)
	if !strings.Contains(prompt, "- alpha: project alpha ("+a+")\n") {
		t.Errorf("catalog line missing from %q", prompt)
	}
}

func TestRunTool(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, tool, args string
		want             string
		file, content    string // a file the call must leave
	}{
		{"bash ok", "bash", `{"command":"echo hi"}`, "exit_code: 0\nstdout:\nhi\n", "", ""},
		{"bash fails with stderr", "bash", `{"command":"echo out; echo err >&2; exit 3"}`,
			"exit_code: 3\nstdout:\nout\n\nstderr:\nerr\n", "", ""},
		{"bash runs in the directory", "bash", `{"command":"pwd"}`, "exit_code: 0\nstdout:\n" + dir + "\n", "", ""},
		{"write_file", "write_file", `{"path":"sub/f.txt","content":"héllo"}`, "wrote 6 bytes to sub/f.txt", "sub/f.txt", "héllo"},
		{"unknown tool", "rm", `{}`, "error: unknown tool rm", "", ""},
		{"bad arguments", "bash", `{"command":`, "error: arguments of bash: unexpected end of JSON input", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := standin.RunTool(t.Context(), dir, tt.tool, []byte(tt.args)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if tt.file != "" {
				b, err := os.ReadFile(filepath.Join(dir, tt.file))
				if err != nil || string(b) != tt.content {
					t.Errorf("file %s: %q, %v", tt.file, b, err)
				}
			}
		})
	}
}

// standIn is one way to run a stand-in against a server.
type standIn struct {
	label    string // names the subtests
	name     string // what standin.Build builds
	flags    []string
	protocol string // what the server must see
	skills   string // the skills directory, in the working directory and in $HOME
	env      func(srv *agenttest.Server) []string
	authed   func(h http.Header) bool
}

func standIns() []standIn {
	anthropicEnv := func(srv *agenttest.Server) []string {
		return []string{"ANTHROPIC_BASE_URL=" + srv.URL, "ANTHROPIC_API_KEY=key-1"}
	}
	openAIEnv := func(srv *agenttest.Server) []string {
		return []string{"OPENAI_BASE_URL=" + srv.BaseURL(), "CODEX_API_KEY=key-1"}
	}
	return []standIn{
		{"anthropic-api-key", "anthropic", nil, agenttest.ProtocolAnthropic, ".claude/skills", anthropicEnv,
			func(h http.Header) bool { return h.Get("X-Api-Key") == "key-1" && h.Get("Anthropic-Version") != "" }},
		{"anthropic-auth-token", "anthropic", nil, agenttest.ProtocolAnthropic, ".claude/skills",
			func(srv *agenttest.Server) []string {
				return []string{"ANTHROPIC_BASE_URL=" + srv.URL, "ANTHROPIC_AUTH_TOKEN=key-1"}
			},
			func(h http.Header) bool { return h.Get("Authorization") == "Bearer key-1" && h.Get("X-Api-Key") == "" }},
		{"gemini", "gemini", nil, agenttest.ProtocolGemini, ".gemini/skills",
			func(srv *agenttest.Server) []string {
				return []string{"GOOGLE_GEMINI_BASE_URL=" + srv.URL, "GEMINI_API_KEY=key-1"}
			},
			func(h http.Header) bool { return h.Get("X-Goog-Api-Key") == "key-1" }},
		{"openai-responses", "openai", nil, agenttest.ProtocolResponses, ".agents/skills", openAIEnv,
			func(h http.Header) bool { return h.Get("Authorization") == "Bearer key-1" }},
		{"openai-chat", "openai", []string{"-chat"}, agenttest.ProtocolChat, ".agents/skills",
			func(srv *agenttest.Server) []string {
				return []string{"OPENAI_BASE_URL=" + srv.BaseURL(), "OPENAI_API_KEY=key-1"}
			},
			func(h http.Header) bool { return h.Get("Authorization") == "Bearer key-1" }},
	}
}

// sandbox is a working directory and home for one run, with a skill in each place a
// stand-in might look.
type sandbox struct {
	wd, home, shared string
	skill            string // path of the project skill "release-notes"
}

func newSandbox(t *testing.T, s standIn) sandbox {
	root := t.TempDir()
	sb := sandbox{wd: filepath.Join(root, "work"), home: filepath.Join(root, "home"), shared: filepath.Join(root, "shared")}
	sb.skill = writeSkill(t, filepath.Join(sb.wd, s.skills), "release-notes",
		"name: release-notes\ndescription: Writes release notes from the changelog.\n", "SKILL-BODY-42: write NOTES.md\n")
	writeSkill(t, filepath.Join(sb.home, s.skills), "user-skill", "name: user-skill\ndescription: From home.\n", "")
	writeSkill(t, sb.shared, "shared-skill", "name: shared-skill\ndescription: From SKILLS_DIR.\n", "")
	// Another CLI's skills must not be read.
	writeSkill(t, filepath.Join(sb.wd, ".other/skills"), "foreign", "name: foreign\ndescription: Not mine.\n", "")
	return sb
}

// run runs a built stand-in in sb against srv and returns its exit code, stdout and stderr.
func run(t *testing.T, bin string, s standIn, sb sandbox, srv *agenttest.Server, stdin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, append(append([]string{}, s.flags...), args...)...)
	cmd.Dir = sb.wd
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + sb.home, "SKILLS_DIR=" + sb.shared}, s.env(srv)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	case err != nil:
		t.Fatalf("running %s: %v", bin, err)
	}
	return 0, stdout.String(), stderr.String()
}

var catalogLine = regexp.MustCompile(`(?m)^- release-notes: Writes release notes from the changelog\. \((.+)\)$`)

const notes = "# Notes 2.0\n\n- Added the fleet view ✓\n"

// twoTurns is the scripted model: it reads the skill whose path the catalog gives, writes
// NOTES.md, then answers once it has both results.
func twoTurns(_ int, c agenttest.Conv) (agenttest.Turn, *agenttest.Reply) {
	usage := agenttest.Tokens{Prompt: 200, Completion: 20}
	switch len(c.ToolResults) {
	case 0:
		m := catalogLine.FindStringSubmatch(c.System)
		if m == nil {
			return agenttest.Turn{}, agenttest.FailFor(c, http.StatusBadRequest)
		}
		read, _ := json.Marshal(map[string]string{"command": "cat '" + m[1] + "'"})
		write, _ := json.Marshal(map[string]string{"path": "out/NOTES.md", "content": notes})
		return agenttest.Turn{Thinking: "Read the skill first.", Text: "Reading the skill.", Usage: usage, Calls: []agenttest.Call{
			{Name: "bash", Arguments: string(read)}, {Name: "write_file", Arguments: string(write)}}}, nil
	case 2:
		return agenttest.Turn{Text: "FINAL: notes written", Usage: usage}, nil
	}
	return agenttest.Turn{}, agenttest.FailFor(c, http.StatusBadRequest)
}

func TestStandInsRunAToolUsingConversation(t *testing.T) {
	bins := map[string]string{}
	for _, name := range standin.Names() {
		bins[name] = standin.Build(t, name)
	}
	for _, s := range standIns() {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", s.label, stream), func(t *testing.T) {
				sb := newSandbox(t, s)
				srv := agenttest.NewAny(t, agenttest.Scripted(twoTurns))
				args := []string{"Write the release notes."}
				stdin := ""
				if stream {
					args = []string{"-stream"}
					stdin = "Write the release notes." // the prompt from stdin, when there is no argument
				}
				code, stdout, stderr := run(t, bins[s.name], s, sb, srv, stdin, args...)
				if code != 0 || stdout != "FINAL: notes written\n" {
					t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
				}
				if b, err := os.ReadFile(filepath.Join(sb.wd, "out/NOTES.md")); err != nil || string(b) != notes {
					t.Errorf("NOTES.md: %q, %v", b, err)
				}
				reqs := srv.Requests()
				if len(reqs) != 2 {
					t.Fatalf("%d requests, want 2", len(reqs))
				}
				for i, r := range reqs {
					c := agenttest.ParseConv(r)
					if c.Protocol != s.protocol || c.Stream != stream || c.Input != "Write the release notes." {
						t.Errorf("request %d: protocol %q stream %v input %q", i, c.Protocol, c.Stream, c.Input)
					}
					if !s.authed(r.Header) {
						t.Errorf("request %d: credentials not where the real CLI puts them: %v", i, r.Header)
					}
					if !reflect.DeepEqual(c.Tools, []string{"bash", "write_file"}) {
						t.Errorf("request %d: tools %v", i, c.Tools)
					}
					if m := catalogLine.FindStringSubmatch(c.System); m == nil || m[1] != sb.skill {
						t.Errorf("request %d: no catalog line for %s in system prompt %q", i, sb.skill, c.System)
					}
					for _, want := range []string{"- user-skill: From home. (", "- shared-skill: From SKILLS_DIR. ("} {
						if !strings.Contains(c.System, want) {
							t.Errorf("request %d: system prompt lacks %q", i, want)
						}
					}
					if strings.Contains(c.System, "foreign") {
						t.Errorf("request %d: another CLI's skill is in the catalog", i)
					}
				}
				final := agenttest.ParseConv(reqs[1])
				wantResults := []string{"exit_code: 0\nstdout:\n---\nname: release-notes\ndescription: Writes release notes from the changelog.\n---\nSKILL-BODY-42: write NOTES.md\n",
					fmt.Sprintf("wrote %d bytes to out/NOTES.md", len(notes))}
				if !reflect.DeepEqual(final.ToolResults, wantResults) {
					t.Errorf("tool results %q, want %q", final.ToolResults, wantResults)
				}
			})
		}
	}
}

func TestStandInsFail(t *testing.T) {
	bins := map[string]string{}
	for _, name := range standin.Names() {
		bins[name] = standin.Build(t, name)
	}
	tests := []struct {
		name      string
		script    agenttest.Script
		wantCode  int
		wantErr   string // in stderr
		wantCount int    // requests the server answered
	}{
		{"refusal", func(int, agenttest.Conv) (agenttest.Turn, *agenttest.Reply) {
			return agenttest.Turn{Refusal: true}, nil
		}, standin.ExitRefused, "refused", 1},
		{"bad request is not retried", func(_ int, c agenttest.Conv) (agenttest.Turn, *agenttest.Reply) {
			return agenttest.Turn{}, agenttest.FailFor(c, http.StatusBadRequest)
		}, 1, "400", 1},
		{"rate limited once, then answered", func(n int, c agenttest.Conv) (agenttest.Turn, *agenttest.Reply) {
			if n == 0 {
				status := http.StatusTooManyRequests
				if c.Protocol == agenttest.ProtocolAnthropic {
					status = agenttest.StatusOverloaded
				}
				return agenttest.Turn{}, agenttest.FailFor(c, status, "retry-after-ms", "10")
			}
			return agenttest.Turn{Text: "ok after retry"}, nil
		}, 0, "", 2},
		{"no answer within the turn limit", func(int, agenttest.Conv) (agenttest.Turn, *agenttest.Reply) {
			return agenttest.Turn{Calls: []agenttest.Call{{Name: "bash", Arguments: `{"command":"true"}`}}}, nil
		}, 1, "no answer after 8 turns", standin.MaxTurns},
	}
	for _, s := range standIns() {
		for _, tt := range tests {
			t.Run(s.label+"/"+tt.name, func(t *testing.T) {
				sb := newSandbox(t, s)
				srv := agenttest.NewAny(t, agenttest.Scripted(tt.script))
				code, stdout, stderr := run(t, bins[s.name], s, sb, srv, "", "-stream", "do it")
				if code != tt.wantCode || !strings.Contains(stderr, tt.wantErr) {
					t.Errorf("exit %d stderr %q, want %d with %q", code, stderr, tt.wantCode, tt.wantErr)
				}
				if code == 0 && stdout != "ok after retry\n" {
					t.Errorf("stdout %q", stdout)
				}
				if srv.Count() != tt.wantCount {
					t.Errorf("%d requests, want %d", srv.Count(), tt.wantCount)
				}
			})
		}
	}
}

func TestStandInsNeedTheirEnvironment(t *testing.T) {
	for _, name := range standin.Names() {
		t.Run(name, func(t *testing.T) {
			bin := standin.Build(t, name)
			cmd := exec.CommandContext(context.Background(), bin, "hello")
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "BASE_URL") {
				t.Errorf("without an endpoint: %v, %q", err, out)
			}
		})
	}
}
