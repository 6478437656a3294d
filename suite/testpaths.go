package suite

import (
	"path"
	"path/filepath"

	"github.com/skillfleet/skillfleet/skill"
)

// The directories of a skill that hold its test definitions whatever its frontmatter says:
// command cases and their configuration (tests/cases/*.yaml, tests/test-config.json) and
// evals (evals/evals.json, plugin eval cases with their graders and baseline transcripts).
const (
	testsDir = "tests"
	evalsDir = "evals"
)

// TestPaths are the paths, relative to the skill directory and slash-separated, of a skill's
// test definitions: the cases file its `test.cases` names, tests/ and evals/, whether or not
// they exist. They hold every case's input, expected strings, patterns and judge criteria,
// so no job's sandbox shows them (worker skillMounts): an agent that could read its test could
// answer to it instead of doing the task. Input files and fixtures live there too; a case
// still gets the ones it declares (Case.Files), and only those. The files stay in the bundle
// and in the skill's digest, so a changed test file changes the changed-only key as before.
func TestPaths(s *skill.Skill) []string {
	out := []string{testsDir, evalsDir}
	if s.Test == nil || s.Test.Cases == "" {
		return out
	}
	p := path.Clean(filepath.ToSlash(s.Test.Cases))
	if !filepath.IsLocal(filepath.FromSlash(p)) || p == testsDir || p == evalsDir {
		return out // refused by validation (test.cases), or already hidden
	}
	return append(out, p)
}
