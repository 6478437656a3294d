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
)

// baselineJob reports whether the job runs in a baseline arm.
func baselineJob(job *pb.Job) bool {
	return job.GetArm() != "" && job.GetArm() != armWithSkill
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

// skillMounts is what a prompt job sees of its bundle under SkillsMount. A with_skill job of a
// bundle without old versions sees the whole bundle, one mount. Any other job sees only the
// directories of its catalog's skills, each at its sandbox path: a without_skill job cannot
// find the skill it is run without, an old_skill job finds the old version where the skill
// would be, and no job finds the bundle's old versions it was not shown.
func skillMounts(job *pb.Job, bundleDir string) []sandbox.Mount {
	if !baselineJob(job) {
		if _, err := os.Stat(filepath.Join(bundleDir, bundle.BaselineDir)); err != nil {
			return []sandbox.Mount{{Source: bundleDir, Target: SkillsMount}}
		}
	}
	mounts := make([]sandbox.Mount, 0, len(job.GetCatalog()))
	for _, e := range job.GetCatalog() {
		// Cleaned against a root: a catalog path can never leave the bundle.
		dir := path.Dir(path.Clean("/" + e.GetPath()))
		if dir == "/" {
			continue // a SKILL.md at the bundle's root is no skill directory of a bundle
		}
		mounts = append(mounts, sandbox.Mount{
			Source: filepath.Join(bundleDir, filepath.FromSlash(dir)),
			Target: path.Join(SkillsMount, sandboxPath(dir[1:])),
		})
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
