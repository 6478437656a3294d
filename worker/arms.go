package worker

import (
	"context"
	"fmt"
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
// what it requires, transitively: the closure digest of the key) are mounted whole. A prompt
// job is also shown a catalog of every skill, and its agent must be able to read any of
// their SKILL.md to activate it (activation cases would fail otherwise): each other catalog
// skill's SKILL.md is mounted alone, and the key covers every SKILL.md of the catalog, not
// the rest of those skills' files, which the job cannot reach. The arms still hold: a
// without_skill job cannot find the skill it is run without (its catalog omits it), an
// old_skill job finds the old versions where the skills would be, and no job finds the
// bundle's old versions it was not shown.
func skillMounts(job *pb.Job, bundleDir string) []sandbox.Mount {
	closure := job.GetClosure()
	if len(closure) == 0 {
		closure = []string{job.GetSkillPath()} // a job from a coordinator older than the field
	}
	whole := make(map[string]bool, len(closure))
	for _, p := range closure {
		whole[path.Clean("/" + p)[1:]] = true
	}
	var mounts []sandbox.Mount
	mounted := make(map[string]bool)
	dirMount := func(dir string) {
		// Cleaned against a root: a path can never leave the bundle.
		dir = path.Clean("/" + dir)
		if dir == "/" || mounted[dir] {
			return
		}
		mounted[dir] = true
		mounts = append(mounts, sandbox.Mount{
			Source: filepath.Join(bundleDir, filepath.FromSlash(dir)),
			Target: path.Join(SkillsMount, sandboxPath(dir[1:])),
		})
	}
	if job.GetKind() != pb.CaseKind_CASE_KIND_PROMPT {
		for _, p := range closure {
			dirMount(p)
		}
		return mounts
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
			dirMount(dir)
		default:
			mounts = append(mounts, sandbox.Mount{
				Source: filepath.Join(bundleDir, filepath.FromSlash(file)),
				Target: path.Join(SkillsMount, sandboxPath(file[1:])),
			})
		}
	}
	if !baselineJob(job) {
		// What the skill requires is in the catalog too; a closure path it lacks is still
		// the job's to read.
		for _, p := range closure {
			if !mounted[path.Clean("/"+p)] {
				dirMount(p)
			}
		}
	}
	return mounts
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
