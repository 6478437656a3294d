package suite

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/internal/testutil"
	"github.com/skillfleet/skillfleet/skill"
)

// pluginEvalJSON renders the cases of a suite with their mapped assertions, and the jobs of a
// plan, for the golden file: what each grader became is the contract of the mapping.
func pluginEvalJSON(t *testing.T, s *Suite, p *Plan) []byte {
	t.Helper()
	type assertion struct {
		Type      string   `json:"type"`
		Value     string   `json:"value,omitempty"`
		Path      string   `json:"path,omitempty"`
		ArgsMatch string   `json:"args_match,omitempty"`
		Min       int      `json:"min,omitempty"`
		Max       *int64   `json:"max,omitempty"`
		Names     []string `json:"names,omitempty"`
		Votes     int      `json:"votes,omitempty"`
		Line      int      `json:"line"`
	}
	type kase struct {
		Name            string      `json:"name"`
		Description     string      `json:"description,omitempty"`
		Input           string      `json:"input"`
		Reference       string      `json:"reference,omitempty"`
		Runs            int         `json:"runs"`
		Confidence      float64     `json:"confidence"`
		TimeoutMS       int64       `json:"timeout_ms"`
		DefaultBaseline Arm         `json:"default_baseline"`
		File            string      `json:"file"`
		Assertions      []assertion `json:"assertions"`
	}
	type job struct {
		ID    string `json:"id"`
		Case  string `json:"case"`
		Epoch int    `json:"epoch"`
		Agent string `json:"agent"`
		Arm   Arm    `json:"arm"`
	}
	out := struct {
		Cases []kase `json:"cases"`
		Jobs  []job  `json:"jobs"`
	}{}
	for _, c := range s.Cases {
		k := kase{Name: c.Name, Description: c.Description, Input: c.Input, Reference: c.Reference, Runs: c.Runs,
			Confidence: c.Confidence, TimeoutMS: c.Timeout.Milliseconds(), DefaultBaseline: c.DefaultBaseline,
			File: filepath.ToSlash(c.File)}
		for _, a := range c.Assertions {
			as := assertion{Type: string(a.Type), Value: a.Value, Path: a.Path, ArgsMatch: a.ArgsMatch, Min: a.Min, Names: a.Names, Votes: a.Votes, Line: a.Line}
			if a.MaxSet || a.Max != 0 {
				as.Max = &a.Max
			}
			k.Assertions = append(k.Assertions, as)
		}
		out.Cases = append(out.Cases, k)
	}
	for _, j := range p.Jobs {
		out.Jobs = append(out.Jobs, job{j.ID, j.Case.Name, j.Epoch, j.Agent, j.Arm})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestPluginEvalCases loads a `claude plugin eval` suite that uses every grader kind, and plans
// it with and without the without_skill baseline its cases ask for by default.
func TestPluginEvalCases(t *testing.T) {
	root := filepath.Join("testdata", "plugineval", "good")
	s := Load([]string{root}, skill.Options{})
	if s.Diagnostics.HasErrors() {
		t.Fatalf("errors loading a valid suite:\n%s", diagText(root, s.Diagnostics))
	}
	// The warnings: the unscored grader is not run, and tags are not filters here.
	testutil.Golden(t, filepath.Join("testdata", "golden", "plugineval.diags.txt"), diagText(root, s.Diagnostics))
	if len(s.Cases) != 2 {
		t.Fatalf("%d cases, want 2 (a directory of input files is not a case)", len(s.Cases))
	}
	agents := []string{"builtin"}
	without, err := s.Plan(PlanOptions{Agents: agents, Baseline: Baseline{Arm: ArmWithoutSkill}})
	if err != nil {
		t.Fatal(err)
	}
	if len(without.Diagnostics) != 0 {
		t.Errorf("a without_skill run warns: %v", without.Diagnostics)
	}
	// notes-written runs 2 epochs (its prompt.md), notes-like-reference Claude Code's 3; each in both arms.
	if n := len(without.Jobs); n != (2+3)*2 {
		t.Errorf("%d jobs, want 10", n)
	}
	testutil.Golden(t, filepath.Join("testdata", "golden", "plugineval.plan.json"), pluginEvalJSON(t, s, without))

	// Without --baseline the cases run in the with_skill arm only, and the plan says so once.
	plain, err := s.Plan(PlanOptions{Agents: agents})
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.Jobs) != 5 || len(plain.Diagnostics) != 1 || plain.Diagnostics[0].Rule != "plan.defaultBaseline" ||
		plain.Diagnostics[0].Severity != diag.SeverityWarning || !strings.Contains(plain.Diagnostics[0].Message, "--baseline without-skill") {
		t.Errorf("plan without a baseline: %d jobs, diagnostics %v; want 5 jobs and one plan.defaultBaseline warning", len(plain.Jobs), plain.Diagnostics)
	}
}

// TestPluginEvalRuleLines pins the rule and line of decisive diagnostics of the bad fixtures,
// and that a case with a problem is left out while its neighbours are not affected.
func TestPluginEvalRuleLines(t *testing.T) {
	tests := []struct {
		fixture, file, rule string
		line                int
	}{
		{"plugineval-unmapped", "trace/graders/g.md", "plugineval.unmapped", 3},
		{"plugineval-unmapped", "not-contains/graders/g.md", "plugineval.unmapped", 4},
		{"plugineval-unmapped", "with-only/graders/g.md", "plugineval.unmapped", 4},
		{"plugineval-unmapped", "both-judged/graders/b.md", "plugineval.reference", 2},
		{"plugineval-malformed", "bad-yaml/graders/g.md", "cases.yaml", 3},
		{"plugineval-malformed", "unknown-key/graders/g.md", "plugineval.grader", 3},
		{"plugineval-malformed", "bad-regex/graders/g.md", "case.regex", 3},
		{"plugineval-malformed", "runs-twice/case.yaml", "plugineval.duplicateSetting", 1},
		{"plugineval-malformed", "scaffold/case.yaml", "plugineval.unsupported", 2},
		{"plugineval-malformed", "empty-prompt/prompt.md", "plugineval.prompt", 4},
	}
	for _, tt := range tests {
		t.Run(tt.fixture+"/"+tt.file, func(t *testing.T) {
			s := Load([]string{filepath.Join("testdata", "bad", tt.fixture)}, skill.Options{})
			for _, d := range s.Diagnostics {
				if d.Rule == tt.rule && d.Line == tt.line && strings.HasSuffix(filepath.ToSlash(d.File), "s/evals/"+tt.file) {
					if d.Severity != diag.SeverityError {
						t.Errorf("%s is a %s, want an error", d.Rule, d.Severity)
					}
					return
				}
			}
			t.Errorf("no %s at %s:%d; got:\n%s", tt.rule, tt.file, tt.line, diagText(".", s.Diagnostics))
		})
	}
	for _, fixture := range []string{"plugineval-unmapped", "plugineval-malformed"} {
		if n := len(Load([]string{filepath.Join("testdata", "bad", fixture)}, skill.Options{}).Cases); n != 0 {
			t.Errorf("%s planned %d cases, want none", fixture, n)
		}
	}
}

// TestPluginEvalBounds: a grader file, a reference and a case's grader count are bounded like
// the other formats' files.
func TestPluginEvalBounds(t *testing.T) {
	write := func(t *testing.T, root, rel, text string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	skillMD := "---\nname: s\ndescription: A fixture skill for plugin-eval bounds. Use when testing the reader.\n---\n\n# S\n\nDo it.\n"
	tests := []struct {
		name  string
		files map[string]string
		rule  string
	}{
		{"big grader", map[string]string{"evals/c/graders/g.md": "---\ntype: llm\n---\n" + strings.Repeat("x", maxGraderBytes)}, "plugineval.tooLarge"},
		{"big reference", map[string]string{
			"evals/c/graders/g.md": "---\ntype: baseline\nbaseline_file: ref.txt\n---\n",
			"evals/c/ref.txt":      strings.Repeat("y", maxReferenceBytes+1),
		}, "plugineval.reference"},
		{"many graders", func() map[string]string {
			m := map[string]string{}
			for i := range maxGraders + 1 {
				m[fmt.Sprintf("evals/c/graders/g%03d.md", i)] = "---\ntype: regex\npattern: ok\n---\n"
			}
			return m
		}(), "plugineval.tooLarge"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			write(t, root, "s/SKILL.md", skillMD)
			write(t, root, "s/evals/c/prompt.md", "do it\n")
			for rel, text := range tt.files {
				write(t, root, "s/"+rel, text)
			}
			s := Load([]string{root}, skill.Options{})
			if len(s.Cases) != 0 {
				t.Errorf("%d cases planned, want none", len(s.Cases))
			}
			for _, d := range s.Diagnostics {
				if d.Rule == tt.rule && d.Severity == diag.SeverityError {
					return
				}
			}
			t.Errorf("no %s error; got:\n%s", tt.rule, diagText(root, s.Diagnostics))
		})
	}
}
