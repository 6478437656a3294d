package suite

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/bundle"
	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/internal/testutil"
	"github.com/skillfleet/skillfleet/skill"
)

// diagText renders diagnostics with paths relative to base, one per line.
func diagText(base string, diags diag.Diagnostics) []byte {
	var b bytes.Buffer
	for _, d := range diags {
		if r, err := filepath.Rel(base, d.File); err == nil {
			d.File = filepath.ToSlash(r)
		}
		b.WriteString(d.String() + "\n")
	}
	return b.Bytes()
}

// TestCaseFileErrors loads each fixture under testdata/bad and compares its diagnostics with a
// golden file; every fixture must produce at least one error and plan nothing from it.
func TestCaseFileErrors(t *testing.T) {
	dirs, err := os.ReadDir(filepath.Join("testdata", "bad"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		t.Run(d.Name(), func(t *testing.T) {
			root := filepath.Join("testdata", "bad", d.Name())
			s := Load([]string{root}, skill.Options{})
			if !s.Diagnostics.HasErrors() {
				t.Fatalf("no error reported for %s", d.Name())
			}
			for _, c := range s.Cases {
				if c.Name == "a" && d.Name() != "dup-name" {
					t.Errorf("case %q of a bad fixture was planned", c.Name)
				}
			}
			testutil.Golden(t, filepath.Join("testdata", "golden", "bad-"+d.Name()+".txt"), diagText(root, s.Diagnostics))
		})
	}
}

// TestRuleLines checks the rule id and line of the decisive diagnostic of each fixture, so a
// golden update cannot silently lose them.
func TestRuleLines(t *testing.T) {
	tests := []struct {
		fixture, rule string
		line          int
		contains      string
	}{
		{"typo-key", "assertion.unknownKey", 5, `did you mean "output_contains"`},
		{"no-input", "case.noInput", 2, "has no input"},
		{"no-assertion", "case.noAssertion", 2, "has no assertions"},
		{"no-assertion", "case.noAssertion", 6, "empty assertions block"},
		{"dup-name", "case.duplicateName", 6, `already has a case named "a"`},
		{"bad-regex", "case.regex", 7, "output_matches"},
		{"files", "assertion.path", 5, `"/etc/passwd" is absolute`},
		{"files", "assertion.path", 6, `"../outside.txt" leaves the directory`},
		{"empty-criterion", "case.criterion", 6, ""},
		{"missing-cases-file", "test.cases", 7, "does not exist"},
		{"escaping-cases-file", "test.cases", 7, "leaves the skill directory"},
		{"runs-confidence", "case.runs", 4, "between 1 and 1000"},
		{"runs-confidence", "case.confidence", 9, "(0, 1]"},
		{"runs-confidence", "case.confidence", 14, "got 0"},
		{"runs-confidence", "case.timeout", 15, "positive"},
		{"yaml-syntax", "cases.yaml", 0, "invalid YAML"},
		{"alias-bomb", "cases.alias", 0, "anchors and aliases are not allowed"},
		{"wrong-types", "case.name", 2, "must be a string"},
		{"wrong-types", "case.noInput", 3, "must be a string, got a list"},
		{"wrong-types", "case.runs", 4, "must be an integer"},
		{"wrong-types", "assertion.type", 6, "list of strings, got a mapping"},
		{"command-errors", "case.name", 1, "Bad_Name"},
		{"command-errors", "case.noAssertion", 1, "no `expected` block"},
		{"command-errors", "case.files", 4, "does not exist"},
		{"command-errors", "case.files", 4, "escapes the skill directory"},
		{"command-errors", "assertion.unknownKey", 5, `did you mean "stdout-contains"`},
		{"command-errors", "assertion.invalid", 6, "between 0 and 255"},
		{"command-errors", "case.noInput", 1, "no input.command"},
		{"command-errors", "testConfig.timeout", 2, "positive"},
		{"command-errors", "testConfig.env", 3, `"1BAD"`},
		{"command-errors", "testConfig.env", 3, "must be a string"},
		{"command-errors", "testConfig.unknownKey", 4, `"extra"`},
		{"command-errors", "testConfig.version", 1, `"version": 1`},
		{"bad-json-config", "testConfig.json", 4, "invalid JSON"},
		{"empty-cases", "cases.empty", 1, "at least one case"},
		{"votes", "case.votes", 7, "odd number from 1 to 9, got 2"},
		{"trajectory", "assertion.unknownKey", 5, `did you mean "tool_called"`},
		{"trajectory", "case.regex", 8, "tool_called: error parsing regexp"},
		{"trajectory", "assertion.invalid", 10, "min 3 is more than max 1"},
		{"trajectory", "assertion.invalid", 13, "has no `name`"},
		{"trajectory", "assertion.unknownKey", 15, `"times"`},
		{"trajectory", "assertion.type", 16, "got a list"},
		{"trajectory", "assertion.invalid", 17, "at least two tool names"},
		{"trajectory", "assertion.invalid", 18, "max_turns: the limit -1 is negative"},
		{"trajectory", "assertion.type", 19, "max_tool_calls must be an integer"},
		{"trajectory", "assertion.invalid", 20, "max_tokens: a limit of 0 tokens"},
		{"trajectory", "case.unknownSkill", 24, `"dpe" is neither skill s nor one it requires (did you mean "dep"?)`},
	}
	for _, tt := range tests {
		t.Run(tt.fixture+"/"+tt.rule, func(t *testing.T) {
			s := Load([]string{filepath.Join("testdata", "bad", tt.fixture)}, skill.Options{})
			for _, d := range s.Diagnostics {
				if d.Rule == tt.rule && (tt.line == 0 || d.Line == tt.line) && strings.Contains(d.Message, tt.contains) {
					if d.Severity != diag.SeverityError {
						t.Errorf("%s has severity %s, want error", d.Rule, d.Severity)
					}
					return
				}
			}
			t.Errorf("no %s at line %d containing %q; got:\n%s", tt.rule, tt.line, tt.contains, diagText(".", s.Diagnostics))
		})
	}
}

// planJSON renders a plan as `skillfleet plan --format json` does, minus diagnostics.
func planJSON(t *testing.T, p *Plan) []byte {
	t.Helper()
	type job struct {
		ID        string `json:"id"`
		Skill     string `json:"skill"`
		Case      string `json:"case"`
		Kind      Kind   `json:"kind"`
		Epoch     int    `json:"epoch"`
		TimeoutMS int64  `json:"timeout_ms"`
		Parallel  bool   `json:"parallel"`
		Agent     string `json:"agent,omitempty"`
	}
	out := struct {
		SuiteDigest string               `json:"suite_digest"`
		Skills      []bundle.SkillDigest `json:"skills"`
		Jobs        []job                `json:"jobs"`
	}{SuiteDigest: p.SuiteDigest, Skills: p.Skills}
	for _, j := range p.Jobs {
		out.Jobs = append(out.Jobs, job{j.ID, j.Case.Skill.Name, j.Case.Name, j.Case.Kind, j.Epoch, j.Case.Timeout.Milliseconds(), j.Case.Parallel, j.Agent})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

const examples = "../examples/skills"

func TestExamplePlan(t *testing.T) {
	s := Load([]string{examples}, skill.Options{})
	if s.Diagnostics.HasErrors() {
		t.Fatalf("example suite has errors:\n%s", diagText(examples, s.Diagnostics))
	}
	p, err := s.Plan(PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, filepath.Join("testdata", "golden", "examples.plan.json"), planJSON(t, p))

	// Every case kind and assertion type is exercised by the example suite.
	kinds := map[Kind]bool{}
	types := map[string]bool{}
	for _, c := range p.Cases {
		kinds[c.Kind] = true
		for _, a := range c.Assertions {
			types[string(a.Type)] = true
		}
	}
	for _, want := range []string{"output_contains", "output_not_contains", "output_matches", "semantic_match",
		"exit_code", "stdout_contains", "stderr_contains", "not_contains", "stdout_json"} {
		if !types[want] {
			t.Errorf("the example suite has no %s assertion", want)
		}
	}
	votes := 0
	for _, c := range p.Cases {
		for _, a := range c.Assertions {
			votes = max(votes, a.Votes)
		}
	}
	if votes != 3 {
		t.Errorf("the example suite's semantic_match with votes: 3 planned with votes %d", votes)
	}
	if !kinds[KindPrompt] || !kinds[KindCommand] {
		t.Errorf("the example suite lacks a case kind: %v", kinds)
	}
}

func TestPlanIsStable(t *testing.T) {
	root := t.TempDir()
	testutil.CopyTree(t, examples, root)
	plan := func() *Plan {
		s := Load([]string{root}, skill.Options{})
		p, err := s.Plan(PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := plan(), plan()
	if a.SuiteDigest != b.SuiteDigest || len(a.Jobs) != len(b.Jobs) {
		t.Fatalf("two plans differ: %s/%d vs %s/%d", a.SuiteDigest, len(a.Jobs), b.SuiteDigest, len(b.Jobs))
	}
	for i := range a.Jobs {
		if a.Jobs[i].ID != b.Jobs[i].ID {
			t.Fatalf("job %d id %s vs %s", i, a.Jobs[i].ID, b.Jobs[i].ID)
		}
	}
	// Editing a dependency changes its digest, every closure that contains it and the suite
	// digest, but not the job ids.
	script := filepath.Join(root, "logging-standards", "scripts", "logline.py")
	if err := os.WriteFile(script, []byte("print('changed')\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := plan()
	if c.SuiteDigest == a.SuiteDigest {
		t.Error("suite digest did not change after a file changed")
	}
	for _, name := range []string{"logging-standards", "deploy-checklist"} {
		if c.Skill(name).ClosureDigest == a.Skill(name).ClosureDigest {
			t.Errorf("closure digest of %s did not change", name)
		}
	}
	if c.Skill("env-selector").ClosureDigest != a.Skill("env-selector").ClosureDigest {
		t.Error("closure digest of env-selector changed though none of its files did")
	}
	for i := range a.Jobs {
		if a.Jobs[i].ID != c.Jobs[i].ID {
			t.Fatalf("job id changed with content: %s vs %s", a.Jobs[i].ID, c.Jobs[i].ID)
		}
	}
}

func TestPlanFilterAndAgents(t *testing.T) {
	s := Load([]string{examples}, skill.Options{})
	tests := []struct {
		name     string
		opts     PlanOptions
		wantJobs int
		wantErr  bool
	}{
		{name: "one skill", opts: PlanOptions{Filter: Filter{Skills: []string{"logging-*"}}}, wantJobs: 1},
		{name: "case glob", opts: PlanOptions{Filter: Filter{Cases: []string{"config-*"}}}, wantJobs: 2},
		{name: "no match", opts: PlanOptions{Filter: Filter{Skills: []string{"nope"}}}, wantJobs: 0},
		// env-selector: 4 prompt cases, one with runs: 5 → 8 prompt jobs per agent.
		{name: "two agents", opts: PlanOptions{Filter: Filter{Skills: []string{"env-selector"}}, Agents: []string{"a", "b"}}, wantJobs: 2*8 + 6},
		{name: "bad glob", opts: PlanOptions{Filter: Filter{Skills: []string{"["}}}, wantErr: true},
		// 11 command cases and 6 prompt cases (one from evals.json), one of them with runs: 5.
		{name: "command cases", opts: PlanOptions{Filter: Filter{Kinds: []Kind{KindCommand}}}, wantJobs: 11},
		{name: "prompt cases", opts: PlanOptions{Filter: Filter{Kinds: []Kind{KindPrompt}}}, wantJobs: 10},
		{name: "both kinds", opts: PlanOptions{Filter: Filter{Kinds: Kinds([]string{"prompt", "command"})}}, wantJobs: 21},
		{name: "kind and skill", opts: PlanOptions{Filter: Filter{Skills: []string{"env-selector"}, Kinds: []Kind{KindPrompt}}}, wantJobs: 8},
		{name: "unknown kind", opts: PlanOptions{Filter: Filter{Kinds: []Kind{"shell"}}}, wantErr: true},
		// The cap is inclusive: a plan of exactly MaxJobs jobs is made, one more is refused.
		{name: "at the job cap", opts: PlanOptions{Filter: Filter{Skills: []string{"env-selector"}}, Agents: []string{"a", "b"}, MaxJobs: 2*8 + 6}, wantJobs: 2*8 + 6},
		{name: "over the job cap", opts: PlanOptions{Filter: Filter{Skills: []string{"env-selector"}}, Agents: []string{"a", "b"}, MaxJobs: 2*8 + 5}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := s.Plan(tt.opts)
			if tt.wantErr {
				if err == nil {
					t.Fatal("want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Jobs) != tt.wantJobs {
				t.Fatalf("%d jobs, want %d", len(p.Jobs), tt.wantJobs)
			}
			seen := map[string]bool{}
			for _, j := range p.Jobs {
				if seen[j.ID] {
					t.Fatalf("duplicate job id %s", j.ID)
				}
				seen[j.ID] = true
			}
		})
	}
	// The refusal names the case that crossed the cap, by file and line.
	_, err := s.Plan(PlanOptions{Agents: []string{"a", "b"}, MaxJobs: 3})
	var tooMany *TooManyJobsError
	if !errors.As(err, &tooMany) || tooMany.File == "" || tooMany.Line < 1 || tooMany.Max != 3 || tooMany.Jobs <= 3 {
		t.Fatalf("over the cap: %v (%+v), want a *TooManyJobsError with file and line", err, tooMany)
	}
	if !strings.Contains(err.Error(), "plan.maxJobs") {
		t.Errorf("message %q does not name the rule", err)
	}
	// Filtering one skill still ships its dependencies.
	p, _ := s.Plan(PlanOptions{Filter: Filter{Skills: []string{"deploy-checklist"}}})
	var names []string
	for _, sd := range p.Skills {
		names = append(names, sd.Name)
	}
	if got := strings.Join(names, ","); got != "deploy-checklist,env-selector,logging-standards" {
		t.Errorf("bundle skills = %s, want deploy-checklist and its closure", got)
	}
}

// TestPlanExpand: a plan made without agents, expanded for two, runs each prompt case against
// both and each command case once, as planning with the two does; the limit is checked.
func TestPlanExpand(t *testing.T) {
	s := Load([]string{examples}, skill.Options{})
	agents := []string{"a", "b"}
	want, err := s.Plan(PlanOptions{Agents: agents})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan(PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		agents  []string
		maxJobs int
		want    *Plan
		tooMany bool
	}{
		{"same agents", nil, 0, p, false},
		{"two agents", agents, 0, want, false},
		{"over the limit", agents, len(want.Jobs) - 1, nil, true},
		{"at the limit", agents, len(want.Jobs), want, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := p.Expand(tt.agents, tt.maxJobs)
			var tm *TooManyJobsError
			if tt.tooMany {
				if !errors.As(err, &tm) {
					t.Fatalf("err = %v, want TooManyJobsError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Jobs) != len(tt.want.Jobs) || got.SuiteDigest != tt.want.SuiteDigest {
				t.Fatalf("%d jobs, digest %s; want %d, %s", len(got.Jobs), got.SuiteDigest, len(tt.want.Jobs), tt.want.SuiteDigest)
			}
			for i := range got.Jobs {
				if got.Jobs[i].ID != tt.want.Jobs[i].ID || got.Jobs[i].Agent != tt.want.Jobs[i].Agent {
					t.Fatalf("job %d: %s/%s, want %s/%s", i, got.Jobs[i].ID, got.Jobs[i].Agent, tt.want.Jobs[i].ID, tt.want.Jobs[i].Agent)
				}
			}
		})
	}
	if len(p.Jobs) == len(want.Jobs) {
		t.Fatal("the example suite has no prompt case: the test shows nothing")
	}
}
