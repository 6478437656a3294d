package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/skill"
)

// target is one PATH argument: a skill directory (or its SKILL.md) or a skills root.
type target struct {
	catalog *skill.Catalog
	skills  []*skill.Skill   // the skills to report on
	diags   diag.Diagnostics // discovery and parse diagnostics worth reporting
	single  bool             // PATH was one skill directory (with the skills below it)
	dir     string           // that directory
	// resolved holds Resolve's diagnostics when they came with the skill (catalog is nil).
	resolved diag.Diagnostics
}

// only keeps, for a skill directory, the diagnostics about it and the files below it, once
// each: siblings' problems are not the user's question, but nothing found in the directory is
// dropped (a SKILL.md linked from outside it must not leave "0 skills, 0 errors").
func (t *target) only(ds diag.Diagnostics) diag.Diagnostics {
	if !t.single {
		return ds
	}
	var out diag.Diagnostics
	for _, d := range ds {
		if skill.InDir(d.File, t.dir) {
			out = append(out, d)
		}
	}
	out.Sort()
	return slices.Compact(out)
}

// discoveryHelp says, in validate's and lint's --help, where a skills root is searched.
func discoveryHelp() string {
	return `A skill is a directory holding a SKILL.md (or a lowercase skill.md); skills below it
are skills too, but SKILL.md files under its references, assets, scripts, examples,
templates or test fixtures are examples: reported (discovery.nested), not listed. Symlinked
directories are listed once, under their real path; a SKILL.md that is a symlink to a file
outside its skill directory is an error (discovery.linkLeavesSkill), and one that dangles or
is not a regular file is file.unreadable. Below a root every directory is searched, hidden ones
included, so agents' skill folders are found: .claude/skills, .agents/skills,
.github/skills, .gemini/skills, .codex/skills, .cursor/skills, .crush/skills, and
hidden catalogs such as skills/.curated. Never searched (version control, dependency,
virtualenv and cache directories):` + wrapList(skill.SkippedDirNames(), 88) + `.
`
}

// wrapList joins names with commas, breaking lines before width.
func wrapList(names []string, width int) string {
	var b strings.Builder
	col := width // start on a new line
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
			col++
		}
		if col+1+len(n) > width {
			b.WriteString("\n")
			col = 0
		} else {
			b.WriteByte(' ')
			col++
		}
		b.WriteString(n)
		col += len(n)
	}
	return b.String()
}

// skillDir returns the skill directory path names, if it names one (or its SKILL.md, or a
// lowercase skill.md).
func skillDir(path string) (string, bool) {
	if b := filepath.Base(path); b == skill.FileName || b == strings.ToLower(skill.FileName) {
		if info, err := os.Stat(path); err == nil && !info.IsDir() {
			return filepath.Dir(path), true
		}
	}
	if _, ok := skill.SkillFile(path); ok {
		return path, true
	}
	return "", false
}

// loadTarget discovers and parses PATH. For a single skill with siblings, its dependencies
// resolve among the skill directories next to it (the RFC's "same skills root"): the parent
// directory is searched one level deep, so validating ~/src/x/my-skill does not walk ~/src.
// sib, shared by a command's paths, discovers and resolves each parent once; it is nil when
// siblings are not wanted.
//
// A skill directory with skills below it is also their root (a repository with a SKILL.md at
// its top, a skill with sub-skills): they are listed with it, and requires resolve among
// them first, then among its siblings. A path that yields no skill is a discovery.empty
// error, never "0 skills, 0 errors".
func loadTarget(path string, opts skill.Options, sib *skill.Siblings) *target {
	dir, single := skillDir(path)
	if !single {
		cat, ds := skill.Discover([]string{path}, opts)
		ds = append(ds, cat.EmptyRoots(ds)...)
		return &target{catalog: cat, skills: cat.All(), diags: ds}
	}
	t := &target{single: true, dir: dir}
	switch {
	case skill.HasSkillsBelow(dir, opts):
		var cat *skill.Catalog
		var ds diag.Diagnostics
		if sib != nil {
			cat, ds = skill.DiscoverTree(dir, opts)
		} else {
			cat, ds = skill.Discover([]string{dir}, opts)
		}
		t.catalog = cat
		for _, s := range cat.All() {
			if cat.Root(s) == dir {
				t.skills = append(t.skills, s)
			}
		}
		t.diags = t.only(ds)
	case sib != nil:
		s, ds, rds := sib.Load(dir)
		if s != nil {
			t.skills = []*skill.Skill{s}
		}
		t.diags, t.resolved = t.only(ds), rds
	default:
		sopts := opts
		sopts.MaxDepth = 1
		cat, ds := skill.Discover([]string{dir}, sopts)
		t.catalog = cat
		if all := cat.All(); len(all) > 0 {
			t.skills = all[:1]
		}
		t.diags = t.only(ds)
	}
	if len(t.skills) == 0 {
		t.diags = append(t.diags, diag.Error(skill.RuleDiscoveryEmpty, dir, 0, "no skill found: this directory's "+skill.FileName+" is not listed as a skill, and no skill is below it"))
	}
	return t
}

// requires returns Resolve's diagnostics about the reported skills.
func (t *target) requires(opts skill.Options) diag.Diagnostics {
	if t.catalog == nil {
		return t.resolved
	}
	_, rds := skill.Resolve(t.catalog, opts)
	return t.only(rds)
}
