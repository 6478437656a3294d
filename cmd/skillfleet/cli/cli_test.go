package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/internal/testutil"

	"github.com/skillfleet/skillfleet/skill"
)

const (
	good   = "testdata/skills"
	broken = "testdata/broken"
)

func run(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	testutil.Golden(t, filepath.Join("testdata", "golden", name), []byte(got))
}

func TestExitCodes(t *testing.T) {
	tests := []struct {
		args []string
		code int
	}{
		{[]string{"validate", good}, ExitOK},
		{[]string{"validate", broken}, ExitErrors},
		{[]string{"validate", broken + "/warn-only"}, ExitOK}, // warnings only
		{[]string{"validate", broken + "/lib"}, ExitOK},
		{[]string{"validate", broken + "/app"}, ExitErrors},
		{[]string{"validate", "--force", broken + "/app"}, ExitErrors}, // lib is still too old
		{[]string{"validate", good + "/integration-test-runner"}, ExitOK},
		{[]string{"validate", good + "/integration-test-runner/SKILL.md"}, ExitOK},
		{[]string{"validate", "--strict", good + "/integration-test-runner"}, ExitErrors},
		{[]string{"validate", "testdata/does-not-exist"}, ExitErrors},
		{[]string{"validate", good, broken + "/lib"}, ExitOK},
		{[]string{"validate"}, ExitUsage},
		{[]string{"validate", "--format", "xml", good}, ExitUsage},
		{[]string{"validate", "--no-such-flag", good}, ExitUsage},
		{[]string{"lint", good}, ExitOK},
		{[]string{"lint", broken}, ExitErrors}, // bad-yaml does not parse
		{[]string{"lint"}, ExitUsage},
		{[]string{"deps", good}, ExitOK},
		{[]string{"deps", broken}, ExitErrors},
		{[]string{"deps", "--check-circular", good}, ExitOK},
		{[]string{"deps", "--check-circular", "testdata/self"}, ExitErrors}, // requires itself
		{[]string{"deps", "--check-circular", "testdata/noskills"}, ExitErrors},
		{[]string{"validate", "testdata/noskills"}, ExitErrors}, // no skill at all is not "0 errors"
		{[]string{"lint", "testdata/noskills"}, ExitErrors},
		{[]string{"deps", "testdata/noskills"}, ExitErrors},
		{[]string{"deps", "--graph", "png", good}, ExitUsage},
		{[]string{"deps", "--graph", "dot", "--format", "json", good}, ExitUsage},
		{[]string{"deps", good, broken}, ExitUsage},
		{[]string{"to-prompt", good}, ExitOK},
		{[]string{"to-prompt", broken + "/bad-yaml"}, ExitErrors},
		{[]string{"to-prompt"}, ExitUsage},
		{[]string{"no-such-command"}, ExitUsage},
		{[]string{}, ExitUsage},
		{[]string{"--help"}, ExitOK},
		{[]string{"validate", "--help"}, ExitOK},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := run(tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errOut)
			}
			if tc.code == ExitUsage && errOut == "" && !slices.Contains(tc.args, "--help") {
				t.Error("usage error without a message on stderr")
			}
		})
	}
}

func TestValidateText(t *testing.T) {
	code, out, _ := run("validate", broken)
	if code != ExitErrors {
		t.Errorf("exit %d", code)
	}
	checkGolden(t, "validate-broken.txt", out)
	code, out, _ = run("validate", good)
	if code != ExitOK || out != "4 skills, 0 errors, 0 warnings\n" {
		t.Errorf("exit %d, output %q", code, out)
	}
}

// TestValidateJSON checks the document's shape key by key, then the whole of it.
func TestValidateJSON(t *testing.T) {
	code, out, _ := run("validate", "--format", "json", broken)
	if code != ExitErrors {
		t.Errorf("exit %d", code)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if got := sortedKeys(doc); !slices.Equal(got, []string{"diagnostics", "errors", "skills", "valid", "warnings"}) {
		t.Errorf("top-level keys %v", got)
	}
	skills := doc["skills"].([]any)
	if len(skills) != 6 {
		t.Errorf("%d skills", len(skills))
	}
	for _, s := range skills {
		sm := s.(map[string]any)
		if got := sortedKeys(sm); !slices.Equal(got, []string{"diagnostics", "name", "path", "valid"}) {
			t.Errorf("skill keys %v", got)
		}
		for _, d := range sm["diagnostics"].([]any) {
			if got := sortedKeys(d.(map[string]any)); !slices.Equal(got, []string{"file", "line", "message", "rule", "severity"}) {
				t.Errorf("diagnostic keys %v", got)
			}
		}
	}
	var rep report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	valid := map[string]bool{}
	errs := 0
	for _, s := range rep.Skills {
		valid[filepath.Base(s.Path)] = s.Valid
		errs += s.Diagnostics.Errors()
	}
	want := map[string]bool{"app": false, "bad-yaml": false, "cyc-a": false, "cyc-b": true, "lib": true, "warn-only": true}
	for k, v := range want {
		if valid[k] != v {
			t.Errorf("%s valid=%v, want %v", k, valid[k], v)
		}
	}
	if rep.Errors != errs+rep.Diagnostics.Errors() || rep.Errors == 0 || rep.Warnings != 1 {
		t.Errorf("counts: errors %d warnings %d", rep.Errors, rep.Warnings)
	}
	checkGolden(t, "validate-broken.json", out)

	// An empty result is still the full shape, with lists, not nulls.
	_, out, _ = run("validate", "--format", "json", good+"/logging-standards")
	if !strings.Contains(out, `"diagnostics": []`) || strings.Contains(out, "null") {
		t.Errorf("empty lists: %s", out)
	}
}

func TestValidateSingleSkillUsesSiblings(t *testing.T) {
	code, out, _ := run("validate", broken+"/app")
	if code != ExitErrors {
		t.Errorf("exit %d", code)
	}
	checkGolden(t, "validate-app.txt", out)
	code, out, _ = run("validate", "--force", "--format", "json", broken+"/app")
	var rep report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != ExitErrors {
		t.Fatalf("exit %d: %v", code, err)
	}
	var got []string
	for _, d := range rep.Skills[0].Diagnostics {
		got = append(got, string(d.Severity)+" "+d.Rule)
	}
	if want := []string{"warning requires.missing", "error requires.version"}; !slices.Equal(got, want) || len(rep.Skills) != 1 {
		t.Errorf("diagnostics %v, want %v", got, want)
	}
}

// TestLint runs the opt-in rules too (--rules=opt-in), so the goldens show every rule.
func TestLint(t *testing.T) {
	code, out, _ := run("lint", "--rules=opt-in", good)
	if code != ExitOK {
		t.Errorf("exit %d", code)
	}
	checkGolden(t, "lint-skills.txt", out)
	code, out, _ = run("lint", "--rules=opt-in", "--format", "json", broken)
	if code != ExitErrors {
		t.Errorf("exit %d", code)
	}
	checkGolden(t, "lint-broken.json", out)
}

// TestLintSuppression: every finding names its rule in text and JSON, silenced findings are
// neither shown nor counted, a misspelt rule is reported, and validation errors stay.
func TestLintSuppression(t *testing.T) {
	const root = "testdata/lint"
	code, out, _ := run("lint", "--rules=opt-in", root)
	if code != ExitOK {
		t.Errorf("exit %d", code)
	}
	checkGolden(t, "lint-suppression.txt", out)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.Contains(line, "SKILL.md:") && !ruleInText(line) {
			t.Errorf("finding without its rule id: %q", line)
		}
	}

	code, out, _ = run("lint", "--rules=opt-in", "--format", "json", root)
	var rep report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != ExitOK {
		t.Fatalf("exit %d: %v", code, err)
	}
	var got []string
	for _, s := range rep.Skills {
		for _, d := range s.Diagnostics {
			got = append(got, fmt.Sprintf("%d %s", d.Line, d.Rule))
		}
	}
	want := []string{"6 lint.suppression", "11 no-generic-instructions", "12 references.broken", "13 lint.suppression"}
	if !slices.Equal(got, want) || rep.Warnings != len(want) {
		t.Errorf("findings %v (%d warnings), want %v", got, rep.Warnings, want)
	}

	// By default the opt-in rules do not run; named, one runs alone; a name that is no lint
	// rule is a usage error.
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"lint", "--format", "json", root}, []string{"6 lint.suppression", "12 references.broken", "13 lint.suppression"}},
		{[]string{"lint", "--rules=no-generic-instructions", "--format", "json", root}, want},
	} {
		_, out, _ := run(tc.args...)
		var rep report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		var got []string
		for _, s := range rep.Skills {
			for _, d := range s.Diagnostics {
				got = append(got, fmt.Sprintf("%d %s", d.Line, d.Rule))
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%v: findings %v, want %v", tc.args, got, tc.want)
		}
	}
	if code, _, _ := run("lint", "--rules=no-such-rule", root); code != ExitUsage {
		t.Errorf("--rules=no-such-rule: exit %d, want %d", code, ExitUsage)
	}

	// The comment in misnamed/SKILL.md does not silence the validation error.
	code, out, _ = run("validate", root+"/misnamed")
	if code != ExitErrors || !strings.Contains(out, "error name.matchesDirectory") {
		t.Errorf("validate: exit %d: %s", code, out)
	}
}

// ruleInText reports whether a text diagnostic line names a known rule after its severity.
func ruleInText(line string) bool {
	for _, r := range skill.Rules() {
		for _, sev := range []string{"error", "warning", "info"} {
			if strings.Contains(line, ": "+sev+" "+r.ID+": ") {
				return true
			}
		}
	}
	return false
}

func TestLintRules(t *testing.T) {
	code, out, _ := run("lint", "--rules")
	if code != ExitOK {
		t.Errorf("exit %d", code)
	}
	checkGolden(t, "lint-rules.txt", out)
	code, out, _ = run("lint", "--rules", "--format", "json")
	var rules []lintRule
	if err := json.Unmarshal([]byte(out), &rules); err != nil || code != ExitOK {
		t.Fatalf("exit %d: %v", code, err)
	}
	var ids []string
	for _, r := range rules {
		ids = append(ids, r.Rule)
		if r.Silenceable == (r.Rule == skill.RuleLintSuppression) {
			t.Errorf("%s: silenceable %v", r.Rule, r.Silenceable)
		}
	}
	if !slices.Contains(ids, skill.RuleReferencesBroken) || slices.Contains(ids, skill.RuleNameFormat) {
		t.Errorf("rules %v", ids)
	}
	if code, _, _ := run("lint", "--rules", good); code != ExitUsage {
		t.Errorf("--rules with a PATH: exit %d", code)
	}
}

func TestDeps(t *testing.T) {
	for _, tc := range []struct {
		golden string
		args   []string
		code   int
	}{
		{"deps-skills.txt", []string{"deps", good}, ExitOK},
		{"deps-broken.txt", []string{"deps", broken}, ExitErrors},
		{"deps-broken-force.txt", []string{"deps", "--force", broken}, ExitErrors},
		{"deps-circular.txt", []string{"deps", "--check-circular", broken}, ExitErrors},
		{"deps-skills.dot", []string{"deps", "--graph", "dot", good}, ExitOK},
		{"deps-broken.dot", []string{"deps", "--graph", "dot", broken}, ExitErrors},
		{"deps-skills.mmd", []string{"deps", "--graph", "mermaid", good}, ExitOK},
		{"deps-broken.mmd", []string{"deps", "--graph", "mermaid", broken}, ExitErrors},
		{"deps-broken.json", []string{"deps", "--format", "json", broken}, ExitErrors},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			code, out, errOut := run(tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d: %s", code, tc.code, errOut)
			}
			checkGolden(t, tc.golden, out)
			if slices.Contains(tc.args, "--graph") && !strings.Contains(errOut, "skills, ") {
				t.Errorf("with --graph the summary goes to stderr: %q", errOut)
			}
		})
	}
	_, out, _ := run("deps", "--format", "json", good)
	var doc struct {
		Nodes       []string     `json:"nodes"`
		Edges       []skill.Edge `json:"edges"`
		Skills      []any        `json:"skills"`
		Diagnostics []any        `json:"diagnostics"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Nodes) != 4 || len(doc.Edges) != 2 || len(doc.Skills) != 4 || doc.Diagnostics == nil {
		t.Errorf("deps json: %+v", doc)
	}
	if doc.Edges[0] != (skill.Edge{From: "integration-test-runner", To: "environment-selector", Version: "1.2.0"}) {
		t.Errorf("edge %+v", doc.Edges[0])
	}
}

func TestInit(t *testing.T) {
	root := t.TempDir()
	code, out, errOut := run("init", "my-new-skill", "--root", root)
	if code != ExitOK {
		t.Fatalf("init: exit %d: %s", code, errOut)
	}
	if want := "created " + filepath.Join(root, "my-new-skill", "SKILL.md") + "\n"; out != want {
		t.Errorf("output %q, want %q", out, want)
	}
	if code, out, _ := run("validate", "--strict", filepath.Join(root, "my-new-skill")); code != ExitOK {
		t.Errorf("scaffold does not validate strictly: %s", out)
	}
	if code, out, _ := run("lint", filepath.Join(root, "my-new-skill")); code != ExitOK || out != "1 skill, 0 errors, 0 warnings\n" {
		t.Errorf("scaffold does not pass lint: %s", out)
	}

	// Dependencies are pinned to the versions present in the root.
	testutil.CopyTree(t, good, root)
	code, _, errOut = run("init", "deployer", "--root", root, "--requires", "environment-selector,logging-standards")
	if code != ExitOK {
		t.Fatalf("init with requires: %s", errOut)
	}
	data, err := os.ReadFile(filepath.Join(root, "deployer", "SKILL.md"))
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "init-deployer.md", string(data))
	if code, out, _ := run("validate", root); code != ExitOK {
		t.Errorf("root with the new skill does not validate: %s", out)
	}
	s, _ := skill.ParseFile(filepath.Join(root, "deployer", "SKILL.md"))
	want := []skill.Requirement{{Skill: "environment-selector", Version: "1.2.0", Line: 7}, {Skill: "logging-standards", Version: "1.0.0", Line: 9}}
	if !slices.Equal(s.Requires, want) || s.Version != InitialVersion {
		t.Errorf("requires %+v version %q", s.Requires, s.Version)
	}

	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"init", "deployer", "--root", root}, "already exists"},
		{[]string{"init", "Bad_Name", "--root", root}, "invalid skill name"},
		{[]string{"init", "-x", "--root", root}, "unknown shorthand flag"},
		{[]string{"init", "logger", "--root", root, "--requires", "ghost"}, "not found"},
		{[]string{"init", "selfish", "--root", root, "--requires", "selfish"}, "require itself"},
		{[]string{"init", "environment-selector", "--root", filepath.Join(root, "sub")}, ""},
	} {
		code, _, errOut := run(tc.args...)
		if tc.msg == "" {
			if code != ExitOK {
				t.Errorf("%v: exit %d: %s", tc.args, code, errOut)
			}
			continue
		}
		if code == ExitOK || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errOut, tc.msg)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "logger")); err == nil {
		t.Error("a failed init left a directory behind")
	}
	code, _, errOut = run("init", "logging-standards", "--root", filepath.Dir(filepath.Join(root, "x")))
	if code == ExitOK || !strings.Contains(errOut, "already exists") {
		t.Errorf("name taken in the root: exit %d %q", code, errOut)
	}
}

func TestToPrompt(t *testing.T) {
	code, out, errOut := run("to-prompt", good+"/special-chars", good+"/logging-standards")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	abs, err := filepath.Abs(good)
	if err != nil {
		t.Fatal(err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	checkGolden(t, "to-prompt.xml", strings.ReplaceAll(out, abs, "$SKILLS"))

	_, all, _ := run("to-prompt", good)
	if strings.Count(all, "<skill>") != 4 || !strings.HasPrefix(all, "<available_skills>\n<skill>\n<name>\nenvironment-selector\n</name>\n") {
		t.Errorf("root: %s", all)
	}
	code, out, errOut = run("to-prompt", broken+"/bad-yaml")
	if code != ExitErrors || out != "" || !strings.Contains(errOut, "frontmatter.yaml") {
		t.Errorf("broken skill: exit %d out %q err %q", code, out, errOut)
	}
}

func sortedKeys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
