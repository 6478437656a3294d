package cli

import (
	"os"
	"path/filepath"

	"github.com/skillfleet/skillfleet/skill"
)

// target is one PATH argument: a skill directory (or its SKILL.md) or a skills root.
type target struct {
	catalog *skill.Catalog
	skills  []*skill.Skill    // the skills to report on
	diags   skill.Diagnostics // discovery and parse diagnostics worth reporting
	single  bool              // PATH was one skill
}

// files returns the SKILL.md paths of the reported skills.
func (t *target) files() map[string]bool {
	out := make(map[string]bool, len(t.skills))
	for _, s := range t.skills {
		out[s.File] = true
	}
	return out
}

// only keeps the diagnostics about the reported skills and those about no file; with a single
// skill, siblings' problems are not the user's question.
func (t *target) only(ds skill.Diagnostics) skill.Diagnostics {
	if !t.single {
		return ds
	}
	files := t.files()
	var out skill.Diagnostics
	for _, d := range ds {
		if files[d.File] {
			out = append(out, d)
		}
	}
	return out
}

// skillDir returns the skill directory path names, if it names one.
func skillDir(path string) (string, bool) {
	if filepath.Base(path) == skill.FileName {
		if info, err := os.Stat(path); err == nil && !info.IsDir() {
			return filepath.Dir(path), true
		}
	}
	if info, err := os.Stat(filepath.Join(path, skill.FileName)); err == nil && !info.IsDir() {
		return path, true
	}
	return "", false
}

// loadTarget discovers and parses PATH. For a single skill with siblings, its dependencies
// resolve among the skill directories next to it (the RFC's "same skills root"): the parent
// directory is searched one level deep, so validating ~/src/x/my-skill does not walk ~/src.
func loadTarget(path string, opts skill.Options, siblings bool) *target {
	dir, single := skillDir(path)
	if !single {
		cat, ds := skill.Discover([]string{path}, opts)
		ds = append(ds, cat.EmptyRoots(ds)...)
		return &target{catalog: cat, skills: cat.All(), diags: ds}
	}
	roots := []string{dir}
	if siblings {
		// The parent keeps the user's spelling (testdata/skills, not /home/...), so that
		// diagnostics naming a sibling read the way the path was typed.
		parent := filepath.Join(dir, "..")
		if a, err := filepath.Abs(parent); err == nil {
			if b, err := filepath.Abs(dir); err == nil && a != b {
				roots = append(roots, parent)
			}
		}
	}
	sopts := opts
	sopts.MaxDepth = 1
	cat, ds := skill.Discover(roots, sopts)
	t := &target{catalog: cat, single: true}
	if all := cat.All(); len(all) > 0 && cat.Root(all[0]) == dir {
		t.skills = all[:1]
	}
	t.diags = t.only(ds)
	return t
}
