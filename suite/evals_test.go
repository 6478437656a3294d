package suite

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/assert"
	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/internal/testutil"
	"github.com/skillfleet/skillfleet/skill"
)

// TestEvalCases reads a valid evals.json beside a YAML cases file: both are read, and each
// eval becomes a prompt case with its prompt, input files, reference and criteria.
func TestEvalCases(t *testing.T) {
	root := filepath.Join("testdata", "evals", "good")
	s := Load([]string{root}, skill.Options{})
	for _, d := range s.Diagnostics {
		if d.Severity == diag.SeverityError {
			t.Fatalf("unexpected error: %s", d)
		}
	}
	// The extra "category" key is reported, not refused: other tools add fields of their own.
	if len(s.Diagnostics) != 1 || s.Diagnostics[0].Rule != "evals.unknownKey" || s.Diagnostics[0].Line != 21 {
		t.Errorf("diagnostics = %v, want one evals.unknownKey warning on line 21", s.Diagnostics)
	}
	type want struct {
		name, description, input, reference string
		files                               []string
		criteria                            []string
		line                                int
	}
	tests := []want{
		{name: "yaml-case", input: "say hi", line: 2},
		{
			name: "eval-1", input: "Find the best month in evals/files/sales.csv.",
			reference: "Names february as the best month, with revenue 20.",
			files:     []string{"evals/files/sales.csv"},
			criteria:  []string{"The answer names february", "The answer gives the revenue 20"}, line: 4,
		},
		{
			name: "eval-clean-emails", description: "Missing emails are counted",
			input: "How many rows of evals/files/people.csv lack an email?", reference: "One row lacks an email.",
			files:    []string{"evals/files/people.csv", "evals/files/sales.csv"},
			criteria: []string{"The answer says one row lacks an email"}, line: 14,
		},
		{
			// No assertions yet: the expected output is the one criterion.
			name: "eval-7", input: "Summarise the skill in one line.", reference: "A one-line summary of what the skill does.",
			criteria: []string{"A one-line summary of what the skill does."}, line: 23,
		},
	}
	if len(s.Cases) != len(tests) {
		t.Fatalf("%d cases, want %d", len(s.Cases), len(tests))
	}
	for i, tt := range tests {
		c := s.Cases[i]
		t.Run(tt.name, func(t *testing.T) {
			if c.Name != tt.name || c.Kind != KindPrompt || c.Input != tt.input || c.Reference != tt.reference || c.Description != tt.description {
				t.Errorf("case = %q %s %q ref %q desc %q; want %+v", c.Name, c.Kind, c.Input, c.Reference, c.Description, tt)
			}
			if c.Line != tt.line {
				t.Errorf("line %d, want %d", c.Line, tt.line)
			}
			if !slices.Equal(c.Files, tt.files) {
				t.Errorf("files %v, want %v", c.Files, tt.files)
			}
			// The skill's test config applies to its evals too.
			if c.Timeout.Seconds() != 45 || c.Parallel || c.Runs != 1 {
				t.Errorf("timeout %s parallel %v runs %d, want the skill's 45s, serial, 1 run", c.Timeout, c.Parallel, c.Runs)
			}
			if tt.criteria == nil {
				return
			}
			var got []string
			for _, a := range c.Assertions {
				if a.Type != assert.SemanticMatch || a.Line < 1 {
					t.Errorf("assertion %+v is not a located semantic_match", a)
				}
				got = append(got, a.Value)
			}
			if !slices.Equal(got, tt.criteria) {
				t.Errorf("criteria %q, want %q", got, tt.criteria)
			}
			if !c.HasSemantic() {
				t.Error("an eval case does not need the judge")
			}
		})
	}
}

// TestEvalRuleLines pins the rule and line of each evals.json problem the goldens show.
func TestEvalRuleLines(t *testing.T) {
	tests := []struct {
		fixture, rule string
		line          int
		contains      string
	}{
		{"evals-both", "evals.assertions", 8, `both "assertions" and "expectations"`},
		{"evals-skill-name", "evals.skillName", 2, `"csv-analyzer" does not match`},
		{"evals-files", "evals.files", 5, "escapes the skill directory"},
		{"evals-files", "evals.files", 6, "escapes the skill directory"},
		{"evals-files", "evals.files", 7, "does not exist"},
		{"evals-files", "evals.files", 8, "not a regular file"},
		{"evals-malformed", "evals.json", 5, "invalid JSON"},
		{"evals-not-list", "evals.type", 3, "must be a list"},
		{"evals-collide", "case.duplicateName", 3, `"eval-1"`},
		{"evals-types", "evals.id", 4, "got a boolean"},
		{"evals-types", "evals.prompt", 5, "must be a string, got a number"},
		{"evals-types", "evals.type", 6, "list of strings, got a mapping"},
		{"evals-types", "evals.type", 7, "expected_output must be a string"},
		{"evals-types", "evals.type", 8, "item must be a string"},
		{"evals-types", "evals.id", 9, "got -1"},
		{"evals-types", "evals.id", 10, `"a b"`},
		{"evals-types", "evals.type", 12, "eval must be"},
		{"evals-types", "evals.id", 13, "no id"},
		{"evals-types", "evals.prompt", 14, "no prompt"},
		{"evals-types", "evals.prompt", 15, "empty prompt"},
		{"evals-types", "evals.noAssertion", 16, "neither assertions nor an expected_output"},
		{"evals-types", "evals.assertions", 17, "item is empty"},
		{"evals-types", "evals.duplicateId", 19, `"eval-15"`},
		{"evals-types", "evals.duplicateKey", 20, `"id" twice`},
	}
	for _, tt := range tests {
		t.Run(tt.fixture+"/"+tt.rule, func(t *testing.T) {
			s := Load([]string{filepath.Join("testdata", "bad", tt.fixture)}, skill.Options{})
			for _, d := range s.Diagnostics {
				if d.Rule == tt.rule && d.Line == tt.line && strings.Contains(d.Message, tt.contains) {
					if d.Severity != diag.SeverityError {
						t.Errorf("%s has severity %s, want error", d.Rule, d.Severity)
					}
					if !strings.HasSuffix(filepath.ToSlash(d.File), "s/evals/evals.json") {
						t.Errorf("%s names file %s, want the evals.json", d.Rule, d.File)
					}
					return
				}
			}
			t.Errorf("no %s at line %d containing %q; got:\n%s", tt.rule, tt.line, tt.contains, diagText(".", s.Diagnostics))
		})
	}
	// A file-level problem plans no eval of the file; an eval's own problem only that eval.
	for fixture, wantCases := range map[string]int{"evals-skill-name": 0, "evals-malformed": 0, "evals-files": 0, "evals-types": 1} {
		if n := len(Load([]string{filepath.Join("testdata", "bad", fixture)}, skill.Options{}).Cases); n != wantCases {
			t.Errorf("%s planned %d cases, want %d", fixture, n, wantCases)
		}
	}
}

// evalsSkill writes a skill named s whose evals/evals.json is data, and returns the root.
func evalsSkill(t *testing.T, data string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "s")
	if err := os.MkdirAll(filepath.Join(dir, "evals"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: s\ndescription: evals fixture\n---\nbody\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "evals", "evals.json"), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestEvalsHostile: files a hostile suite could write are refused with file, line and rule.
func TestEvalsHostile(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T) string
		rule  string
		line  int
	}{
		{"symlinked input file", func(t *testing.T) string {
			root := evalsSkill(t, `{"skill_name": "s", "evals": [{"id": 1, "prompt": "p", "expected_output": "e",
  "files": ["evals/leak.txt"]}]}`)
			secret := filepath.Join(t.TempDir(), "secret")
			if err := os.WriteFile(secret, []byte("token"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(secret, filepath.Join(root, "s", "evals", "leak.txt")); err != nil {
				t.Fatal(err)
			}
			return root
		}, "evals.files", 2},
		{"symlinked evals.json", func(t *testing.T) string {
			root := evalsSkill(t, "{}")
			outside := filepath.Join(t.TempDir(), "evals.json")
			if err := os.WriteFile(outside, []byte(`{"skill_name": "s", "evals": [{"id": 1, "prompt": "p", "expected_output": "e"}]}`), 0o644); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(root, "s", "evals", "evals.json")
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, p); err != nil {
				t.Fatal(err)
			}
			return root
		}, "evals.file", 0},
		{"larger than 1 MiB", func(t *testing.T) string {
			return evalsSkill(t, `{"skill_name": "s", "evals": [`+strings.Repeat(" ", maxCaseFileBytes)+`]}`)
		}, "evals.file", 0},
		{"too many values", func(t *testing.T) string {
			return evalsSkill(t, "{\"skill_name\": \"s\",\n\"evals\": ["+strings.TrimSuffix(strings.Repeat("0,", maxEvalNodes), ",")+"]}")
		}, "evals.tooLarge", 2},
		{"too many evals", func(t *testing.T) string {
			return evalsSkill(t, "{\"skill_name\": \"s\",\n\"evals\": ["+strings.TrimSuffix(strings.Repeat("{},", maxEvals+1), ",")+"]}")
		}, "evals.tooLarge", 2},
		{"nested too deep", func(t *testing.T) string {
			return evalsSkill(t, "{\"skill_name\": \"s\", \"x\":\n"+strings.Repeat("[", 5000)+strings.Repeat("]", 5000)+"}")
		}, "evals.tooLarge", 2},
		{"not an object", func(t *testing.T) string { return evalsSkill(t, "\n[1]") }, "evals.type", 2},
		{"empty", func(t *testing.T) string { return evalsSkill(t, "") }, "evals.json", 1},
		{"no evals", func(t *testing.T) string { return evalsSkill(t, `{"skill_name": "s"}`) }, "evals.empty", 1},
		{"empty evals", func(t *testing.T) string { return evalsSkill(t, "{\"skill_name\": \"s\",\n \"evals\": []}") }, "evals.empty", 2},
		{"no skill_name", func(t *testing.T) string {
			return evalsSkill(t, `{"evals": [{"id": 1, "prompt": "p", "expected_output": "e"}]}`)
		}, "evals.skillName", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Load([]string{tt.setup(t)}, skill.Options{})
			if len(s.Cases) != 0 {
				t.Errorf("%d cases planned from a refused file", len(s.Cases))
			}
			for _, d := range s.Diagnostics {
				if d.Rule == tt.rule && d.Line == tt.line && d.Severity == diag.SeverityError {
					return
				}
			}
			t.Errorf("no %s error at line %d; got:\n%s", tt.rule, tt.line, diagText(".", s.Diagnostics))
		})
	}
}

// TestLineOf pins the byte offset → line conversion the JSON errors use.
func TestLineOf(t *testing.T) {
	data := []byte("a\nbc\n\nd")
	for _, tt := range []struct {
		off  int64
		line int
	}{{-1, 1}, {0, 1}, {1, 1}, {2, 2}, {5, 3}, {6, 4}, {100, 4}} {
		if got := lineOf(data, tt.off); got != tt.line {
			t.Errorf("lineOf(%d) = %d, want %d", tt.off, got, tt.line)
		}
	}
}

// FuzzEvalCases: no input panics, and every case the reader accepts is runnable.
func FuzzEvalCases(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", "evals", "good", "s", "evals", "evals.json")); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"skill_name":"s","evals":[{"id":1,"prompt":"p","assertions":["a"],"expectations":["b"]}]}`))
	f.Add([]byte(`{"skill_name":"s","evals":[{"id":1e99,"prompt":"p","expected_output":"e","files":["../x"]}]}`))
	f.Add([]byte(`[[[[{"a":`))
	sk := &skill.Skill{Name: "s", Dir: filepath.Join("testdata", "evals", "good", "s")}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &reader{file: "evals.json"}
		for _, c := range r.evalCases(sk, data) {
			if !strings.HasPrefix(c.Name, EvalCasePrefix) || strings.TrimSpace(c.Input) == "" || len(c.Assertions) == 0 {
				t.Fatalf("invalid case accepted: %+v", c)
			}
			for _, a := range c.Assertions {
				if a.Type != assert.SemanticMatch || strings.TrimSpace(a.Value) == "" {
					t.Fatalf("invalid assertion accepted: %+v", a)
				}
			}
		}
	})
}

// TestEvalsPlanGolden: evals are planned as prompt jobs beside the YAML cases.
func TestEvalsPlanGolden(t *testing.T) {
	root := filepath.Join("testdata", "evals", "good")
	s := Load([]string{root}, skill.Options{})
	p, err := s.Plan(PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, filepath.Join("testdata", "golden", "evals.plan.json"), planJSON(t, p))
}
