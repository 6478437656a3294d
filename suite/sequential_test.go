package suite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
