package skill

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/skillfleet/skillfleet/diag"
)

// Siblings loads single skill directories together with the skill directories next to them,
// among which their requires resolve (the RFC's "same skills root"). Each parent directory is
// discovered and resolved once, however many of its skills are asked for: validating N
// sibling skills named one path each then costs N parses, not N², as it did when every path
// re-read and re-resolved all of its siblings.
type Siblings struct {
	opts    Options
	parents map[string]*neighbourhood
}

// neighbourhood is one parent directory, discovered one level deep and resolved.
type neighbourhood struct {
	cat    *Catalog
	byFile map[string]*Skill
	diags  map[string]diag.Diagnostics // discovery and parse diagnostics, by file
	rdiags map[string]diag.Diagnostics // Resolve's diagnostics, by file
}

// NewSiblings returns an empty cache for one command's paths.
func NewSiblings(opts Options) *Siblings {
	return &Siblings{opts: opts, parents: map[string]*neighbourhood{}}
}

// Load returns the skill of directory dir (nil when dir holds no usable SKILL.md), the
// discovery and parse diagnostics about its SKILL.md, and Resolve's diagnostics about it,
// exactly as discovering the layered roots dir and dir/.. one level deep and resolving that
// catalog would give them.
func (s *Siblings) Load(dir string) (*Skill, diag.Diagnostics, diag.Diagnostics) {
	parent := filepath.Join(dir, "..")
	file := filepath.Join(dir, FileName)
	if sameDir(parent, dir) || isSymlink(dir) || isSymlink(file) {
		// A root directory has no siblings; a symlinked skill (or SKILL.md) may resolve
		// inside dir but outside its parent, or the reverse, so it is loaded on its own.
		return s.layered(dir, parent)
	}
	n := s.parents[parent]
	if n == nil {
		n = s.discover(parent)
		s.parents[parent] = n
	}
	sk := n.byFile[file]
	if sk == nil || (sk.Name != "" && n.cat.Lookup(sk.Name) != sk) {
		// Not found under its own spelling (reached first through another path), or an
		// earlier sibling of the same name wins in the parent while dir's own skill would
		// win when layered first: the parent's answers are not dir's.
		return s.layered(dir, parent)
	}
	return sk, n.diags[file], n.rdiags[file]
}

func (s *Siblings) discover(parent string) *neighbourhood {
	opts := s.opts
	opts.MaxDepth = 1
	cat, ds := Discover([]string{parent}, opts)
	_, rds := Resolve(cat, s.opts)
	n := &neighbourhood{cat: cat, byFile: map[string]*Skill{}, diags: byFile(ds), rdiags: byFile(rds)}
	for _, sk := range cat.All() {
		n.byFile[sk.File] = sk
	}
	return n
}

// layered is the general case: dir first, its parent second, resolved on their own.
func (s *Siblings) layered(dir, parent string) (*Skill, diag.Diagnostics, diag.Diagnostics) {
	roots := []string{dir}
	if !sameDir(parent, dir) {
		roots = append(roots, parent)
	}
	opts := s.opts
	opts.MaxDepth = 1
	cat, ds := discoverLayers(roots, nil, true, opts, os.ReadDir)
	all := cat.All()
	if len(all) == 0 || cat.Root(all[0]) != dir {
		// No skill, but never a silent one: what discovery said about dir (a SKILL.md
		// linked from outside it) is the answer.
		return nil, diagsIn(ds, dir), nil
	}
	sk := all[0]
	_, rds := Resolve(cat, s.opts)
	return sk, byFile(ds)[sk.File], byFile(rds)[sk.File]
}

// diagsIn returns the diagnostics about dir or the files below it.
func diagsIn(ds diag.Diagnostics, dir string) diag.Diagnostics {
	var out diag.Diagnostics
	for _, d := range ds {
		if InDir(d.File, dir) {
			out = append(out, d)
		}
	}
	return out
}

// InDir reports whether path is dir or lies below it, comparing absolute paths (so "./x"
// and "x" agree); links are not resolved.
func InDir(path, dir string) bool {
	p, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	d, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	return p == d || strings.HasPrefix(p, strings.TrimSuffix(d, string(filepath.Separator))+string(filepath.Separator))
}

func byFile(ds diag.Diagnostics) map[string]diag.Diagnostics {
	out := map[string]diag.Diagnostics{}
	for _, d := range ds {
		out[d.File] = append(out[d.File], d)
	}
	return out
}

// sameDir reports whether a and b are the same directory by absolute path (or cannot tell).
func sameDir(a, b string) bool {
	x, err := filepath.Abs(a)
	if err != nil {
		return true
	}
	y, err := filepath.Abs(b)
	return err != nil || x == y
}

func isSymlink(p string) bool {
	info, err := os.Lstat(filepath.Clean(p)) // "dir/" would follow the link
	return err == nil && info.Mode().Type()&fs.ModeSymlink != 0
}
