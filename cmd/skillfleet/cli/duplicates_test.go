package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeSkill writes a minimal valid skill named name at dir/file.
func writeSkill(t *testing.T, dir, file, name string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, file)
	body := "---\nname: " + name + "\ndescription: A fixture skill. Use when testing discovery.\n---\n\nRun `make check`.\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDuplicateNamesSayWhichIsUsed: a skill defined in an agent's hidden folder and again in
// the repository's skills/ is reported by validate and deps with both paths and the one used.
func TestDuplicateNamesSayWhichIsUsed(t *testing.T) {
	root := t.TempDir()
	first := writeSkill(t, filepath.Join(root, ".claude", "skills", "fmt"), "SKILL.md", "fmt")
	second := writeSkill(t, filepath.Join(root, "skills", "fmt"), "SKILL.md", "fmt")
	for _, cmd := range []string{"validate", "deps"} {
		t.Run(cmd, func(t *testing.T) {
			code, out, errOut := run(cmd, root)
			if code != ExitErrors {
				t.Fatalf("exit %d, want %d\n%s%s", code, ExitErrors, out, errOut)
			}
			want := "discovery.duplicateName: skill \"fmt\" is defined twice in one root: " + first + " and " + second + "; " + first + " is used"
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		})
	}
}

// TestLowercaseSkillFile: a skill whose file is a lowercase skill.md is found in a root and
// can be named directly, as the reference validator allows.
func TestLowercaseSkillFile(t *testing.T) {
	root := t.TempDir()
	file := writeSkill(t, filepath.Join(root, "lower"), "skill.md", "lower")
	for _, path := range []string{root, filepath.Dir(file), file} {
		code, out, errOut := run("validate", path)
		if code != ExitOK || !strings.HasPrefix(out, "1 skill, 0 errors") {
			t.Errorf("validate %s: exit %d\n%s%s", path, code, out, errOut)
		}
	}
}
