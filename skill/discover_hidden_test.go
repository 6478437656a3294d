package skill

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestDiscoverAgentDirs builds trees where agents keep skills, and the directories discovery
// must not enter, and checks which skills are found.
func TestDiscoverAgentDirs(t *testing.T) {
	tests := []struct {
		name  string
		files []string // skill files to create, below the root; the name is the directory's
		want  []string // skill names found, sorted
	}{
		{"agent directories", []string{
			".claude/skills/a/SKILL.md", ".agents/skills/b/SKILL.md", ".github/skills/c/SKILL.md",
			".gemini/skills/d/SKILL.md", ".codex/skills/e/SKILL.md", ".cursor/skills/f/SKILL.md",
			".crush/skills/g/SKILL.md",
		}, []string{"a", "b", "c", "d", "e", "f", "g"}},
		{"hidden catalogs of openai/skills", []string{
			"skills/.curated/a/SKILL.md", "skills/.experimental/b/SKILL.md", "skills/.system/c/SKILL.md",
		}, []string{"a", "b", "c"}},
		{"version control, dependencies, environments and caches", []string{
			".git/a/SKILL.md", ".hg/b/SKILL.md", ".svn/c/SKILL.md", "node_modules/d/SKILL.md",
			".venv/lib/e/SKILL.md", "venv/f/SKILL.md", "__pycache__/g/SKILL.md", ".tox/h/SKILL.md",
			".cache/i/SKILL.md", "x/node_modules/j/SKILL.md", "kept/SKILL.md",
		}, []string{"kept"}},
		{"vendor is searched", []string{"vendor/a/SKILL.md"}, []string{"a"}},
		{"lowercase skill.md", []string{"a/skill.md", ".gemini/skills/b/skill.md"}, []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for _, f := range tt.files {
				p := filepath.Join(root, filepath.FromSlash(f))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				name := filepath.Base(filepath.Dir(p))
				if err := os.WriteFile(p, []byte(minimalSkill(name)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cat, ds := Discover([]string{root}, Options{})
			if len(ds) > 0 {
				t.Errorf("diagnostics: %v", ds)
			}
			if got := names(cat.Skills()); !slices.Equal(got, tt.want) {
				t.Errorf("skills %v, want %v", got, tt.want)
			}
		})
	}
}

// TestDiscoverPrefersUpperCase checks that SKILL.md wins over skill.md where both exist (on a
// file system that tells them apart).
func TestDiscoverPrefersUpperCase(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ file, name string }{{"skill.md", "lower"}, {FileName, "upper"}} {
		if err := os.WriteFile(filepath.Join(dir, f.file), []byte(minimalSkill(f.name)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cat, _ := Discover([]string{filepath.Dir(dir)}, Options{})
	if got := names(cat.All()); !slices.Equal(got, []string{"upper"}) {
		t.Errorf("found %v, want [upper]", got)
	}
	if f, ok := SkillFile(dir); !ok || filepath.Base(f) != FileName {
		t.Errorf("SkillFile = %s, %v", f, ok)
	}
}
