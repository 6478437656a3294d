package suite

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/skillfleet/skillfleet/skill"
)

// TestLoadEverySkillOrAnError: plan, test and submit load through Load, so a root that is a
// skill lists the skills below it, as does a sub-skill given directly, and a root that yields
// no skill is an error rather than a suite of 0 jobs.
func TestLoadEverySkillOrAnError(t *testing.T) {
	tmp := t.TempDir()
	for _, dir := range []string{"repo", "repo/skills/a", "repo/skills/a/sub", "repo/skills/b"} {
		p := filepath.Join(tmp, filepath.FromSlash(dir))
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(p)
		body := "---\nname: " + name + "\ndescription: Does " + name + " things. Use when asked.\n---\nbody\n"
		if err := os.WriteFile(filepath.Join(p, skill.FileName), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(tmp, "empty", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		root   string
		skills []string
		errors []string // rules of the errors, in order
	}{
		{root: "repo", skills: []string{"a", "b", "repo", "sub"}},
		{root: "repo/SKILL.md", skills: []string{"a", "b", "repo", "sub"}},
		{root: "repo/skills/a", skills: []string{"a", "sub"}},
		{root: "empty", errors: []string{skill.RuleDiscoveryEmpty}},
	}
	for _, tc := range tests {
		t.Run(tc.root, func(t *testing.T) {
			s := Load([]string{filepath.Join(tmp, filepath.FromSlash(tc.root))}, skill.Options{})
			var names []string
			for _, sk := range s.Catalog.Skills() {
				names = append(names, sk.Name)
			}
			if !slices.Equal(names, tc.skills) {
				t.Errorf("skills %v, want %v", names, tc.skills)
			}
			var errs []string
			for _, d := range s.Diagnostics {
				if d.Severity == "error" {
					errs = append(errs, d.Rule)
				}
			}
			if !slices.Equal(errs, tc.errors) {
				t.Errorf("errors %v, want %v", errs, tc.errors)
			}
		})
	}
}
