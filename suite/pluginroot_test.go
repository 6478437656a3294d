package suite

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/skillfleet/skillfleet/skill"
)

// TestPluginSuites reads `claude plugin eval` suites where Claude Code keeps them: evals/ at the
// root of the plugin, beside plugin.json, .claude-plugin/plugin.json or a skills-directory
// plugin's skills/, with the grader mapping and refusals of a skill's own evals/.
func TestPluginSuites(t *testing.T) {
	const regex = "---\ntype: regex\ntarget: last_message\npattern: 'hello'\n---\n"
	tests := []struct {
		name   string
		skills []string          // skill directories
		files  map[string]string // other files
		root   string            // given to Load; default "p"
		cases  []string          // skill/case@file
		errors []string          // rule@file:line
	}{
		{
			name:   "beside .claude-plugin/plugin.json",
			skills: []string{"p/skills/one"},
			files:  map[string]string{"p/.claude-plugin/plugin.json": "{}", "p/evals/greets/prompt.md": "Say hello.\n", "p/evals/greets/graders/reply.md": regex},
			cases:  []string{"one/greets@p/evals/greets/prompt.md"},
		},
		{
			name:   "beside plugin.json",
			skills: []string{"p/skills/one"},
			files:  map[string]string{"p/plugin.json": "{}", "p/evals/greets/prompt.md": "Say hello.\n", "p/evals/greets/graders/reply.md": regex},
			cases:  []string{"one/greets@p/evals/greets/prompt.md"},
		},
		{
			name:   "a skills-directory plugin, given from above",
			skills: []string{"repo/p/skills/one"},
			files:  map[string]string{"repo/p/evals/greets/prompt.md": "Say hello.\n", "repo/p/evals/greets/graders/reply.md": regex},
			root:   "repo",
			cases:  []string{"one/greets@repo/p/evals/greets/prompt.md"},
		},
		{
			name:   "an unknown grader type is an error with file and line",
			skills: []string{"p/skills/one"},
			files:  map[string]string{"p/plugin.json": "{}", "p/evals/greets/prompt.md": "Say hello.\n", "p/evals/greets/graders/reply.md": "---\ntype: vibes\n---\n"},
			errors: []string{"plugineval.type@p/evals/greets/graders/reply.md:2"},
		},
		{
			name:   "a plugin of several skills is refused, not run against one",
			skills: []string{"p/skills/one", "p/skills/two"},
			files:  map[string]string{"p/plugin.json": "{}", "p/evals/greets/prompt.md": "Say hello.\n", "p/evals/greets/graders/reply.md": regex},
			errors: []string{"plugineval.unsupported@p/evals:0"},
		},
		{
			name:   "a case named like the skill's own is a duplicate",
			skills: []string{"p/skills/one"},
			files: map[string]string{
				"p/plugin.json": "{}", "p/evals/greets/prompt.md": "Say hello.\n", "p/evals/greets/graders/reply.md": regex,
				"p/skills/one/evals/greets/prompt.md": "Say hello.\n", "p/skills/one/evals/greets/graders/reply.md": regex,
			},
			cases:  []string{"one/greets@p/skills/one/evals/greets/prompt.md"},
			errors: []string{"case.duplicateName@p/evals/greets/prompt.md:1"},
		},
		{
			name:   "evals/ without a plugin root above the skill is not a plugin suite",
			skills: []string{"p/tools/one"},
			files:  map[string]string{"p/evals/greets/prompt.md": "Say hello.\n", "p/evals/greets/graders/reply.md": regex},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			write := func(rel, content string) {
				p := filepath.Join(tmp, filepath.FromSlash(rel))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, d := range tt.skills {
				name := filepath.Base(d)
				write(d+"/"+skill.FileName, "---\nname: "+name+"\ndescription: Does "+name+" things. Use when asked.\n---\nbody\n")
			}
			for rel, content := range tt.files {
				write(rel, content)
			}
			root := tt.root
			if root == "" {
				root = "p"
			}
			s := Load([]string{filepath.Join(tmp, root)}, skill.Options{})
			var cases []string
			for _, c := range s.Cases {
				rel, _ := filepath.Rel(tmp, c.File)
				cases = append(cases, c.Skill.Name+"/"+c.Name+"@"+filepath.ToSlash(rel))
			}
			if !slices.Equal(cases, tt.cases) {
				t.Errorf("cases %q, want %q", cases, tt.cases)
			}
			var errs []string
			for _, d := range s.Diagnostics {
				if d.Severity == "error" {
					rel, _ := filepath.Rel(tmp, d.File)
					errs = append(errs, d.Rule+"@"+filepath.ToSlash(rel)+":"+strconv.Itoa(d.Line))
				}
			}
			if !slices.Equal(errs, tt.errors) {
				t.Errorf("errors %q, want %q\n%v", errs, tt.errors, s.Diagnostics)
			}
		})
	}
}
