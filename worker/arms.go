package worker

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/bundle"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/sandbox"
)

// The arms of a compared run, as Job.arm names them ("" is with_skill).
const (
	armWithSkill    = "with_skill"
	armWithoutSkill = "without_skill"
	armOldSkill     = "old_skill"
	// armA2 is an A/A run's second with_skill arm: it runs exactly as with_skill does.
	armA2 = "a2"
)

// baselineJob reports whether the job runs in a baseline arm: one that changes what the agent
// is shown or mounted. An A/A run's a2 is no such arm: it repeats with_skill.
func baselineJob(job *pb.Job) bool {
	return job.GetArm() != "" && job.GetArm() != armWithSkill && job.GetArm() != armA2
}

// armCatalog is the catalog the job's agent is shown, made from the run's one catalog by the
// job's arm, so that a run stores one catalog whatever its arms:
//   - with_skill: the run's catalog;
//   - without_skill: the run's catalog without the job's skill (what it requires stays);
//   - old_skill: each skill with a previous version in cat.baseline is shown that version
//     instead (and an old dependency the current suite lacks is added), so the agent sees the
//     old root's versions of the selection.
//
// The entries keep their paths inside the bundle; sandboxPath says where the agent finds them.
func armCatalog(cat *pb.Catalog, job *pb.Job) []*pb.CatalogEntry {
	entries := cat.GetEntries()
	switch job.GetArm() {
	case armWithoutSkill:
		return slices.DeleteFunc(slices.Clone(entries), func(e *pb.CatalogEntry) bool { return e.GetName() == job.GetSkill() })
	case armOldSkill:
		old := make(map[string]*pb.CatalogEntry, len(cat.GetBaseline()))
		for _, e := range cat.GetBaseline() {
			old[e.GetName()] = e
		}
		out := make([]*pb.CatalogEntry, 0, len(entries)+len(old))
		for _, e := range entries {
			if o, ok := old[e.GetName()]; ok {
				e = o
				delete(old, e.GetName())
			}
			out = append(out, e)
		}
		for _, e := range cat.GetBaseline() {
			if _, left := old[e.GetName()]; left {
				out = append(out, e)
			}
		}
		slices.SortFunc(out, func(a, b *pb.CatalogEntry) int { return strings.Compare(a.GetName(), b.GetName()) })
		return out
	}
	return entries
}

// emptyByArm says a job's empty catalog is its arm's doing: a without_skill job of a suite of
// one skill is shown no skill at all, which is the question its arm asks. Such a job came by
// reference to the run's catalog (catalog_digest), which a coordinator older than the field
// would not have sent.
func emptyByArm(job *pb.Job) bool {
	return job.GetArm() == armWithoutSkill && job.GetCatalogDigest() != ""
}

// sandboxPath is where a catalog entry's file lies under SkillsMount: its bundle path, an old
// version's without the baseline directory, so the agent of an old_skill job finds the skill
// where the agent of a with_skill job does (/skills/<name>/SKILL.md) and the two arms differ
// only in the skill's content.
func sandboxPath(bundlePath string) string {
	return strings.TrimPrefix(bundlePath, bundle.BaselineDir+"/")
}

// skillMounts is what a job sees of its bundle under SkillsMount, and it is what the job's
// cell key covers, so that a changed-only run re-runs a case whenever a file it can reach
// changed (issue 25: with the whole bundle mounted, a case running a sibling skill's script
// was reused after that script changed). The directories of the job's closure (its skill and
// what it requires, transitively: the closure digest of the key) are mounted whole but for
// their test definitions (see mounter). A prompt job is also shown a catalog of every skill,
// and its agent must be able to read any of their SKILL.md to activate it (activation cases
// would fail otherwise): each other catalog skill's SKILL.md is mounted alone, and the key
// covers every SKILL.md of the catalog, not the rest of those skills' files, which the job
// cannot reach. The arms still hold: a without_skill job cannot find the skill it is run
// without (its catalog omits it), an old_skill job finds the old versions where the skills
// would be, and no job finds the bundle's old versions it was not shown.
func skillMounts(job *pb.Job, bundleDir string) ([]sandbox.Mount, error) {
	closure := job.GetClosure()
	if len(closure) == 0 {
		closure = []string{job.GetSkillPath()} // a job from a coordinator older than the field
	}
	whole := make(map[string]bool, len(closure))
	for _, p := range closure {
		whole[path.Clean("/" + p)[1:]] = true
	}
	m := &mounter{bundleDir: bundleDir, mounted: make(map[string]bool), hidden: make(map[string]bool)}
	for _, h := range job.GetHidden() {
		m.hidden[path.Clean("/"+h)] = true
	}
	if job.GetKind() != pb.CaseKind_CASE_KIND_PROMPT {
		for _, p := range closure {
			if err := m.dir(p); err != nil {
				return nil, err
			}
		}
		return m.declared(job)
	}
	for _, e := range job.GetCatalog() {
		file := path.Clean("/" + e.GetPath())
		dir := path.Dir(file)
		switch {
		case dir == "/":
			continue // a SKILL.md at the bundle's root is no skill directory of a bundle
		case whole[e.GetName()]:
			// The closure's skill by name: an old_skill job's is the old version the
			// catalog shows (the key covers the old closure's digest).
			if err := m.dir(dir); err != nil {
				return nil, err
			}
		default:
			m.add(file)
		}
	}
	if !baselineJob(job) {
		// What the skill requires is in the catalog too; a closure path it lacks is still
		// the job's to read.
		for _, p := range closure {
			if err := m.dir(p); err != nil {
				return nil, err
			}
		}
		// A baseline job's input files come from the worker (copyInputFilesIn): its sandbox
		// holds no current version of the skill to show them in.
		return m.declared(job)
	}
	return m.mounts, nil
}

// The directories of a skill that hold test definitions whatever its frontmatter says
// (suite.TestPaths): hidden in every skill directory a job mounts, so that a job from a
// coordinator older than pb.Job.hidden does not show them either.
const (
	testsDir = "tests"
	evalsDir = "evals"
)

// mounter collects the read-only mounts of a job's sandbox from the extracted bundle in
// bundleDir. Paths are bundle paths, cleaned against a root ("/s/scripts"), so none can leave
// the bundle.
//
// A job's sandbox never shows its suite's test definitions (issue 31: the agent could read
// its own test/cases.yaml, and a CLI found it in its skills_dir, where its loader invites the
// model to look). A directory holding no hidden path is one bind mount; one holding some is
// mounted entry by entry, down to the hidden paths, which are left out: a bind mount cannot
// leave part of its source out, and an empty mount over a hidden path would still need it
// to exist and could not hold the fixtures a case declares beneath it.
type mounter struct {
	bundleDir string
	hidden    map[string]bool
	mounted   map[string]bool
	mounts    []sandbox.Mount
}

// add mounts one bundle path (a directory or a file) at its place under SkillsMount.
func (m *mounter) add(p string) {
	p = path.Clean("/" + p)
	if p == "/" || m.mounted[p] {
		return
	}
	m.mounted[p] = true
	m.mounts = append(m.mounts, sandbox.Mount{
		Source: filepath.Join(m.bundleDir, filepath.FromSlash(p)),
		Target: path.Join(SkillsMount, sandboxPath(p[1:])),
	})
}

// dir mounts a skill directory without its test definitions: those the job names and, by
// convention, its tests/ and evals/.
func (m *mounter) dir(p string) error {
	p = path.Clean("/" + p)
	if p == "/" || m.mounted[p] {
		return nil
	}
	for _, t := range [...]string{testsDir, evalsDir} {
		m.hidden[path.Join(p, t)] = true
	}
	return m.tree(p)
}

// tree mounts p (a cleaned bundle path) but for the hidden paths under it that exist: whole
// when there are none, else entry by entry.
func (m *mounter) tree(p string) error {
	if m.hidden[p] {
		return nil
	}
	if !m.hidesBelow(p) {
		m.add(p)
		return nil
	}
	entries, err := os.ReadDir(filepath.Join(m.bundleDir, filepath.FromSlash(p)))
	if err != nil {
		return fmt.Errorf("listing the bundle's %s: %w", p[1:], err)
	}
	m.mounted[p] = true // its entries are; nothing mounts it whole any more
	for _, e := range entries {
		child := path.Join(p, e.Name())
		if e.IsDir() {
			if err := m.tree(child); err != nil {
				return err
			}
			continue
		}
		if !m.hidden[child] {
			m.add(child)
		}
	}
	return nil
}

// hidesBelow says a hidden path that exists in the bundle lies under the directory p.
func (m *mounter) hidesBelow(p string) bool {
	for h := range m.hidden {
		if strings.HasPrefix(h, p+"/") {
			if _, err := os.Lstat(filepath.Join(m.bundleDir, filepath.FromSlash(h))); err == nil {
				return true
			}
		}
	}
	return false
}

// declared adds the files the job declares (a command case's fixtures, a prompt case's input
// files), each alone at its place in the job's skill directory, when a hidden path covers it:
// a case still reads its own fixtures, and only those.
func (m *mounter) declared(job *pb.Job) ([]sandbox.Mount, error) {
	skillDir := path.Clean("/" + job.GetSkillPath())
	for _, f := range job.GetFiles() {
		if !localPath(f) {
			continue // refused where the files are used (copyInputFiles); a command reads nothing there
		}
		p := path.Join(skillDir, f)
		if !m.coveredByHidden(p) {
			continue // shown with its directory
		}
		if _, err := os.Stat(filepath.Join(m.bundleDir, filepath.FromSlash(p))); err != nil {
			continue // the planner found it; a command that reads it now fails as it would have
		}
		m.add(p)
	}
	return m.mounts, nil
}

// coveredByHidden says p or one of its parents is hidden.
func (m *mounter) coveredByHidden(p string) bool {
	for q := p; q != "/"; q = path.Dir(q) {
		if m.hidden[q] {
			return true
		}
	}
	return false
}

// oldVersionMissing says why an old_skill job cannot run: its catalog holds no old version of
// its skill (the planner gives such a skill no old_skill jobs, so a job like this is a
// coordinator's mistake, not the skill's failure). "" when it can run.
func oldVersionMissing(job *pb.Job) string {
	if job.GetArm() != armOldSkill {
		return ""
	}
	for _, e := range job.GetCatalog() {
		if e.GetName() == job.GetSkill() && strings.HasPrefix(e.GetPath(), bundle.BaselineDir+"/") {
			return ""
		}
	}
	return fmt.Sprintf("an old_skill job, but the run's catalog holds no old version of skill %s", job.GetSkill())
}

// maxInputFileBytes bounds one input file a baseline job's input is copied from the worker
// (its skill directory is not mounted in the sandbox, or holds the old version).
const maxInputFileBytes = 16 << 20

// copyInputFilesIn copies the job's input files from its skill directory in the extracted
// bundle on the worker into the agent's work directory, through the sandbox's stdin: a
// baseline job's sandbox does not hold the current skill's directory to copy them from. A
// reason is returned when the job cannot run; an error is an infrastructure failure.
func copyInputFilesIn(ctx context.Context, sb Sandbox, job *pb.Job, bundleDir string, timeout time.Duration) (string, error) {
	for _, f := range job.GetFiles() {
		if !localPath(f) {
			return fmt.Sprintf("input file %q is not a path inside the skill directory", f), nil
		}
		src := filepath.Join(bundleDir, filepath.FromSlash(path.Clean("/"+job.GetSkillPath())), filepath.FromSlash(f))
		data, err := readCapped(src, maxInputFileBytes+1)
		if err != nil {
			return fmt.Sprintf("input file %q: %v", f, err), nil
		}
		if len(data) > maxInputFileBytes {
			return fmt.Sprintf("input file %q is larger than %d bytes", f, maxInputFileBytes), nil
		}
		res, err := sb.Exec(ctx, sandbox.ExecRequest{
			Cmd:   []string{"sh", "-c", `mkdir -p "$(dirname "$1")" && cat > "$1"`, "sh", path.Join(AgentWorkDir, f)},
			Stdin: data, WorkDir: AgentWorkDir, Timeout: timeout,
		})
		if err != nil {
			return "", fmt.Errorf("copying input files: %w", err)
		}
		if res.ExitCode != 0 || res.TimedOut || res.SandboxExited {
			msg, _ := trimText(string(res.Stderr), maxToolOutputStored)
			return fmt.Sprintf("copying the case's input file %s into %s failed (exit %d): %s", f, AgentWorkDir, res.ExitCode, msg), nil
		}
	}
	return "", nil
}
