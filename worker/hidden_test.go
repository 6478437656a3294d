package worker

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"testing"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/sandbox"
)

// hiddenBundle writes an extracted bundle whose skills hold test definitions: s (under test,
// requiring dep) with its RFC cases file beside a data file, command cases with fixtures and
// evals with an input file; dep with evals; other, in the catalog only; and an old version of
// s whose cases file sits at its root.
func hiddenBundle(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range []string{
		"s/SKILL.md", "s/scripts/run.sh", "s/test/cases.yaml", "s/test/data.txt",
		"s/tests/cases/c.yaml", "s/tests/test-config.json", "s/tests/fixtures/in.json", "s/tests/fixtures/other.json",
		"s/evals/evals.json", "s/evals/files/a.csv", "s/evals/review/prompt.md", "s/evals/review/graders/g.md",
		"dep/SKILL.md", "dep/lib.sh", "dep/evals/evals.json",
		"other/SKILL.md", "other/tests/cases/o.yaml",
		".skillfleet-baseline/s/SKILL.md", ".skillfleet-baseline/s/cases.yaml", ".skillfleet-baseline/s/tests/cases/c.yaml",
	} {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// visible is every file a sandbox with these mounts shows under SkillsMount, sorted.
func visible(t *testing.T, mounts []sandbox.Mount) []string {
	t.Helper()
	var out []string
	for _, m := range mounts {
		err := filepath.WalkDir(m.Source, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(m.Source, p)
			if err != nil {
				return err
			}
			out = append(out, path.Join(m.Target, filepath.ToSlash(rel)))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(out)
	return out
}

// TestSandboxesHideTheTests: whatever a job's kind and arm, its sandbox shows the skills'
// runtime files and none of the suite's test definitions (the cases file test.cases names,
// tests/, evals/), but for the files the case itself declares (issue 31); a job from a
// coordinator that names no hidden path still hides tests/ and evals/.
func TestSandboxesHideTheTests(t *testing.T) {
	bundleDir := hiddenBundle(t)
	hidden := []string{"s/tests", "s/evals", "s/test/cases.yaml", "dep/tests", "dep/evals"}
	entry := func(name, p string) *pb.CatalogEntry { return &pb.CatalogEntry{Name: name, Path: p} }
	current := []*pb.CatalogEntry{entry("dep", "dep/SKILL.md"), entry("other", "other/SKILL.md"), entry("s", "s/SKILL.md")}
	sRuntime := []string{"/skills/s/SKILL.md", "/skills/s/scripts/run.sh", "/skills/s/test/data.txt"}
	depRuntime := []string{"/skills/dep/SKILL.md", "/skills/dep/lib.sh"}
	tests := []struct {
		name string
		job  *pb.Job
		want []string
	}{
		{
			name: "command case with a fixture",
			job: &pb.Job{Kind: pb.CaseKind_CASE_KIND_COMMAND, SkillPath: "s", Closure: []string{"s", "dep"},
				Files: []string{"tests/fixtures/in.json"}, Hidden: hidden},
			want: append(append([]string{"/skills/s/tests/fixtures/in.json"}, sRuntime...), depRuntime...),
		},
		{
			name: "command case from a coordinator naming nothing hidden",
			job:  &pb.Job{Kind: pb.CaseKind_CASE_KIND_COMMAND, SkillPath: "s", Closure: []string{"s", "dep"}},
			// The cases file test.cases names is the coordinator's to know.
			want: append(append([]string{"/skills/s/test/cases.yaml"}, sRuntime...), depRuntime...),
		},
		{
			name: "prompt case with an input file",
			job: &pb.Job{Kind: pb.CaseKind_CASE_KIND_PROMPT, SkillPath: "s", Closure: []string{"s", "dep"},
				Files: []string{"evals/files/a.csv"}, Hidden: hidden, Catalog: current},
			want: append(append([]string{"/skills/other/SKILL.md", "/skills/s/evals/files/a.csv"}, sRuntime...), depRuntime...),
		},
		{
			name: "without_skill",
			job: &pb.Job{Kind: pb.CaseKind_CASE_KIND_PROMPT, Skill: "s", Arm: armWithoutSkill, SkillPath: "s", Closure: []string{"s", "dep"},
				Files: []string{"evals/files/a.csv"}, Hidden: hidden, Catalog: current[:2]},
			want: append([]string{"/skills/other/SKILL.md"}, depRuntime...),
		},
		{
			name: "old_skill",
			job: &pb.Job{Kind: pb.CaseKind_CASE_KIND_PROMPT, Skill: "s", Arm: armOldSkill, SkillPath: "s", Closure: []string{"s", "dep"},
				Hidden:  append(slices.Clone(hidden), ".skillfleet-baseline/s/cases.yaml"),
				Catalog: []*pb.CatalogEntry{current[0], current[1], entry("s", ".skillfleet-baseline/s/SKILL.md")}},
			want: append([]string{"/skills/other/SKILL.md", "/skills/s/SKILL.md"}, depRuntime...),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mounts, err := skillMounts(tt.job, bundleDir)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(tt.want)
			if got := visible(t, mounts); !slices.Equal(got, tt.want) {
				t.Errorf("the sandbox shows\n%q\nwant\n%q", got, tt.want)
			}
			targets := map[string]bool{}
			for _, m := range mounts {
				if targets[m.Target] {
					t.Errorf("%s mounted twice (the sandbox refuses that)", m.Target)
				}
				targets[m.Target] = true
			}
		})
	}
}
