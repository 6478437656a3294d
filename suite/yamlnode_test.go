package suite

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/skillfleet/skillfleet/assert"
	"github.com/skillfleet/skillfleet/internal/yamlstrict"
	"github.com/skillfleet/skillfleet/skill"
)

// aliasBomb is the shape: one anchored list of about itemBytes bytes and a list of
// aliases to it. The file stays small; following the aliases multiplies it.
func aliasBomb(aliases, itemBytes int) string {
	var b strings.Builder
	b.WriteString("name: bomb\ninput:\n  command: echo\nexpected:\n  stdout-json:\n    a: &a [")
	for i := range itemBytes / 12 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"xxxxxxxxx"`)
	}
	b.WriteString("]\n    b: [")
	b.WriteString(strings.TrimSuffix(strings.Repeat("*a,", aliases), ","))
	b.WriteString("]\n")
	return b.String()
}

// commandSkill writes a skill with one command case file and returns the suite root.
func commandSkill(t *testing.T, caseYAML string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "s")
	if err := os.MkdirAll(filepath.Join(dir, "tests", "cases"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: s\ndescription: hostile case files\n---\nbody\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tests", "cases", "c.yaml"), []byte(caseYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestHostileCaseFiles feeds case files built to exhaust the reader's memory and checks that
// each is refused with the file, the line and the rule, and plans no case.
func TestHostileCaseFiles(t *testing.T) {
	bigDoc := func(values int) string {
		return "name: big\ninput:\n  command: echo\nexpected:\n  stdout-json: [" +
			strings.TrimSuffix(strings.Repeat("1,", values), ",") + "]\n"
	}
	tests := []struct {
		name     string
		yaml     string
		rule     string
		line     int
		contains string
	}{
		{"alias bomb 215 KB, 999 aliases", aliasBomb(999, 215000), ruleAlias, 6, "anchor &a"},
		{"alias bomb 215 KB, 300 aliases", aliasBomb(300, 215000), ruleAlias, 6, "anchor &a"},
		{"nested laughs", "name: l\ninput: {command: echo}\nexpected:\n  stdout-json:\n    a: &a [x, x]\n    b: &b [*a, *a]\n    c: [*b, *b]\n", ruleAlias, 5, "anchor &a"},
		{"anchor only", "name: a\ninput: {command: &c echo}\nexpected: {exit-code: 0}\n", ruleAlias, 2, "anchor &c"},
		{"merge key", "name: m\nbase: &b {command: echo}\ninput: {<<: *b}\nexpected: {exit-code: 0}\n", ruleAlias, 2, "anchor &b"},
		{"stdout-json values", bigDoc(maxJSONNodes + 1), ruleTooLarge, 5, "more than 10000 values"},
		{"stdout-json bytes", "name: b\ninput: {command: echo}\nexpected:\n  stdout-json: {k: " + strings.Repeat("x", maxJSONBytes) + "}\n", ruleTooLarge, 4, "bytes as JSON"},
		{"file size", "name: f\ninput: {command: echo}\nexpected: {exit-code: 0}\n#" + strings.Repeat("x", maxCaseFileBytes), "cases.file", 0, "limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Load([]string{commandSkill(t, tt.yaml)}, skill.Options{})
			if n := len(s.Cases); n != 0 {
				t.Errorf("%d cases planned from a refused file", n)
			}
			for _, d := range s.Diagnostics {
				if d.Rule == tt.rule && d.Line == tt.line && strings.Contains(d.Message, tt.contains) &&
					strings.HasSuffix(d.File, filepath.Join("tests", "cases", "c.yaml")) {
					return
				}
			}
			t.Errorf("no %s at c.yaml:%d containing %q; got:\n%s", tt.rule, tt.line, tt.contains, diagText(".", s.Diagnostics))
		})
	}
}

// TestCaseFileLimitsAdmitRealDocuments keeps the caps honest: a document just under them loads.
func TestCaseFileLimitsAdmitRealDocuments(t *testing.T) {
	doc := "name: ok\ninput: {command: echo}\nexpected:\n  stdout-json: [" +
		strings.TrimSuffix(strings.Repeat("1,", maxJSONNodes-1), ",") + "]\n"
	s := Load([]string{commandSkill(t, doc)}, skill.Options{})
	if s.Diagnostics.HasErrors() || len(s.Cases) != 1 {
		t.Fatalf("a document within the caps was refused:\n%s", diagText(".", s.Diagnostics))
	}
}

// promptSkill writes a skill with a prompt cases file and returns the suite root.
func promptSkill(t *testing.T, casesYAML string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "p")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: p\ndescription: hostile assertions\ntest:\n  cases: cases.yaml\n---\nbody\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cases.yaml"), []byte(casesYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestAssertionCapsAtPlanTime checks that an assertion too costly to evaluate is refused when
// the suite is planned, with the file, the line and assertion.tooLarge, rather than shipped to a
// worker that would spend its CPU on it.
func TestAssertionCapsAtPlanTime(t *testing.T) {
	big := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		name     string
		root     func(t *testing.T) string
		file     string
		line     int
		contains string
	}{
		{"long pattern", func(t *testing.T) string {
			return promptSkill(t, "cases:\n  - name: c\n    input: hi\n    assertions:\n      output_matches:\n        - ok\n        - \""+big(160_000)+"\"\n")
		}, "cases.yaml", 7, "bytes, more than"},
		{"large program", func(t *testing.T) string {
			return promptSkill(t, "cases:\n  - name: c\n    input: hi\n    assertions:\n      output_matches: \"a{1000}b{1000}\"\n")
		}, "cases.yaml", 5, "instructions"},
		{"long substring", func(t *testing.T) string {
			return promptSkill(t, "cases:\n  - name: c\n    input: hi\n    assertions:\n      output_contains: \""+big(assert.MaxSubstringBytes+1)+"\"\n")
		}, "cases.yaml", 5, "bytes, more than"},
		{"long command substring", func(t *testing.T) string {
			return commandSkill(t, "name: c\ninput: {command: echo}\nexpected:\n  stdout-contains:\n    - \""+big(assert.MaxSubstringBytes+1)+"\"\n")
		}, "c.yaml", 5, "bytes, more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Load([]string{tt.root(t)}, skill.Options{})
			if len(s.Cases) != 0 {
				t.Errorf("%d cases planned", len(s.Cases))
			}
			for _, d := range s.Diagnostics {
				if d.Rule == ruleTooLarge && d.Line == tt.line && filepath.Base(d.File) == tt.file && strings.Contains(d.Message, tt.contains) {
					return
				}
			}
			t.Errorf("no %s at %s:%d containing %q; got:\n%s", ruleTooLarge, tt.file, tt.line, tt.contains, diagText(".", s.Diagnostics))
		})
	}
}

// TestCaseFileSyntaxLines checks that a YAML syntax error names the line an editor shows:
// yaml.v3 numbers its parser's errors from 0 and leaves the first line unnumbered.
func TestCaseFileSyntaxLines(t *testing.T) {
	tests := []struct {
		name, yaml string
		line       int
		message    string
	}{
		{"scanner error", "name: a\ninput:\n  command: \"echo\n", 3, "invalid YAML: line 3: found unexpected end of stream"},
		{"parser error", "name: a\ninput:\n  command: echo\n bad: 1\n", 4, "invalid YAML: line 4: did not find expected key"},
		{"first line", ": :\n", 1, "invalid YAML: did not find expected key"},
		{"lone CR breaks", "name: a\rinput:\r  command: echo\r bad: 1\r", 1, "invalid YAML: line 1: did not find expected key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Load([]string{commandSkill(t, tt.yaml)}, skill.Options{})
			for _, d := range s.Diagnostics {
				if d.Rule == "cases.yaml" && d.Line == tt.line && d.Message == tt.message {
					return
				}
			}
			t.Errorf("no cases.yaml at line %d saying %q; got:\n%s", tt.line, tt.message, diagText(".", s.Diagnostics))
		})
	}
}

// TestMappingDuplicateKeys: a repeated key is reported at each repetition with the line of its
// first occurrence, in a small mapping (scanned) as in a large one (looked up), and a key that
// is not a string never counts as a first occurrence.
func TestMappingDuplicateKeys(t *testing.T) {
	many := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString("k" + strings.Repeat("x", i) + ": 1\n")
		}
		return b.String()
	}
	tests := []struct {
		name, text string
		want       []string
	}{
		{"small", "a: 1\nb: 2\na: 3\nc: 4\na: 5\n", []string{
			`3 m has key "a" twice (first on line 1)`, `5 m has key "a" twice (first on line 1)`}},
		{"large", many(40) + "k: 2\nkxx: 3\n", []string{
			`41 m has key "k" twice (first on line 1)`, `42 m has key "kxx" twice (first on line 3)`}},
		{"non-string key first", "[a]: 1\na: 2\na: 3\n", []string{
			"1 m keys must be strings", `3 m has key "a" twice (first on line 2)`}},
	}
	for _, tt := range tests {
		root, problems := parseForTest(t, tt.text)
		if len(problems) > 0 {
			t.Fatalf("%s: %v", tt.name, problems)
		}
		r := &reader{file: "f.yaml"}
		pairs, ok := r.mapping(root, "m", "m", nil)
		var got []string
		for _, d := range r.diags {
			got = append(got, strconv.Itoa(d.Line)+" "+d.Message)
		}
		if !ok || strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("%s: diagnostics\n%s\nwant\n%s", tt.name, strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
		}
		if keys := len(root.Content)/2 - len(tt.want); len(pairs) != keys {
			t.Errorf("%s: %d pairs, want %d", tt.name, len(pairs), keys)
		}
	}
}

func parseForTest(t *testing.T, text string) (*yaml.Node, []yamlstrict.Problem) {
	t.Helper()
	return yamlstrict.Parse([]byte(text), yamlstrict.Options{})
}
