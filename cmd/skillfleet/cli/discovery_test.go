package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/skill"
)

// TestEverySkillUnderAPath gives validate, lint and deps a skill directory with skills below
// it, a sub-skill directory, a SKILL.md linked from outside its skill and a directory without
// skills: every skill below the path is listed, and nothing is a green over nothing. The JSON
// document's valid always says what the exit status says.
func TestEverySkillUnderAPath(t *testing.T) {
	tmp := t.TempDir()
	for _, dir := range []string{"repo", "repo/skills/a", "repo/skills/a/sub", "repo/skills/b", "outside/x"} {
		writeSkill(t, filepath.Join(tmp, dir), skill.FileName, filepath.Base(dir))
	}
	if err := os.MkdirAll(filepath.Join(tmp, "linked"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", "outside", "x", skill.FileName), filepath.Join(tmp, "linked", skill.FileName)); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(tmp, "empty", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A case file under a skill that is otherwise valid: the skill is not "valid".
	writeSkill(t, filepath.Join(tmp, "cased"), skill.FileName, "cased")
	if err := os.MkdirAll(filepath.Join(tmp, "cased", "evals"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "cased", "evals", "evals.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		path   string
		code   int
		skills []string // names, sorted
		rules  []string // error rules that must be reported
	}{
		{path: "repo", code: ExitOK, skills: []string{"a", "b", "repo", "sub"}},
		{path: "repo/SKILL.md", code: ExitOK, skills: []string{"a", "b", "repo", "sub"}},
		{path: "repo/skills/a", code: ExitOK, skills: []string{"a", "sub"}},
		{path: "repo/skills/b", code: ExitOK, skills: []string{"b"}},
		{path: "linked", code: ExitErrors, rules: []string{skill.RuleDiscoveryLinkLeavesSkill, skill.RuleDiscoveryEmpty}},
		{path: "empty", code: ExitErrors, rules: []string{skill.RuleDiscoveryEmpty}},
	}
	for _, cmd := range []string{"validate", "lint", "deps"} {
		for _, tc := range tests {
			t.Run(cmd+" "+tc.path, func(t *testing.T) {
				path := filepath.Join(tmp, filepath.FromSlash(tc.path))
				code, out, errOut := run(cmd, "--format", "json", path)
				if code != tc.code {
					t.Errorf("exit %d, want %d\n%s%s", code, tc.code, out, errOut)
				}
				var rep report
				if err := json.Unmarshal([]byte(out), &rep); err != nil {
					t.Fatalf("not JSON: %v\n%s", err, out)
				}
				if rep.Valid != (code == ExitOK) {
					t.Errorf("valid %v with exit %d", rep.Valid, code)
				}
				var names []string
				for _, s := range rep.Skills {
					names = append(names, s.Name)
				}
				slices.Sort(names)
				if !slices.Equal(names, tc.skills) {
					t.Errorf("skills %v, want %v", names, tc.skills)
				}
				var rules []string
				for _, d := range rep.all() {
					if d.Severity == "error" {
						rules = append(rules, d.Rule)
					}
				}
				for _, r := range tc.rules {
					if !slices.Contains(rules, r) {
						t.Errorf("errors %v, want %s among them", rules, r)
					}
				}
				// Text output is the same verdict.
				tcode, text, _ := run(cmd, path)
				if tcode != code || (code != ExitOK && !strings.Contains(text, "error")) {
					t.Errorf("text: exit %d: %s", tcode, text)
				}
			})
		}
	}

	// A broken cases file makes its skill invalid in the document, as in the exit status.
	code, out, _ := run("validate", "--format", "json", filepath.Join(tmp, "cased"))
	var rep report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if code != ExitErrors || rep.Valid || len(rep.Skills) != 1 || rep.Skills[0].Valid {
		t.Errorf("exit %d, document %s", code, out)
	}
}

// pluginSuite builds a plugin of one skill whose `claude plugin eval` suite is in evals/ at the
// plugin's root, beside .claude-plugin/plugin.json, and returns the plugin's directory.
func pluginSuite(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "p")
	files := map[string]string{
		".claude-plugin/plugin.json":      "{\"name\": \"p\"}\n",
		"skills/one/SKILL.md":             "---\nname: one\ndescription: Greets people. Use when asked to greet.\n---\n\nSay hello.\n",
		"evals/greets/prompt.md":          "Greet me.\n",
		"evals/greets/graders/replied.md": "---\ntype: regex\ntarget: last_message\npattern: 'hello'\nflags: i\n---\n",
	}
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestPluginSuitePlanned: a plugin's own suite plans its jobs (it planned 0), and an unknown
// grader type there is a plan error naming file and line.
func TestPluginSuitePlanned(t *testing.T) {
	root := pluginSuite(t)
	code, out, errOut := run("plan", root)
	if code != ExitOK || !strings.Contains(out, "\n3 jobs, 0 errors") || !strings.Contains(out, "one/greets #3") {
		t.Errorf("plan: exit %d\n%s%s", code, out, errOut)
	}
	grader := filepath.Join(root, "evals", "greets", "graders", "replied.md")
	if err := os.WriteFile(grader, []byte("---\ntype: vibes\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"plan", "validate"} {
		code, out, _ = run(cmd, root)
		if code != ExitErrors || !strings.Contains(out, grader+":2: error plugineval.type: unknown grader type \"vibes\"") {
			t.Errorf("%s with an unknown grader: exit %d\n%s", cmd, code, out)
		}
	}
}
