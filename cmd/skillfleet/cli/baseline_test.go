package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/internal/testutil"
)

// TestPlanBaseline: plan shows each arm's job count; git:REV reads the roots at a revision of
// their repository, and is refused outside one or for an unknown revision.
func TestPlanBaseline(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	arms := filepath.Join("..", "..", "..", "suite", "testdata", "arms")
	repo := t.TempDir()
	skills := filepath.Join(repo, "skills")
	testutil.CopyTree(t, filepath.Join(arms, "old"), skills)
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "old"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	if err := os.RemoveAll(skills); err != nil {
		t.Fatal(err)
	}
	testutil.CopyTree(t, filepath.Join(arms, "current"), skills)

	tests := []struct {
		name     string
		args     []string
		code     int
		contains []string
	}{
		{name: "without", args: []string{"--baseline", "without-skill", skills}, contains: []string{"9 jobs (5 with_skill, 4 without_skill)", "stamp/approve [without_skill] #1"}},
		{name: "git", args: []string{"--baseline", "git:HEAD", skills}, contains: []string{"8 jobs (5 with_skill, 3 old_skill)", "warning plan.noOldSkill", "greeter/greet-bob [old_skill] #1"}},
		{name: "path", args: []string{"--baseline", filepath.Join(arms, "old"), skills}, contains: []string{"8 jobs (5 with_skill, 3 old_skill)"}},
		{name: "none", args: []string{skills}, contains: []string{"5 jobs, 0 errors"}},
		{name: "unknown rev", args: []string{"--baseline", "git:no-such-rev", skills}, code: ExitUsage, contains: []string{"unknown revision"}},
		{name: "not a repo", args: []string{"--baseline", "git:HEAD", filepath.Join(arms, "current")}, code: ExitUsage},
		{name: "bad value", args: []string{"--baseline", "sideways", skills}, code: ExitUsage, contains: []string{"want without-skill, git:REV or a skills directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "not a repo" {
				// The fixture lies in this module's repository: copy it out of any.
				dir := t.TempDir()
				testutil.CopyTree(t, filepath.Join(arms, "current"), dir)
				tt.args[len(tt.args)-1] = dir
			}
			code, stdout, stderr := run(append([]string{"plan"}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.code, stdout, stderr)
			}
			for _, want := range tt.contains {
				if !strings.Contains(stdout+stderr, want) {
					t.Errorf("output lacks %q:\n%s%s", want, stdout, stderr)
				}
			}
		})
	}
}
