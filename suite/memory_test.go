package suite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/skill"
)

// TestCasesHoldExactAssertions: a loaded case's assertions take no more room than they need.
// A plan keeps every case for as long as its run lasts, and a slice grown one assertion at a
// time holds up to twice its length (three assertions in the room of four).
func TestCasesHoldExactAssertions(t *testing.T) {
	for _, root := range []string{"../examples/skills", "testdata/evals", "testdata/plugineval", "testdata/files", "testdata/trajectory"} {
		s := Load([]string{root}, skill.Options{})
		if len(s.Cases) == 0 {
			t.Fatalf("%s: no cases", root)
		}
		for _, c := range s.Cases {
			if cap(c.Assertions) != len(c.Assertions) {
				t.Errorf("%s: case %s/%s holds %d assertions in room for %d", root, c.Skill.Name, c.Name, len(c.Assertions), cap(c.Assertions))
			}
		}
	}
}

// TestCasesHoldTheirOwnAssertions: cases read one after another into the reader's buffer each
// keep their own assertions, whatever their number.
func TestCasesHoldTheirOwnAssertions(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "greeter")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	md := "---\nname: greeter\ndescription: Greets people. Use when greeting.\ntest:\n  cases: cases.yaml\n---\nGreet.\n"
	cases := "cases:\n" +
		"  - name: one\n    input: greet Ada\n    assertions:\n      output_contains: Ada\n" +
		"  - name: two\n    input: greet Bob\n    assertions:\n      output_contains: Bob\n" +
		"  - name: three\n    input: greet all\n    assertions:\n      output_contains: [Ada, Bob]\n      output_not_contains: Eve\n" +
		"  - name: four\n    input: greet Cy\n    assertions:\n      output_contains: Cy\n"
	for name, text := range map[string]string{"SKILL.md": md, "cases.yaml": cases} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := Load([]string{root}, skill.Options{})
	if s.Diagnostics.HasErrors() {
		t.Fatal(s.Diagnostics)
	}
	want := map[string]string{"one": "Ada", "two": "Bob", "three": "Ada Bob Eve", "four": "Cy"}
	for _, c := range s.Cases {
		var got []string
		for _, a := range c.Assertions {
			got = append(got, a.Value)
		}
		if strings.Join(got, " ") != want[c.Name] {
			t.Errorf("case %s asserts %q, want %q", c.Name, got, want[c.Name])
		}
	}
}
