package skill

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/skillfleet/skillfleet/diag"
)

// Discovery layout, in one place.
var (
	// skippedDirs are the directory names discovery never enters, hidden or not: version
	// control data, and dependency, virtualenv and cache trees, which hold no skills of the
	// project (a dependency's skills are its own) and can be huge. Every other directory is
	// searched, hidden ones included, because agents keep skills in .claude/skills,
	// .agents/skills, .github/skills, .gemini/skills, .codex/skills, .cursor/skills,
	// .crush/skills, and catalogs in skills/.curated, .experimental and .system. vendor is
	// searched: it is also an ordinary directory name, and Go and PHP vendor trees are small.
	skippedDirs = []string{
		".git", ".hg", ".svn", ".bzr", ".jj", "CVS", // version control
		"node_modules", "bower_components", // JavaScript dependencies
		".venv", "venv", "__pycache__", ".tox", ".nox", // Python environments and bytecode
		".mypy_cache", ".pytest_cache", ".ruff_cache", ".cache", // tool caches
		// A suite bundle's previous versions of its skills (bundle.BaselineDir): files of an
		// old_skill arm, never skills of the suite.
		".skillfleet-baseline",
	}
	// resourceDirs are the directories of a skill (at any depth below it, up to the next skill)
	// whose SKILL.md files are not skills: the specification's references/, assets/ and
	// scripts/, and the examples, templates and test fixtures skills ship, which hold
	// SKILL.md files to read, copy or test against. Discovery reports them (RuleDiscoveryNested)
	// instead; given as a root, such a directory's skills are listed. Every other directory
	// below a skill is searched like any other, since repositories keep their skills below a
	// SKILL.md of their own and skills keep sub-skills in their directories.
	resourceDirs = []string{
		"references", "reference", "assets", "scripts", // the specification's optional directories
		"examples", "example", "templates", "template", // material to read or copy
		"test", "tests", "testdata", "fixtures", "evals", "eval", // test fixtures
	}
	// fileNames make a directory a skill, the first present winning: the reference
	// validator accepts a lowercase skill.md too.
	fileNames = []string{FileName, "skill.md"}
)

// SkippedDirNames returns the directory names discovery never enters, for help texts.
func SkippedDirNames() []string { return slices.Clone(skippedDirs) }

// SkillFile returns the file that makes dir a skill, SKILL.md or else a lowercase skill.md,
// and whether there is one (a regular file, or a link to one).
func SkillFile(dir string) (string, bool) {
	for _, fn := range fileNames {
		p := filepath.Join(dir, fn)
		if info, err := os.Stat(p); err == nil && !info.IsDir() {
			return p, true
		}
	}
	return "", false
}

// Catalog is the set of skills discovered in one or more layered roots.
type Catalog struct {
	roots    []string
	all      []*Skill
	rootOf   map[*Skill]int
	byName   map[string]*Skill
	sorted   []*Skill
	shadowed []Shadow
}

// Shadow records a skill hidden by a same-named skill of an earlier root.
type Shadow struct {
	Skill *Skill // the hidden skill
	By    *Skill // the skill that wins
}

// Skills returns the skills that names resolve to, sorted by name: shadowed skills, second
// definitions of a name within a root, and files without a usable name are excluded.
func (c *Catalog) Skills() []*Skill { return c.sorted }

// All returns every discovered SKILL.md, parsed, in discovery order (roots in order, each
// walked depth-first in lexical order), including shadowed and unnamed ones: what a validator
// reports on.
func (c *Catalog) All() []*Skill { return c.all }

// Lookup returns the skill a name resolves to, or nil.
func (c *Catalog) Lookup(name string) *Skill { return c.byName[NormalizeName(name)] }

// Shadowed returns the skills hidden by an earlier root's skill of the same name.
func (c *Catalog) Shadowed() []Shadow { return c.shadowed }

// Roots returns the roots the catalog was discovered from.
func (c *Catalog) Roots() []string { return c.roots }

// Root returns the root s was found in, or "".
func (c *Catalog) Root(s *Skill) string {
	if i, ok := c.rootOf[s]; ok {
		return c.roots[i]
	}
	return ""
}

// EmptyRoots reports, as discovery.empty errors, the roots in which no SKILL.md was found.
// Roots that could not be read are left to discovery.root. A command given a mistyped path
// must fail rather than report "0 skills, 0 errors".
func (c *Catalog) EmptyRoots(ds diag.Diagnostics) diag.Diagnostics {
	found := make([]bool, len(c.roots))
	for _, i := range c.rootOf {
		found[i] = true
	}
	unreadable := map[string]bool{}
	for _, d := range ds {
		if d.Rule == RuleDiscoveryRoot {
			unreadable[d.File] = true
		}
	}
	var out diag.Diagnostics
	for i, root := range c.roots {
		if !found[i] && !unreadable[root] {
			out = append(out, diag.Error(RuleDiscoveryEmpty, root, 0, "no skill found: no "+FileName+" in this directory or below it"))
		}
	}
	return out
}

// NewCatalog builds a catalog of already-parsed skills as if they had been found, in order, in
// a single root. It applies the same duplicate-name rule as Discover.
func NewCatalog(skills ...*Skill) (*Catalog, diag.Diagnostics) {
	c := &Catalog{roots: []string{""}}
	rootOf := make([]int, len(skills))
	return c, c.index(skills, rootOf)
}

// Discover finds and parses the skills below roots. Each root is searched at any depth (up to
// Options.MaxDepth) for directories holding a SKILL.md (a lowercase skill.md counts when there
// is no SKILL.md). A skill directory is searched too: a root that is a skill lists the skills
// below it, and a skill's sub-skills are skills. Only the SKILL.md files below a skill's
// resource directories (references/, assets/, scripts/, examples/, templates/ and test
// fixture directories, see resourceDirs) are not skills: they are reported, as
// RuleDiscoveryNested warnings, never skipped silently. Hidden directories are searched;
// SkippedDirNames are not. Symlinked directories are followed when they stay inside the root
// and do not loop, after the rest of the root, and what they lead to is listed once, under its
// real path.
//
// Roots layer like PATH: the first root to define a name wins, later ones are shadowed. The
// returned diagnostics hold discovery problems and every file's parse diagnostics.
func Discover(roots []string, opts Options) (*Catalog, diag.Diagnostics) {
	return discover(roots, opts, os.ReadDir)
}

// DiscoverTree discovers the skill directory dir as a skill and the root of the skills below
// it (at any depth, up to opts.MaxDepth), layered over the skill directories next to it (its
// parent, one level deep), among which requires resolve as for a single skill. The parent's
// search does not enter dir again, so nothing in dir is reported twice. The catalog's Root
// is dir for dir's own skills.
func DiscoverTree(dir string, opts Options) (*Catalog, diag.Diagnostics) {
	parent := filepath.Join(dir, "..")
	if sameDir(parent, dir) {
		return Discover([]string{dir}, opts)
	}
	return discoverLayers([]string{dir, parent}, []int{opts.MaxDepth, 1}, true, opts, os.ReadDir)
}

// HasSkillsBelow reports whether a skill directory holds other skills below it (at any depth,
// up to opts.MaxDepth), without parsing any: a skill given alone is then also a root.
func HasSkillsBelow(dir string, opts Options) bool {
	w := &walker{opts: opts, root: dir, readDir: os.ReadDir, visited: map[string]bool{}, seenSkills: map[string]bool{}, groupAt: map[string]*nestedGroup{}, limit: 2, skipResources: true}
	w.run()
	own := filepath.Clean(dir)
	return slices.ContainsFunc(w.files, func(f string) bool { return filepath.Dir(f) != own })
}

// discover is Discover with the directory lister injected, so tests can make directories
// unreadable even when they run as root.
func discover(roots []string, opts Options, readDir func(string) ([]os.DirEntry, error)) (*Catalog, diag.Diagnostics) {
	return discoverLayers(roots, nil, false, opts, readDir)
}

// discoverLayers is discover with a depth limit per root (nil: opts.MaxDepth for each), and,
// with skipEarlier, later roots never entering the directories of earlier ones.
func discoverLayers(roots []string, depths []int, skipEarlier bool, opts Options, readDir func(string) ([]os.DirEntry, error)) (*Catalog, diag.Diagnostics) {
	if readDir == nil {
		readDir = os.ReadDir
	}
	var ds diag.Diagnostics
	c := &Catalog{roots: slices.Clone(roots)}
	var found []string
	var rootOf []int
	seen := map[string]bool{} // real paths of listed skill directories and SKILL.md files, across roots
	var groups []*nestedGroup
	var earlier []string // real paths of the roots searched so far
	for i, root := range roots {
		wopts := opts
		if depths != nil {
			wopts.MaxDepth = depths[i]
		}
		w := &walker{opts: wopts, root: root, readDir: readDir, visited: map[string]bool{}, seenSkills: seen, groupAt: map[string]*nestedGroup{}}
		if skipEarlier {
			for _, r := range earlier {
				w.visited[r] = true
			}
		}
		w.run()
		if w.realRoot != "" {
			earlier = append(earlier, w.realRoot)
		}
		ds = append(ds, w.diags...)
		groups = append(groups, w.groups...)
		for _, f := range w.files {
			found = append(found, f)
			rootOf = append(rootOf, i)
		}
	}

	// After every root: a fixture that another root lists as a skill is not reported.
	for _, g := range groups {
		ds = append(ds, g.diagnostic(seen)...)
	}

	skills, parseDiags := parseAll(found)
	for _, pd := range parseDiags {
		ds = append(ds, pd...)
	}
	ds = append(ds, c.index(skills, rootOf)...)
	ds.Sort()
	return c, ds
}

// parseAll parses files on a bounded pool of GOMAXPROCS workers. Results land at their input
// index, so the outcome does not depend on scheduling.
func parseAll(files []string) ([]*Skill, []diag.Diagnostics) {
	skills := make([]*Skill, len(files))
	diags := make([]diag.Diagnostics, len(files))
	workers := min(runtime.GOMAXPROCS(0), len(files))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(files) {
					return
				}
				skills[i], diags[i] = ParseFile(files[i])
			}
		})
	}
	wg.Wait()
	return skills, diags
}

// index fills the name index in discovery order and reports duplicates and shadowing.
func (c *Catalog) index(skills []*Skill, rootOf []int) diag.Diagnostics {
	var ds diag.Diagnostics
	c.all = skills
	c.rootOf = make(map[*Skill]int, len(skills))
	c.byName = make(map[string]*Skill, len(skills))
	for i, s := range skills {
		c.rootOf[s] = rootOf[i]
		if s.Name == "" {
			continue
		}
		prev, taken := c.byName[s.Name]
		if !taken {
			c.byName[s.Name] = s
			c.sorted = append(c.sorted, s)
			continue
		}
		line := max(s.Line("name"), 1)
		if c.rootOf[prev] == rootOf[i] {
			ds = append(ds, diag.Error(RuleDiscoveryDuplicateName, s.File, line, fmt.Sprintf(
				"skill %q is defined twice in one root: %s and %s; %s is used, as the first in path order (given as separate roots, the earlier root's skill is used and the later one is shadowed)",
				s.Name, prev.File, s.File, prev.File)))
			continue
		}
		c.shadowed = append(c.shadowed, Shadow{Skill: s, By: prev})
		ds = append(ds, diag.Info(RuleDiscoveryShadowed, s.File, line, fmt.Sprintf(
			"skill %q at %s is shadowed by %s from an earlier root", s.Name, s.File, prev.File)))
	}
	slices.SortFunc(c.sorted, func(a, b *Skill) int { return strings.Compare(a.Name, b.Name) })
	return ds
}

// walker searches one root.
type walker struct {
	opts       Options
	root       string // as given
	dir        string // the root directory as given (a SKILL.md root stands for its directory)
	realRoot   string // absolute, symlinks resolved
	readDir    func(string) ([]os.DirEntry, error)
	visited    map[string]bool
	seenSkills map[string]bool
	files      []string
	diags      diag.Diagnostics
	// links are symlinked directories met during the walk, followed only after every
	// directory reachable without links has been searched, so that what they lead to is
	// named by its real path and placed in its real scope.
	links   []link
	groups  []*nestedGroup // in discovery order
	groupAt map[string]*nestedGroup
	limit   int // stop once this many skills are found; 0: no limit
	// skipResources leaves a skill's resource directories unsearched, for a caller that wants
	// skills only (their SKILL.md files are not skills, and the walk is then cheap).
	skipResources bool
}

// link is a symlinked directory inside the root, waiting to be searched.
type link struct {
	target string // absolute, symlinks resolved
	depth  int    // depth of the link's own path
}

// scope is where a directory lies relative to the skills above it.
type scope struct {
	skill string       // the nearest skill directory at or above, or ""
	group *nestedGroup // set below a skill's resource directory: SKILL.md files there are not skills
}

func (w *walker) run() {
	info, err := os.Stat(w.root)
	if err != nil {
		w.diags = append(w.diags, diag.Error(RuleDiscoveryRoot, w.root, 0, fmt.Sprintf("skills root cannot be read: %v", unwrapPathError(err))))
		return
	}
	dir := w.root
	if !info.IsDir() {
		// A SKILL.md named directly stands for its directory.
		if filepath.Base(w.root) != FileName {
			w.diags = append(w.diags, diag.Error(RuleDiscoveryRoot, w.root, 0, "skills root is not a directory"))
			return
		}
		dir = filepath.Dir(w.root)
	}
	real, err := realPath(dir)
	if err != nil {
		w.diags = append(w.diags, diag.Error(RuleDiscoveryRoot, w.root, 0, fmt.Sprintf("skills root cannot be resolved: %v", err)))
		return
	}
	w.dir, w.realRoot = dir, real
	w.walk(dir, real, 0, scope{})
	// Links may add links; each target is searched at most once (visited), so this ends.
	for len(w.links) > 0 {
		l := w.links[0]
		w.links = w.links[1:]
		if w.visited[l.target] {
			continue // already searched under its real path, or through an earlier link
		}
		p, sc := w.scopeOf(l.target)
		w.walk(p, l.target, l.depth, sc)
	}
}

// isResourceDir reports whether a directory of this name below a skill holds resources and
// fixtures rather than skills (case-insensitively: Examples/ is the same directory to a reader).
func isResourceDir(name string) bool {
	return slices.ContainsFunc(resourceDirs, func(d string) bool { return strings.EqualFold(d, name) })
}

// nestedGroup is a resource directory of a skill and the SKILL.md files found below it.
type nestedGroup struct {
	dir   string // as listed, below the root as given
	skill string // the skill directory it belongs to
	files []nestedFile
}

type nestedFile struct {
	path string // the SKILL.md, below the root as given
	real string // its directory, symlinks resolved
}

// nestedShown bounds the files a discovery.nested message names; the count is always whole.
const nestedShown = 5

// diagnostic reports the group's SKILL.md files that are not listed as skills through any
// root (listed is the real paths of the listed skill directories).
func (g *nestedGroup) diagnostic(listed map[string]bool) diag.Diagnostics {
	var rels []string
	for _, f := range g.files {
		if listed[f.real] {
			continue
		}
		rel, err := filepath.Rel(g.dir, f.path)
		if err != nil {
			rel = f.path
		}
		rels = append(rels, filepath.ToSlash(rel))
	}
	if len(rels) == 0 {
		return nil
	}
	shown := strings.Join(rels[:min(len(rels), nestedShown)], ", ")
	if len(rels) > nestedShown {
		shown += fmt.Sprintf(" and %d more", len(rels)-nestedShown)
	}
	what, verb, them := "1 "+FileName, "is not listed as a skill", "it"
	if len(rels) > 1 {
		what, verb, them = fmt.Sprintf("%d %s files", len(rels), FileName), "are not listed as skills", "them"
	}
	return diag.Diagnostics{diag.Warning(RuleDiscoveryNested, g.dir, 0, fmt.Sprintf(
		"%s below this directory of skill %s %s (%s): a skill's references, assets, scripts, examples, templates and test directories hold examples and fixtures; to list %s, give %s as a skills root",
		what, g.skill, verb, shown, them, g.dir))}
}

func realPath(p string) (string, error) {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", unwrapPathError(err)
	}
	return filepath.Abs(r)
}

// walk searches dir, whose symlink-free absolute path is real, in scope sc.
func (w *walker) walk(dir, real string, depth int, sc scope) {
	if w.limit > 0 && len(w.files) >= w.limit {
		return
	}
	if w.visited[real] {
		return // reached before through a symlink (or the reverse)
	}
	w.visited[real] = true
	isSkill := false
	for _, fn := range fileNames {
		info, err := os.Lstat(filepath.Join(dir, fn))
		if err != nil {
			continue
		}
		if realFile, ok := w.skillFile(dir, real, fn, info.Mode().Type()); ok {
			isSkill = true
			if sc.group != nil {
				sc.group.files = append(sc.group.files, nestedFile{path: filepath.Join(dir, fn), real: real})
			} else {
				w.addSkill(dir, real, fn, realFile)
				sc = scope{skill: dir}
			}
		}
		break
	}
	// A skill directory is searched too: repositories keep their skills below a SKILL.md of
	// their own, and skills keep sub-skills in their directories.
	if w.opts.MaxDepth > 0 && depth >= w.opts.MaxDepth {
		return
	}
	entries, err := w.readDir(dir)
	if err != nil && len(entries) == 0 {
		rule, sev, msg := RuleDiscoveryUnreadable, diag.SeverityWarning, "directory cannot be read, skipped"
		switch {
		case isSkill:
			msg = "skill directory cannot be listed; no skill below it is searched"
		case depth == 0:
			rule, sev = RuleDiscoveryRoot, diag.SeverityError
		}
		w.diags = append(w.diags, diag.Diagnostic{Rule: rule, Severity: sev, File: dir,
			Message: fmt.Sprintf("%s: %v", msg, unwrapPathError(err))})
		return
	}
	for _, e := range entries {
		name := e.Name()
		if slices.Contains(skippedDirs, name) || (w.skipResources && sc.skill != "" && isResourceDir(name)) {
			continue
		}
		cdir, creal, ok := w.enter(dir, real, name, e.Type(), depth+1)
		if !ok {
			continue
		}
		w.walk(cdir, creal, depth+1, w.child(sc, cdir, name))
	}
}

// child returns the scope of the subdirectory name (at path p) of a directory in scope sc.
func (w *walker) child(sc scope, p, name string) scope {
	if sc.skill == "" || sc.group != nil || !isResourceDir(name) {
		return sc
	}
	if g := w.groupAt[p]; g != nil {
		sc.group = g
		return sc
	}
	sc.group = &nestedGroup{dir: p, skill: sc.skill}
	w.groupAt[p] = sc.group
	w.groups = append(w.groups, sc.group)
	return sc
}

// scopeOf returns the path under which the directory real (inside the root) is listed, and
// its scope, from the directories between the root and it: a symlinked directory is what its
// real path makes it, whichever link leads to it.
func (w *walker) scopeOf(real string) (string, scope) {
	rel, err := filepath.Rel(w.realRoot, real)
	if err != nil || rel == "." {
		return w.dir, scope{}
	}
	var sc scope
	p, r := w.dir, w.realRoot
	for part := range strings.SplitSeq(rel, string(filepath.Separator)) {
		if _, ok := SkillFile(r); ok && sc.group == nil {
			sc = scope{skill: p}
		}
		p, r = filepath.Join(p, part), filepath.Join(r, part)
		sc = w.child(sc, p, part)
	}
	return p, sc
}

// enter decides whether the entry name of dir is a directory to search now. A symlink to a
// directory that stays inside the root and does not lead back to an ancestor is queued for
// later (see walker.links) instead.
func (w *walker) enter(dir, real, name string, typ fs.FileMode, depth int) (string, string, bool) {
	p := filepath.Join(dir, name)
	if typ.IsDir() {
		return p, filepath.Join(real, name), true
	}
	if typ&fs.ModeSymlink == 0 {
		return "", "", false
	}
	// Only a link to a directory can lead to skills (a SKILL.md link is judged in walk), so
	// a link to a file is passed over before it is resolved: a script linked from outside
	// the root is no discovery finding.
	info, err := os.Stat(p)
	if err != nil {
		// A looping SKILL.md is reported as unreadable by ParseFile, once.
		if isLoop(err) && !slices.Contains(fileNames, name) {
			w.diags = append(w.diags, diag.Warning(RuleDiscoverySymlinkLoop, p, 0, "symlink loops (too many levels of links); not followed"))
		}
		return "", "", false // dangling links are common (build outputs) and hold no skill
	}
	if !info.IsDir() {
		return "", "", false
	}
	target, ok := w.resolve(p)
	if !ok {
		return "", "", false
	}
	if within(real, target) {
		w.diags = append(w.diags, diag.Warning(RuleDiscoverySymlinkLoop, p, 0, fmt.Sprintf(
			"symlink to %s leads back to one of its own parent directories; not followed", target)))
		return "", "", false
	}
	w.links = append(w.links, link{target: target, depth: depth})
	return "", "", false
}

// resolve follows a symlink to a directory, reporting loops and targets outside the root.
func (w *walker) resolve(p string) (string, bool) {
	target, err := realPath(p)
	if err != nil {
		if isLoop(err) {
			w.diags = append(w.diags, diag.Warning(RuleDiscoverySymlinkLoop, p, 0, "symlink loops (too many levels of links); not followed"))
		}
		return "", false
	}
	if !within(target, w.realRoot) {
		w.diags = append(w.diags, diag.Warning(RuleDiscoveryEscapesRoot, p, 0, fmt.Sprintf(
			"symlink resolves to %s, outside the skills root %s; skipped", target, w.realRoot)))
		return "", false
	}
	return target, true
}

func isLoop(err error) bool {
	return errors.Is(err, syscall.ELOOP) || strings.Contains(err.Error(), "too many links")
}

// within reports whether p is root or below it (both absolute and clean).
func within(p, root string) bool {
	if p == root {
		return true
	}
	if !strings.HasSuffix(root, string(filepath.Separator)) {
		root += string(filepath.Separator)
	}
	return strings.HasPrefix(p, root)
}

// skillFile reports whether the SKILL.md entry name makes dir (whose real path is real) a
// skill, and the real path of the file it lists. Anything but a directory counts: a FIFO,
// a device, or a link that dangles or loops is listed, and ParseFile reports it as
// file.unreadable, so that what cannot be read is an error and never a silent "0 skills". A
// link whose file lies outside the skill directory is an error (RuleDiscoveryLinkLeavesSkill)
// and the directory is not a skill: what the skill would ship is not what validate read, and
// the same file behind several skills would be listed once per link.
func (w *walker) skillFile(dir, real, name string, typ fs.FileMode) (string, bool) {
	own := filepath.Join(real, name)
	if typ&fs.ModeSymlink == 0 {
		return own, !typ.IsDir()
	}
	p := filepath.Join(dir, name)
	target, err := realPath(p)
	if err != nil {
		return own, true // dangling or looping: unreadable, reported by ParseFile
	}
	if !within(target, real) {
		w.diags = append(w.diags, diag.Error(RuleDiscoveryLinkLeavesSkill, p, 0, fmt.Sprintf(
			"%s is a symlink to %s, outside its skill directory %s; the skill is not listed (copy the file into the skill, or link the whole skill directory)",
			name, target, real)))
		return "", false
	}
	info, err := os.Stat(target)
	if err != nil {
		return own, true
	}
	return target, !info.IsDir()
}

// addSkill lists the skill dir unless its directory or its SKILL.md (realFile, links
// resolved) was listed already, through an earlier root or another link.
func (w *walker) addSkill(dir, real, name, realFile string) {
	if w.seenSkills[real] || w.seenSkills[realFile] {
		return
	}
	w.seenSkills[real] = true
	w.seenSkills[realFile] = true
	w.files = append(w.files, filepath.Join(dir, name))
}
