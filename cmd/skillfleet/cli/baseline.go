package cli

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
)

// baselineHelp is the --baseline flag's help.
const baselineHelp = `run every prompt case a second time, in a baseline arm interleaved with the with_skill jobs: ` +
	`"without-skill" (the agent is not shown the skill), PATH (old_skill: the previous versions are the skills of the same names under another skills root) ` +
	`or "git:REV" (old_skill: the same roots at revision REV of their git repository); command cases run once`

// resolveBaseline turns the --baseline value into the plan's baseline. An old root at a git
// revision is written to a temporary directory that f.close removes.
func (f *suiteFlags) resolveBaseline(roots []string) error {
	v := f.baseline
	if f.maxCost < 0 || math.IsNaN(f.maxCost) || math.IsInf(f.maxCost, 0) {
		return usageErrorf("--max-cost must be a positive number of US dollars, got %v", f.maxCost)
	}
	if f.minEffect <= 0 || f.minEffect > 1 {
		return usageErrorf("--min-effect must be a fraction in (0, 1], got %v", f.minEffect)
	}
	if f.aa {
		if v != "" {
			return usageErrorf("--aa compares the with_skill arm with itself: it takes no --baseline")
		}
		f.base = suite.Baseline{Arm: suite.ArmA2}
		return nil
	}
	switch {
	case v == "":
		return nil
	case v == "without-skill" || v == string(suite.ArmWithoutSkill):
		f.base = suite.Baseline{Arm: suite.ArmWithoutSkill}
		return nil
	case strings.HasPrefix(v, "git:"):
		rev := strings.TrimPrefix(v, "git:")
		if rev == "" {
			return usageErrorf("--baseline git:REV needs a revision")
		}
		old, err := f.gitRoots(roots, rev)
		if err != nil {
			return err
		}
		f.base = suite.Baseline{Arm: suite.ArmOldSkill, Old: suite.LoadOld(old, skill.Options{Force: f.force})}
		return nil
	}
	if st, err := os.Stat(v); err != nil || !st.IsDir() {
		return usageErrorf("--baseline %q: want without-skill, git:REV or a skills directory", v)
	}
	f.base = suite.Baseline{Arm: suite.ArmOldSkill, Old: suite.LoadOld([]string{v}, skill.Options{Force: f.force})}
	return nil
}

// close removes what resolveBaseline wrote.
func (f *suiteFlags) close() {
	if f.tmp != "" {
		_ = os.RemoveAll(f.tmp)
		f.tmp = ""
	}
}

// gitRoots writes each root as it was at rev into a temporary directory (git archive: only
// what the revision holds, no working-tree change) and returns the old roots.
func (f *suiteFlags) gitRoots(roots []string, rev string) ([]string, error) {
	tmp, err := os.MkdirTemp("", "skillfleet-baseline-")
	if err != nil {
		return nil, failf("baseline: %v", err)
	}
	f.tmp = tmp
	var out []string
	for i, root := range roots {
		top, err := git(root, "rev-parse", "--show-toplevel")
		if err != nil {
			return nil, usageErrorf("--baseline git:%s: %s is not in a git repository: %v", rev, root, err)
		}
		if _, err := git(root, "rev-parse", "--verify", "--quiet", rev+"^{commit}"); err != nil {
			return nil, usageErrorf("--baseline git:%s: unknown revision in %s", rev, strings.TrimSpace(string(top)))
		}
		abs, err := filepath.Abs(root)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			return nil, failf("baseline: %v", err)
		}
		rel, err := filepath.Rel(strings.TrimSpace(string(top)), abs)
		if err != nil || !filepath.IsLocal(rel) && rel != "." {
			return nil, failf("baseline: %s is not inside its repository %s", root, top)
		}
		args := []string{"archive", "--format=tar", rev}
		if rel != "." {
			args = append(args, "--", filepath.ToSlash(rel))
		}
		data, err := git(strings.TrimSpace(string(top)), args...)
		if err != nil {
			return nil, usageErrorf("--baseline git:%s: %s at %s: %v", rev, root, rev, err)
		}
		dst := filepath.Join(tmp, fmt.Sprint(i))
		if err := untar(bytes.NewReader(data), dst); err != nil {
			return nil, failf("baseline: %v", err)
		}
		out = append(out, filepath.Join(dst, rel))
	}
	return out, nil
}

// git runs git in dir and returns its output; its stderr's first line is the error.
func git(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if msg, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n"); msg != "" {
			return nil, errors.New(msg)
		}
		return nil, err
	}
	return out, nil
}

// untar writes git archive's regular files and directories under dir; links and names that
// would leave dir are skipped (an old root's skill is read, never run, on this machine).
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.FromSlash(strings.TrimSuffix(h.Name, "/"))
		if !filepath.IsLocal(name) {
			continue
		}
		target := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			mode := os.FileMode(0o644)
			if h.Mode&0o111 != 0 {
				mode = 0o755
			}
			fh, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
			if err != nil {
				return err
			}
			_, err = io.Copy(fh, tr)
			if cerr := fh.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}
