package skill

import (
	"path/filepath"
	"slices"
	"testing"
)

func names(ss []*Skill) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return out
}

func TestDiscoverLayout(t *testing.T) {
	root := filepath.Join("testdata", "cases", "discovery-layout")
	cat, ds := Discover([]string{root}, Options{})
	// The template SKILL.md in plain/assets is a skill's asset: reported, not listed.
	if len(ds) != 1 || ds[0].Rule != RuleDiscoveryNested || ds[0].File != filepath.Join(root, "plain", "assets") {
		t.Errorf("diagnostics: %v", ds)
	}
	// Hidden directories are searched; node_modules and a skill's assets are not.
	want := []string{"agents-one", "claude-one", "github-one", "not-found", "not-found-hidden", "plain", "still"}
	if got := names(cat.Skills()); !slices.Equal(got, want) {
		t.Errorf("skills %v, want %v", got, want)
	}
	if s := cat.Lookup("still"); s == nil || s.Dir != filepath.Join(root, "deep", "er", "still") {
		t.Errorf("Lookup(still) = %+v", s)
	}
	if cat.Lookup("template") != nil || cat.Lookup("not-found-npm") != nil {
		t.Error("found a skill that should be skipped")
	}
	if got := names(cat.All()); !slices.Equal(got, []string{"agents-one", "not-found", "claude-one", "github-one", "not-found-hidden", "still", "plain"}) {
		t.Errorf("discovery order %v", got)
	}

	shallow, _ := Discover([]string{root}, Options{MaxDepth: 1})
	if got := names(shallow.Skills()); !slices.Equal(got, []string{"plain"}) {
		t.Errorf("MaxDepth 1: %v", got)
	}
}

func TestDiscoverRootForms(t *testing.T) {
	dir := filepath.Join("testdata", "cases", "valid-full", "app")
	for _, root := range []string{dir, filepath.Join(dir, FileName)} {
		cat, ds := Discover([]string{root}, Options{})
		if len(ds) > 0 || !slices.Equal(names(cat.All()), []string{"app"}) {
			t.Errorf("root %s: %v %v", root, names(cat.All()), ds)
		}
		if s := cat.Lookup("app"); s == nil || s.Dir != dir || s.File != filepath.Join(dir, FileName) {
			t.Errorf("root %s: %+v", root, s)
		}
	}
	_, ds := Discover([]string{filepath.Join("testdata", "rfc", "environment-selector", "test", "cases.yaml")}, Options{})
	if len(ds) != 1 || ds[0].Rule != RuleDiscoveryRoot {
		t.Errorf("a file that is not SKILL.md as root: %v", ds)
	}
}

func TestDiscoverLayers(t *testing.T) {
	base := filepath.Join("testdata", "cases", "discovery-shadowed")
	first, second := filepath.Join(base, "first"), filepath.Join(base, "second")
	cat, _ := Discover([]string{first, second}, Options{})
	if got := names(cat.Skills()); !slices.Equal(got, []string{"only-second", "shared"}) {
		t.Errorf("skills %v", got)
	}
	if s := cat.Lookup("shared"); cat.Root(s) != first {
		t.Errorf("shared resolves to %s, want the first root's", s.File)
	}
	sh := cat.Shadowed()
	if len(sh) != 1 || sh[0].Skill.File != filepath.Join(second, "shared", FileName) || sh[0].By.File != filepath.Join(first, "shared", FileName) {
		t.Errorf("shadowed %+v", sh)
	}
	// The same root twice, or a root inside another: each skill once, no shadowing noise.
	cat, ds := Discover([]string{first, base}, Options{})
	if len(cat.All()) != 3 || len(cat.Shadowed()) != 1 {
		t.Errorf("overlapping roots: %v, %v", names(cat.All()), ds)
	}
}

func TestDiscoverSymlinksInside(t *testing.T) {
	dir := t.TempDir()
	roots := setupSymlinksInside(t, dir)
	cat, ds := Discover(roots, Options{})
	if len(ds) > 0 {
		t.Errorf("diagnostics: %v", ds)
	}
	if got := names(cat.All()); !slices.Equal(got, []string{"one", "two"}) {
		t.Errorf("each skill once: %v", got)
	}
}

func TestDiscoverDeterministic(t *testing.T) {
	root := filepath.Join("testdata", "cases")
	first, fds := Discover([]string{root}, Options{})
	for range 5 {
		again, ads := Discover([]string{root}, Options{})
		if !slices.Equal(files(first.All()), files(again.All())) || !slices.Equal(fds, ads) {
			t.Fatal("discovery is not deterministic")
		}
	}
}

func files(ss []*Skill) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.File)
	}
	return out
}

// TestHasSkillsBelow: a skill directory is a root too when a skill lies below it, but not for
// the SKILL.md files of its fixtures.
func TestHasSkillsBelow(t *testing.T) {
	tests := []struct {
		name  string
		files []string // SKILL.md files below the skill directory s
		want  bool
	}{
		{"a leaf skill", []string{"s/SKILL.md"}, false},
		{"a sub-skill", []string{"s/SKILL.md", "s/child/SKILL.md"}, true},
		{"a skills folder below", []string{"s/SKILL.md", "s/.claude/skills/x/SKILL.md"}, true},
		{"only fixtures below", []string{"s/SKILL.md", "s/examples/x/SKILL.md", "s/tests/y/SKILL.md"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			for _, f := range tt.files {
				writeFile(t, filepath.Join(tmp, filepath.FromSlash(f)), minimalSkill(filepath.Base(filepath.Dir(f))))
			}
			if got := HasSkillsBelow(filepath.Join(tmp, "s"), Options{}); got != tt.want {
				t.Errorf("HasSkillsBelow = %v, want %v", got, tt.want)
			}
		})
	}
}
