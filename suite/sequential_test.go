package suite

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/skill"
)

// TestRunsAuto reads `runs: auto` with its defaults and settings, in prompt and command
// cases, and refuses what the sequential test cannot work with, naming the line.
func TestRunsAuto(t *testing.T) {
	const skillMD = "---\nname: s\ndescription: A fixture. Use when testing runs auto.\ntest:\n  cases: cases.yaml\n---\n\nBody.\n"
	tests := []struct {
		name    string
		cases   string // a prompt case's extra keys
		command string // or a command case's file, when set
		config  string // test.config's keys, when set
		want    Case   // the fields checked: Sequential, Runs, MaxRuns, Delta, Alpha, Beta
		err     string // an error containing this, on line errLine
		errLine int
	}{
		{name: "defaults", cases: "runs: auto\n    confidence: 0.8",
			want: Case{Sequential: true, Runs: 20, MaxRuns: 20, Delta: 0.1, Alpha: 0.05, Beta: 0.05}},
		{name: "settings", cases: "runs: auto\n    max_runs: 50\n    confidence: 0.9\n    delta: 0.05\n    alpha: 0.1\n    beta: 0.2",
			want: Case{Sequential: true, Runs: 50, MaxRuns: 50, Delta: 0.05, Alpha: 0.1, Beta: 0.2}},
		{name: "command case", command: "name: c\nruns: auto\nconfidence: 0.7\nmax_runs: 10\ninput:\n  command: \"true\"\nexpected:\n  exit-code: 0\n",
			want: Case{Sequential: true, Runs: 10, MaxRuns: 10, Delta: 0.1, Alpha: 0.05, Beta: 0.05}},
		{name: "fixed runs untouched", cases: "runs: 5\n    confidence: 0.8", want: Case{Runs: 5}},
		{name: "confidence 1.0 cannot be tested", cases: "runs: auto", err: "a sequential test needs a zone inside it", errLine: 4},
		{name: "settings without auto", cases: "runs: 5\n    max_runs: 9", err: "apply to `runs: auto` only", errLine: 5},
		{name: "alpha too large", cases: "runs: auto\n    confidence: 0.8\n    alpha: 0.6", err: "error rates must lie in (0, 0.5)", errLine: 4},
		{name: "not auto", cases: "runs: often", err: "runs must be an integer", errLine: 4},
		{name: "test.config runs: auto", config: "runs: auto\n    confidence: 0.8\n    max_runs: 30\n    alpha: 0.1", cases: "description: inherits",
			want: Case{Sequential: true, Runs: 30, MaxRuns: 30, Delta: 0.1, Alpha: 0.1, Beta: 0.05}},
		{name: "a case's runs overrides test.config", config: "runs: auto\n    confidence: 0.8", cases: "runs: 3",
			want: Case{Runs: 3}},
		{name: "a case's settings add to test.config's", config: "runs: auto\n    confidence: 0.8", cases: "beta: 0.1",
			want: Case{Sequential: true, Runs: 20, MaxRuns: 20, Delta: 0.1, Alpha: 0.05, Beta: 0.1}},
		{name: "test.config on a command case", config: "runs: auto\n    confidence: 0.7", command: "name: c\ninput:\n  command: \"true\"\nexpected:\n  exit-code: 0\n",
			want: Case{Sequential: true, Runs: 20, MaxRuns: 20, Delta: 0.1, Alpha: 0.05, Beta: 0.05}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "s")
			md := skillMD
			if tt.config != "" {
				md = strings.Replace(md, "  cases: cases.yaml\n", "  cases: cases.yaml\n  config:\n    "+tt.config+"\n", 1)
			}
			files := map[string]string{"SKILL.md": md}
			if tt.command != "" {
				files["tests/cases/c.yaml"] = tt.command
				if tt.config == "" {
					files["SKILL.md"] = strings.Replace(md, "test:\n  cases: cases.yaml\n", "", 1)
				} else {
					files["cases.yaml"] = "cases:\n  - name: a\n    input: hi\n    assertions: {output_contains: [x]}\n"
				}
			} else {
				files["cases.yaml"] = "cases:\n  - name: a\n    input: hi\n    " + tt.cases + "\n    assertions: {output_contains: [x]}\n"
			}
			for name, body := range files {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			s := Load([]string{root}, skill.Options{})
			if tt.err != "" {
				for _, d := range s.Diagnostics {
					if d.Rule == "case.runs" && d.Line == tt.errLine && strings.Contains(d.Message, tt.err) {
						return
					}
				}
				t.Fatalf("no case.runs error at line %d containing %q; got:\n%s", tt.errLine, tt.err, diagText(root, s.Diagnostics))
			}
			if s.Diagnostics.HasErrors() || len(s.Cases) == 0 {
				t.Fatalf("%d cases; diagnostics:\n%s", len(s.Cases), diagText(root, s.Diagnostics))
			}
			c := s.Cases[0]
			for _, x := range s.Cases {
				if tt.command != "" && x.Name == "c" {
					c = x
				}
			}
			got := Case{Sequential: c.Sequential, Runs: c.Runs, MaxRuns: c.MaxRuns, Delta: c.Delta, Alpha: c.Alpha, Beta: c.Beta}
			w := tt.want
			if got.Sequential != w.Sequential || got.Runs != w.Runs || got.MaxRuns != w.MaxRuns || got.Delta != w.Delta || got.Alpha != w.Alpha || got.Beta != w.Beta {
				t.Errorf("got auto %v runs %d max %d δ %g α %g β %g; want %v %d %d %g %g %g",
					got.Sequential, got.Runs, got.MaxRuns, got.Delta, got.Alpha, got.Beta, w.Sequential, w.Runs, w.MaxRuns, w.Delta, w.Alpha, w.Beta)
			}
		})
	}
}

// autoCase is what `runs: auto` and its settings decide of a case.
type autoCase struct {
	Name          string
	Sequential    bool
	Runs, MaxRuns int
	Confidence    float64
	Delta         float64
	Alpha, Beta   float64
}

func autoOf(c *Case) autoCase {
	return autoCase{Name: c.Name, Sequential: c.Sequential, Runs: c.Runs, MaxRuns: c.MaxRuns, Confidence: c.Confidence,
		Delta: c.Delta, Alpha: c.Alpha, Beta: c.Beta}
}

// autoFixture writes the files of a skill named s (paths relative to its directory) under a
// new root, and loads it.
func autoFixture(t *testing.T, files map[string]string) (root string, s *Suite) {
	t.Helper()
	root = t.TempDir()
	for rel, body := range files {
		p := filepath.Join(root, "s", filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root, Load([]string{root}, skill.Options{})
}

// checkAuto checks a loaded fixture: an error of rule at file:line whose message holds err
// when err is set, else no error and the cases want (by name).
func checkAuto(t *testing.T, root string, s *Suite, want []autoCase, rule, file string, line int, err string) {
	t.Helper()
	if err != "" {
		for _, d := range s.Diagnostics {
			if d.Rule == rule && d.Line == line && strings.HasSuffix(filepath.ToSlash(d.File), "s/"+file) && strings.Contains(d.Message, err) {
				if d.Severity != diag.SeverityError {
					t.Errorf("%s is a %s, want an error", d.Rule, d.Severity)
				}
				return
			}
		}
		t.Fatalf("no %s error at %s:%d containing %q; got:\n%s", rule, file, line, err, diagText(root, s.Diagnostics))
	}
	if s.Diagnostics.HasErrors() {
		t.Fatalf("diagnostics:\n%s", diagText(root, s.Diagnostics))
	}
	var got []autoCase
	for _, c := range s.Cases {
		got = append(got, autoOf(c))
	}
	if !slices.Equal(got, want) {
		t.Errorf("cases\n got %+v\nwant %+v", got, want)
	}
}

// TestRunsAutoInEvals reads `runs: auto` and its settings in evals.json (skillfleet's keys
// beside the guide's): on an eval, at the top of the file as its evals' defaults, and from the
// skill's test.config; and refuses what the sequential test cannot work with, naming the
// file, line and rule, as in a cases file.
func TestRunsAutoInEvals(t *testing.T) {
	const plain = "---\nname: s\ndescription: A fixture. Use when testing runs auto in evals.\n---\n\nBody.\n"
	const withConfig = "---\nname: s\ndescription: A fixture. Use when testing runs auto in evals.\ntest:\n  cases: cases.yaml\n  config:\n    runs: auto\n    confidence: 0.7\n    max_runs: 40\n---\n\nBody.\n"
	const yamlCases = "cases:\n  - name: y\n    input: hi\n    assertions: {output_contains: [x]}\n"
	eval := func(id, extra string) string {
		return `{"id": "` + id + `", "prompt": "hi", "assertions": ["says hi"]` + extra + `}`
	}
	tests := []struct {
		name     string
		skillMD  string
		evals    string
		want     []autoCase
		rule     string
		line     int
		contains string
	}{
		{name: "an eval's own", evals: "{\"skill_name\": \"s\", \"evals\": [\n" + eval("a", `, "runs": "auto", "confidence": 0.8`) + ",\n" + eval("b", `, "runs": 3`) + "\n]}",
			want: []autoCase{
				{Name: "eval-a", Sequential: true, Runs: 20, MaxRuns: 20, Confidence: 0.8, Delta: 0.1, Alpha: 0.05, Beta: 0.05},
				{Name: "eval-b", Runs: 3, Confidence: 1},
			}},
		{name: "all settings", evals: "{\"skill_name\": \"s\", \"evals\": [\n" + eval("a", `, "runs": "auto", "confidence": 0.9, "max_runs": 60, "delta": 0.05, "alpha": 0.1, "beta": 0.2`) + "\n]}",
			want: []autoCase{{Name: "eval-a", Sequential: true, Runs: 60, MaxRuns: 60, Confidence: 0.9, Delta: 0.05, Alpha: 0.1, Beta: 0.2}}},
		{name: "the file's defaults, one eval overriding", evals: "{\"skill_name\": \"s\", \"runs\": \"auto\", \"confidence\": 0.8, \"max_runs\": 30,\n\"evals\": [\n" +
			eval("a", "") + ",\n" + eval("b", `, "runs": 5`) + ",\n" + eval("c", `, "beta": 0.1`) + "\n]}",
			want: []autoCase{
				{Name: "eval-a", Sequential: true, Runs: 30, MaxRuns: 30, Confidence: 0.8, Delta: 0.1, Alpha: 0.05, Beta: 0.05},
				{Name: "eval-b", Runs: 5, MaxRuns: 30, Confidence: 0.8},
				{Name: "eval-c", Sequential: true, Runs: 30, MaxRuns: 30, Confidence: 0.8, Delta: 0.1, Alpha: 0.05, Beta: 0.1},
			}},
		{name: "test.config's runs: auto", skillMD: withConfig, evals: "{\"skill_name\": \"s\", \"evals\": [\n" + eval("a", "") + ",\n" + eval("b", `, "max_runs": 10`) + "\n]}",
			want: []autoCase{
				{Name: "y", Sequential: true, Runs: 40, MaxRuns: 40, Confidence: 0.7, Delta: 0.1, Alpha: 0.05, Beta: 0.05},
				{Name: "eval-a", Sequential: true, Runs: 40, MaxRuns: 40, Confidence: 0.7, Delta: 0.1, Alpha: 0.05, Beta: 0.05},
				{Name: "eval-b", Sequential: true, Runs: 10, MaxRuns: 10, Confidence: 0.7, Delta: 0.1, Alpha: 0.05, Beta: 0.05},
			}},
		{name: "confidence 1.0 leaves no zone", evals: "{\"skill_name\": \"s\", \"evals\": [\n" + eval("a", "") + ",\n" + eval("b", `, "runs": "auto"`) + "\n]}",
			rule: "case.runs", line: 3, contains: "a sequential test needs a zone inside it"},
		{name: "settings without auto", evals: "{\"skill_name\": \"s\", \"evals\": [\n" + `{"id": "a", "prompt": "hi", "assertions": ["says hi"],` + "\n" + `"max_runs": 9}` + "\n]}",
			rule: "case.runs", line: 3, contains: "apply to `runs: auto` only"},
		{name: "alpha too large", evals: "{\"skill_name\": \"s\", \"evals\": [\n" + eval("a", `, "runs": "auto", "confidence": 0.8, "alpha": 0.6`) + "\n]}",
			rule: "case.runs", line: 2, contains: "error rates must lie in (0, 0.5)"},
		{name: "runs neither a number nor auto", evals: "{\"skill_name\": \"s\", \"evals\": [\n" + eval("a", `, "runs": "often"`) + "\n]}",
			rule: "case.runs", line: 2, contains: "runs must be an integer"},
		{name: "max_runs out of range", evals: "{\"skill_name\": \"s\", \"evals\": [\n" + eval("a", `, "runs": "auto", "confidence": 0.8, "max_runs": 5000`) + "\n]}",
			rule: "case.runs", line: 2, contains: "max_runs must be between 1 and 1000"},
		{name: "confidence out of range", evals: "{\"skill_name\": \"s\", \"evals\": [\n" + eval("a", `, "confidence": 1.5`) + "\n]}",
			rule: "case.confidence", line: 2, contains: "confidence must be in (0, 1]"},
		{name: "the file's defaults checked once, at the top", evals: "{\"skill_name\": \"s\",\n\"runs\": \"auto\",\n\"evals\": [\n" + eval("a", "") + ",\n" + eval("b", "") + "\n]}",
			rule: "case.runs", line: 2, contains: "a sequential test needs a zone inside it"},
		{name: "the file's settings without auto", evals: "{\"skill_name\": \"s\",\n\"delta\": 0.2,\n\"evals\": [\n" + eval("a", "") + "\n]}",
			rule: "case.runs", line: 2, contains: "apply to `runs: auto` only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"SKILL.md": cmp.Or(tt.skillMD, plain), "evals/evals.json": tt.evals}
			if tt.skillMD == withConfig {
				files["cases.yaml"] = yamlCases
			}
			root, s := autoFixture(t, files)
			checkAuto(t, root, s, tt.want, tt.rule, "evals/evals.json", tt.line, tt.contains)
			if n := len(s.Diagnostics); tt.rule != "" && n != 1 {
				t.Errorf("%d diagnostics, want the one:\n%s", n, diagText(root, s.Diagnostics))
			}
		})
	}
}

// TestRunsAutoInPluginEvals reads `runs: auto` and its settings in a `claude plugin eval`
// case (prompt.md's frontmatter or case.yaml, each setting once), and from the skill's
// test.config, which a case's own fixed runs overrides with Claude Code's every-run-must-pass;
// and refuses what the sequential test cannot work with, naming the file, line and rule.
func TestRunsAutoInPluginEvals(t *testing.T) {
	const plain = "---\nname: s\ndescription: A fixture. Use when testing runs auto in plugin evals.\n---\n\nBody.\n"
	// test.config needs a cases file beside it (the RFC's test.cases).
	const withConfig = "---\nname: s\ndescription: A fixture. Use when testing runs auto in plugin evals.\ntest:\n  cases: cases.yaml\n  config:\n    runs: auto\n    confidence: 0.7\n---\n\nBody.\n"
	const yamlCases = "cases:\n  - name: y\n    input: hi\n    runs: 2\n    assertions: {output_contains: [x]}\n"
	const grader = "---\ntype: regex\npattern: ok\n---\n"
	tests := []struct {
		name     string
		skillMD  string
		prompt   string // prompt.md of case c
		caseYAML string // its case.yaml, when set
		want     []autoCase
		file     string
		rule     string
		line     int
		contains string
	}{
		{name: "Claude Code's default", prompt: "do it\n", want: []autoCase{{Name: "c", Runs: 3, Confidence: 1}}},
		{name: "in case.yaml", prompt: "do it\n", caseYAML: "runs: auto\nconfidence: 0.8\nmax_runs: 30\n",
			want: []autoCase{{Name: "c", Sequential: true, Runs: 30, MaxRuns: 30, Confidence: 0.8, Delta: 0.1, Alpha: 0.05, Beta: 0.05}}},
		{name: "split between prompt.md and case.yaml", prompt: "---\nruns: auto\ndelta: 0.05\n---\ndo it\n", caseYAML: "confidence: 0.9\nalpha: 0.1\nbeta: 0.1\n",
			want: []autoCase{{Name: "c", Sequential: true, Runs: 20, MaxRuns: 20, Confidence: 0.9, Delta: 0.05, Alpha: 0.1, Beta: 0.1}}},
		{name: "test.config's runs: auto", skillMD: withConfig, prompt: "do it\n",
			want: []autoCase{
				{Name: "y", Runs: 2, Confidence: 0.7},
				{Name: "c", Sequential: true, Runs: 20, MaxRuns: 20, Confidence: 0.7, Delta: 0.1, Alpha: 0.05, Beta: 0.05},
			}},
		{name: "a fixed runs overrides test.config, every run passing", skillMD: withConfig, prompt: "do it\n", caseYAML: "runs: 4\n",
			want: []autoCase{{Name: "y", Runs: 2, Confidence: 0.7}, {Name: "c", Runs: 4, Confidence: 1}}},
		{name: "set twice", prompt: "---\nmax_runs: 10\n---\ndo it\n", caseYAML: "runs: auto\nconfidence: 0.8\nmax_runs: 12\n",
			file: "evals/c/case.yaml", rule: "plugineval.duplicateSetting", line: 3, contains: "max_runs is set in both prompt.md and case.yaml (prompt.md:2)"},
		{name: "Claude Code's confidence leaves no zone", prompt: "do it\n", caseYAML: "\nruns: auto\n",
			file: "evals/c/case.yaml", rule: "case.runs", line: 2, contains: "a sequential test needs a zone inside it"},
		{name: "settings without auto", prompt: "---\nbeta: 0.1\n---\ndo it\n",
			file: "evals/c/prompt.md", rule: "case.runs", line: 2, contains: "apply to `runs: auto` only"},
		{name: "delta too wide", prompt: "do it\n", caseYAML: "runs: auto\nconfidence: 0.8\ndelta: 0.3\n",
			file: "evals/c/case.yaml", rule: "case.runs", line: 1, contains: "leaves (0, 1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"SKILL.md": cmp.Or(tt.skillMD, plain), "evals/c/prompt.md": tt.prompt, "evals/c/graders/g.md": grader}
			if tt.skillMD == withConfig {
				files["cases.yaml"] = yamlCases
			}
			if tt.caseYAML != "" {
				files["evals/c/case.yaml"] = tt.caseYAML
			}
			root, s := autoFixture(t, files)
			checkAuto(t, root, s, tt.want, tt.rule, tt.file, tt.line, tt.contains)
		})
	}
}
