//go:build unix

package suite

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/skillfleet/skillfleet/skill"
)

// TestSpecialFilesNeverHang puts a named pipe where each case format keeps a file. Opening a
// FIFO for reading waits for a writer, so a loader that opens before it checks the type hangs
// here (the test binary's timeout is then the failure); each must be reported, naming the file,
// and skipped.
func TestSpecialFilesNeverHang(t *testing.T) {
	tests := []struct {
		name  string
		extra string // frontmatter lines
		dirs  []string
		files map[string]string // other files of the skill
		fifo  string            // below the skill directory
		rule  string
	}{
		{name: "prompt cases file", extra: "test:\n  cases: test/cases.yaml\n", dirs: []string{"test"}, fifo: "test/cases.yaml", rule: "test.cases"},
		{name: "evals.json", dirs: []string{"evals"}, fifo: "evals/evals.json", rule: ruleEvalsFile},
		{name: "command case", dirs: []string{"tests/cases"}, fifo: "tests/cases/a.yaml", rule: "cases.file"},
		{name: "command test config", dirs: []string{"tests/cases"}, fifo: "tests/test-config.json", rule: "testConfig.file"},
		{name: "plugin eval prompt", dirs: []string{"evals/c"}, fifo: "evals/c/prompt.md", rule: rulePEFile},
		{
			name: "plugin eval grader", dirs: []string{"evals/c/graders"},
			files: map[string]string{"evals/c/prompt.md": "Say hello.\n"},
			fifo:  "evals/c/graders/g.md", rule: rulePEFile,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "s")
			for _, d := range append([]string{""}, tt.dirs...) {
				if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(d)), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			src := "---\nname: s\ndescription: A fixture. Use when testing.\n" + tt.extra + "---\nbody\n"
			files := map[string]string{skill.FileName: src}
			for k, v := range tt.files {
				files[k] = v
			}
			for rel, content := range files {
				if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(rel)), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			fifo := filepath.Join(dir, filepath.FromSlash(tt.fifo))
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Skipf("no FIFO: %v", err)
			}
			s := Load([]string{dir}, skill.Options{})
			found := false
			for _, d := range s.Diagnostics {
				if d.Rule == tt.rule && d.Severity == "error" && strings.Contains(d.Message, "named pipe") {
					found = true
				}
			}
			if !found {
				t.Errorf("no %s error naming the named pipe: %v", tt.rule, s.Diagnostics)
			}
			if len(s.Cases) != 0 {
				t.Errorf("%d cases from a skill whose case file is a FIFO", len(s.Cases))
			}
		})
	}
}

// TestPlanSkipsSpecialFiles: a FIFO elsewhere in a skill (a script's pipe) is left out of the
// bundle, unopened, and named in a warning; the suite still plans (it failed on the file).
func TestPlanSkipsSpecialFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	for _, d := range []string{"test", "scripts"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		skill.FileName:    "---\nname: s\ndescription: A fixture. Use when testing.\ntest:\n  cases: test/cases.yaml\n---\nbody\n",
		"test/cases.yaml": "cases:\n  - name: a\n    input: hi\n    assertions:\n      output_contains: [\"x\"]\n",
	}
	for rel, content := range files {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(rel)), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fifo := filepath.Join(dir, "scripts", "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no FIFO: %v", err)
	}
	s := Load([]string{dir}, skill.Options{})
	if s.Diagnostics.HasErrors() {
		t.Fatalf("load: %v", s.Diagnostics)
	}
	p, err := s.Plan(PlanOptions{})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	if len(p.Jobs) != 1 {
		t.Errorf("%d jobs, want 1", len(p.Jobs))
	}
	found := false
	for _, d := range p.Diagnostics {
		if d.Rule == "bundle.specialFile" && d.File == fifo && strings.Contains(d.Message, "named pipe") {
			found = true
		}
	}
	if !found {
		t.Errorf("no bundle.specialFile warning for %s: %v", fifo, p.Diagnostics)
	}
}
