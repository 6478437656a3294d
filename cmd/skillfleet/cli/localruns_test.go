package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/agent/agenttest"
	runreport "github.com/skillfleet/skillfleet/report"
)

// greeterSuite writes a skill whose house greeting the scripted model (greeterModel) only
// knows by reading the skill: two prompt cases and a command case.
func greeterSuite(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "greetings")
	files := map[string]string{
		"greeter/SKILL.md": "---\nname: greeter\ndescription: Greets a named person in the house style. Use when asked to greet someone.\nmetadata:\n  version: \"1.0.0\"\ntest:\n  cases: test/cases.yaml\n---\n\n# Greeter\n\nAnswer \"Salutations, NAME!\" and nothing else.\n",
		"greeter/test/cases.yaml": "cases:\n  - name: greet-ada\n    input: \"Greet Ada\"\n    assertions:\n      output_contains: [\"Salutations, Ada\"]\n" +
			"  - name: greet-bob\n    input: \"Greet Bob\"\n    assertions:\n      output_contains: [\"Salutations, Bob\"]\n",
		"greeter/tests/cases/echo.yaml": "name: echo\ninput:\n  command: \"echo hi\"\nexpected:\n  stdout-contains: [hi]\n",
	}
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// greeterModel reads the skill the system prompt lists, then greets as it says.
func greeterModel(t *testing.T) *agenttest.Server {
	return agenttest.Greeter(t, regexp.MustCompile(`<location>([^<]*greeter/SKILL\.md)</location>`))
}

// TestLocalHistoryRuns is issue 26: runs of `skillfleet test` kept in a local history are
// listed, shown, reported in every format, exported, their trajectories printed, compared and
// used as --baseline-run, all without a coordinator, with the coordinator path's refusals
// and exit codes. Real Docker, as TestLocal.
func TestLocalHistoryRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker test; skipped with -short")
	}
	t.Setenv("SKILLFLEET_COORDINATOR", "")
	t.Setenv("SKILLFLEET_TOKEN", "")
	t.Setenv("OPENAI_API_KEY", "sk-test-local-history")
	srv := greeterModel(t)
	root := greeterSuite(t)
	db := filepath.Join(t.TempDir(), "history.db")
	test := func(want int, args ...string) (runreport.Report, string) {
		t.Helper()
		all := append([]string{"test", "--workers", "2", "--history", db, "--model-base-url", srv.BaseURL(), "--format", "json"}, args...)
		code, out, errOut := run(append(all, root)...)
		if code != want {
			t.Fatalf("test %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, want, out, errOut)
		}
		rep, err := runreport.FromJSON(strings.NewReader(out))
		if err != nil {
			t.Fatalf("test %v: not a JSON report: %v\n%s", args, err, out)
		}
		if !strings.Contains(errOut, "history: run "+rep.Run+" kept (3 results") {
			t.Errorf("test %v: stderr does not say the run was kept:\n%s", args, errOut)
		}
		return rep, errOut
	}
	first, _ := test(ExitOK, "--model", "agent-model")
	second, _ := test(ExitOK, "--model", "agent-model")
	if first.Summary.Passed != 3 || second.Summary.Passed != 3 {
		t.Fatalf("summaries %+v, %+v: want 3 passed each", first.Summary, second.Summary)
	}
	local := func(want int, args ...string) (string, string) {
		t.Helper()
		code, out, errOut := run(append(args, "--history", db)...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, want, out, errOut)
		}
		return out, errOut
	}

	// list and show.
	out, _ := local(ExitOK, "runs", "list")
	if !strings.Contains(out, first.Run+"  completed") || !strings.Contains(out, second.Run) || strings.Index(out, second.Run) > strings.Index(out, first.Run) {
		t.Errorf("runs list (newest first):\n%s", out)
	}
	out, _ = local(ExitOK, "runs", "list", "--format", "json")
	var listed struct {
		Runs []struct {
			ID    string `json:"id"`
			State string `json:"state"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed.Runs) != 2 || listed.Runs[1].ID != first.Run || listed.Runs[1].State != "RUN_STATE_COMPLETED" {
		t.Errorf("runs list --format json (%v):\n%s", err, out)
	}
	out, _ = local(ExitOK, "runs", "show", first.Run)
	if !strings.Contains(out, "state    completed") || !strings.Contains(out, "jobs     3/3") || !strings.Contains(out, "cases    3: 3 passed") {
		t.Errorf("runs show:\n%s", out)
	}

	// report, in each format: the JSON is the report the run ended with.
	out, _ = local(ExitOK, "runs", "report", first.Run, "--format", "json")
	rep, err := runreport.FromJSON(strings.NewReader(out))
	if err != nil || rep.Run != first.Run || len(rep.Cases) != 3 || rep.Summary != first.Summary {
		t.Errorf("runs report --format json (%v): %+v", err, rep)
	}
	out, _ = local(ExitOK, "runs", "report", first.Run)
	if !strings.Contains(out, "PASS  greeter/greet-ada") || !strings.Contains(out, "3 passed") {
		t.Errorf("runs report (text):\n%s", out)
	}
	out, _ = local(ExitOK, "runs", "report", first.Run, "--format", "junit")
	if tests, failures, errs, _ := parseJUnit(t, []byte(out)); tests != 3 || failures+errs != 0 {
		t.Errorf("runs report --format junit: %d tests, %d failures, %d errors", tests, failures, errs)
	}
	out, _ = local(ExitOK, "runs", "report", first.Run, "--format", "html")
	checkSameVerdicts(t, []byte(out), first)
	if !strings.Contains(out, "Salutations, Ada!") {
		t.Error("the HTML report does not show the agent's answer from the kept results")
	}
	local(ExitUsage, "runs", "report", first.Run, "--format", "yaml")
	_, errOut := local(ExitErrors, "runs", "report", "no-such-run")
	if !strings.Contains(errOut, "run not found") {
		t.Errorf("unknown run: %s", errOut)
	}

	// trajectory: the ATIF document of a prompt job, kept inline; none for a command case.
	out, _ = local(ExitOK, "runs", "trajectory", first.Run, "greeter/greet-ada")
	var traj struct {
		SchemaVersion string            `json:"schema_version"`
		Steps         []json.RawMessage `json:"steps"`
	}
	if err := json.Unmarshal([]byte(out), &traj); err != nil || !strings.HasPrefix(traj.SchemaVersion, "ATIF") || len(traj.Steps) == 0 || !strings.Contains(out, "read_file") {
		t.Errorf("runs trajectory (%v):\n%s", err, out)
	}
	_, errOut = local(ExitErrors, "runs", "trajectory", first.Run, "greeter/echo")
	if !strings.Contains(errOut, "no trajectory") {
		t.Errorf("a command case's trajectory: %s", errOut)
	}
	local(ExitUsage, "runs", "trajectory", first.Run, "greeter")

	// export: the evaluation guide's layout, from the kept results.
	ws := t.TempDir()
	_, errOut = local(ExitOK, "runs", "export", first.Run, "--workspace", ws)
	if !strings.Contains(errOut, "3 jobs written") {
		t.Errorf("runs export: %s", errOut)
	}
	job := filepath.Join(ws, "greeter", "iteration-1", "eval-greet-ada", "with_skill")
	for _, f := range []string{"timing.json", "grading.json", "trajectory.json"} {
		if _, err := os.Stat(filepath.Join(job, f)); err != nil {
			t.Errorf("export: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "greeter", "iteration-1", "benchmark.json")); err != nil {
		t.Errorf("export: %v", err)
	}

	// compare: the two runs pair; against a run of another model it is refused (exit 2).
	out, _ = local(ExitOK, "compare", first.Run, second.Run)
	if !strings.Contains(out, "comparing B (run "+second.Run+", with_skill) against A (run "+first.Run+", with_skill)") || !strings.Contains(out, "greeter") {
		t.Errorf("compare:\n%s", out)
	}
	out, _ = local(ExitOK, "compare", first.Run, second.Run, "--format", "json")
	if !json.Valid([]byte(out)) {
		t.Errorf("compare --format json:\n%s", out)
	}
	other, _ := test(ExitOK, "--model", "other-model")
	_, errOut = local(ExitUsage, "compare", first.Run, other.Run)
	if !strings.Contains(errOut, "comparison refused") || !strings.Contains(errOut, "other-model") {
		t.Errorf("compare across models: %s", errOut)
	}

	// --baseline-run on test: the earlier run of the history stands for the baseline.
	cmp, _ := test(ExitOK, "--model", "agent-model", "--baseline-run", first.Run)
	if len(cmp.Comparison) == 0 || !strings.Contains(string(cmp.Comparison), first.Run) {
		t.Errorf("test --baseline-run: the report has no comparison with %s: %s", first.Run, cmp.Comparison)
	}
	_, errOut = test(ExitUsage, "--model", "agent-model", "--baseline-run", other.Run)
	if !strings.Contains(errOut, "--baseline-run "+other.Run+": comparison refused") {
		t.Errorf("test --baseline-run of another model: %s", errOut)
	}
	code, _, errOut := run("test", "--history", db, "--model-base-url", srv.BaseURL(), "--model", "agent-model", "--baseline-run", "no-such-run", root)
	if code != ExitErrors || !strings.Contains(errOut, "--baseline-run no-such-run") {
		t.Errorf("test --baseline-run of an unknown run: exit %d\n%s", code, errOut)
	}

	// Refusals of the local path.
	if code, _, errOut := run("runs", "list", "--history", "off"); code != ExitUsage {
		t.Errorf("--history off: exit %d, %s", code, errOut)
	}
	if code, _, errOut := run("runs", "list", "--history", filepath.Join(t.TempDir(), "none.db")); code != ExitErrors || !strings.Contains(errOut, "no local history") {
		t.Errorf("a missing history: exit %d, %s", code, errOut)
	}
}
