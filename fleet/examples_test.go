package fleet

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/config"
)

// argvSandbox records the argv of each Exec and answers as a CLI that printed "ok".
type argvSandbox struct{ calls [][]string }

func (s *argvSandbox) Exec(_ context.Context, cmd []string, _ []byte, _ string, _ time.Duration) (agent.ExecResult, error) {
	s.calls = append(s.calls, slices.Clone(cmd))
	return agent.ExecResult{Stdout: []byte("ok\n")}, nil
}

// TestExampleAgentsLoadAndRender: every command agent of examples/agents.yaml loads, gets a
// gateway of its api, and renders its placeholders: the job's token, the gateway's URLs with
// and without the version path, the prompt as one argv element, the skills placed where the
// CLI's loader looks. No placeholder is left, and no key is in the argv.
func TestExampleAgentsLoadAndRender(t *testing.T) {
	cfg, _, diags := config.Load(filepath.Join("..", "examples", "agents.yaml"))
	if diags.HasErrors() {
		t.Fatalf("examples/agents.yaml: %v", diags)
	}
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-EXAMPLE-never-in-argv")
	t.Setenv("OPENAI_API_KEY", "sk-EXAMPLE-never-in-argv")
	t.Setenv("GEMINI_API_KEY", "gm-EXAMPLE-never-in-argv")
	models, err := BuildModels(ModelsConfig{GatewayDir: filepath.Join(t.TempDir(), "gw")}, cfg, nil, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = models.Close() })
	want := map[string]struct{ api, skillsDir, urlVar string }{
		"claude-code": {"anthropic", "/work/.claude/skills", "ANTHROPIC_BASE_URL=http://127.0.0.1:8765"},
		"codex":       {"openai", "/work/.agents/skills", `model_providers.skillfleet.base_url="http://127.0.0.1:8765/v1"`},
		"gemini-cli":  {"gemini", "/work/.gemini/skills", "GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:8765"},
		"opencode":    {"openai", "/work/.opencode/skills", "SKILLFLEET_BASE_URL=http://127.0.0.1:8765/v1"},
	}
	if got := slices.Sorted(slices.Values(models.Names)); !slices.Equal(got, []string{"claude-code", "codex", "gemini-cli", "opencode"}) {
		t.Fatalf("agents %v", got)
	}
	const prompt = "-rf {{token}} review the diff; $(id)"
	for _, a := range cfg.Agents {
		t.Run(a.Name, func(t *testing.T) {
			w := want[a.Name]
			if a.APIOf() != w.api || a.SkillsDir != w.skillsDir {
				t.Errorf("api %q skills_dir %q, want %q %q", a.APIOf(), a.SkillsDir, w.api, w.skillsDir)
			}
			sb := &argvSandbox{}
			out, _, err := models.Agents[a.Name].Agent.Run(context.Background(), sb, agent.Request{
				Input: prompt, WorkDir: "/work",
				Catalog: []agent.SkillRef{{Name: "release-notes", Location: "/skills/release-notes/SKILL.md"}},
			})
			if err != nil || out != "ok" {
				t.Fatalf("Run = %q, %v", out, err)
			}
			if len(sb.calls) != 2 {
				t.Fatalf("%d execs, want the skills placed, then the CLI: %q", len(sb.calls), sb.calls)
			}
			place, run := sb.calls[0], sb.calls[1]
			if !slices.Contains(place, w.skillsDir) || !slices.Contains(place, "/skills/release-notes") {
				t.Errorf("skills placed with %q, want them copied to %s", place, w.skillsDir)
			}
			// The prompt keeps its literal "{{token}}": placeholders are replaced in one pass.
			rest := slices.DeleteFunc(slices.Clone(run), func(e string) bool { return strings.HasSuffix(e, prompt) })
			joined := strings.Join(rest, "\x00")
			if strings.Contains(joined, "{{") || len(rest) != len(run)-1 {
				t.Errorf("argv %q: a placeholder is left, or the prompt is not one element", run)
			}
			if !strings.Contains(joined, w.urlVar) {
				t.Errorf("argv %q lacks %s", run, w.urlVar)
			}
			if strings.Contains(joined, "EXAMPLE-never-in-argv") {
				t.Errorf("a real key reached the sandbox's argv: %q", run)
			}
			// The token is the session's: 64 hex characters after the variable that carries it.
			var token string
			for _, e := range run {
				for _, v := range []string{"ANTHROPIC_API_KEY=", "CODEX_API_KEY=", "GEMINI_API_KEY=", "SKILLFLEET_TOKEN="} {
					if s, ok := strings.CutPrefix(e, v); ok {
						token = s
					}
				}
			}
			if len(token) != 64 {
				t.Errorf("argv %q: no 64-character gateway token in the key variable", run)
			}
			// The forwarder carries the CLI to the job's own socket in the mounted directory.
			if i := slices.Index(run, "python3"); i < 0 || !strings.HasPrefix(run[i+3], GatewayMount+"/job-") {
				t.Errorf("argv %q: the forwarder does not name the job's socket under %s", run, GatewayMount)
			}
		})
	}
}
