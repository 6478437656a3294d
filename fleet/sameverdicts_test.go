package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/skillfleet/skillfleet/agent/agenttest"
	"github.com/skillfleet/skillfleet/atif"
	"github.com/skillfleet/skillfleet/coordinator"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
	"github.com/skillfleet/skillfleet/worker"
	"github.com/skillfleet/skillfleet/workspace"
)

// sameSuite is the suite both agents run: release-notes with prompt cases using the
// trajectory and file assertions, changelog-lint with an evals.json whose criterion needs the
// judge. Each body has lines long enough to fingerprint, so activation is detected by content.
var sameSuite = map[string]string{
	"release-notes/SKILL.md": `---
name: release-notes
description: Drafts release notes from merged changes. Use when the user asks for release notes.
test:
  cases: tests/cases.yaml
---

# Release notes

Group the merged changes under Added, Changed and Fixed headings.
Write one line per change, starting with a verb in the past tense.
Save the notes as NOTES.md in the working directory, never elsewhere.
`,
	"release-notes/tests/cases.yaml": `cases:
  - name: notes-written
    input: "NOTES-WRITE: draft the release notes for 2.0"
    assertions:
      skill_activated: [release-notes]
      skill_not_activated: [changelog-lint]
      tool_called:
        - {name: bash, args_match: 'cat .*/release-notes/'}
      tool_order: [bash, write_file]
      file_exists: [NOTES.md]
      file_contains: {path: NOTES.md, text: "Added the fleet view"}
      max_turns: 3
      output_contains: [NOTES.md]

  - name: lint-skill-read-too
    input: "NOTES-PEEK: compare the release notes and changelog skills"
    assertions:
      skill_activated: [release-notes]
      skill_not_activated: [changelog-lint]
      tool_called:
        - {name: bash, args_match: 'cat .*/changelog-lint/SKILL\.md'}
      tool_not_called: [write_file]

  - name: notes-after-rate-limit
    input: "NOTES-WRITE-429: draft the release notes for 2.2"
    assertions:
      skill_activated: [release-notes]
      tool_order: [bash, write_file]
      max_turns: 3

  - name: no-file-writes
    input: "NOTES-WRITE: draft the release notes for 2.1"
    assertions:
      skill_activated: [release-notes]
      tool_not_called: [write_file]
      max_turns: 2
`,
	"changelog-lint/SKILL.md": `---
name: changelog-lint
description: Checks a CHANGELOG.md for versions without dates. Use when asked to lint a changelog.
---

# Changelog lint

Every version heading must carry an ISO date after the version number.
Report each version heading that lacks a date, with its line number.
Never rewrite the changelog yourself; only report what is missing.
`,
	"changelog-lint/evals/evals.json": `{
  "skill_name": "changelog-lint",
  "evals": [
    {
      "id": 1,
      "prompt": "LINT: check the changelog in evals/files/CHANGELOG.md",
      "expected_output": "REFERENCE-7f3a: version 1.2.0 has no date",
      "files": ["evals/files/CHANGELOG.md"],
      "assertions": ["The answer names version 1.2.0 as the one without a date"]
    }
  ]
}
`,
	"changelog-lint/evals/files/CHANGELOG.md": "# Changelog\n\n## 1.2.0\n\n- Added the fleet view\n\n## 1.1.0 - 2026-01-04\n\n- Fixed the report\n",
}

// loopCLI stands in for an agent CLI with its own tools: a minimal agent loop against
// OPENAI_BASE_URL offering bash and write_file, which it executes itself in the sandbox, in the
// directory it was started in. Like real CLIs it retries a request the model rate-limited.
const loopCLI = `
import json, os, subprocess, sys, time, urllib.error, urllib.request
def fn(name, desc, props):
    return {"type": "function", "function": {"name": name, "description": desc, "parameters": {
        "type": "object", "properties": {p: {"type": "string"} for p in props}, "required": props}}}
TOOLS = [fn("bash", "Run a command with bash -c.", ["command"]),
         fn("write_file", "Write a file.", ["path", "content"])]
def ask(messages, tries=3):
    body = json.dumps({"model": "cli-model", "messages": messages, "tools": TOOLS}).encode()
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=body,
        headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.load(r)["choices"][0]["message"]
    except urllib.error.HTTPError as e:
        if e.code != 429 or tries == 1:
            raise
        time.sleep(0.05)
        return ask(messages, tries - 1)
def run(name, args):
    a = json.loads(args)
    if name == "bash":
        p = subprocess.run(["bash", "-c", a["command"]], capture_output=True, text=True)
        out = "exit_code: %d\nstdout:\n%s" % (p.returncode, p.stdout)
        return out + ("\nstderr:\n" + p.stderr if p.stderr else "")
    if name == "write_file":
        with open(a["path"], "w") as f:
            f.write(a["content"])
        return "wrote %d bytes to %s" % (len(a["content"]), a["path"])
    return "error: unknown tool " + name
messages = [{"role": "user", "content": sys.argv[1]}]
for _ in range(8):
    m = ask(messages)
    calls = m.get("tool_calls") or []
    if not calls:
        print(m.get("content") or "")
        sys.exit(0)
    messages.append({"role": "assistant", "content": m.get("content"), "tool_calls": calls})
    for c in calls:
        messages.append({"role": "tool", "tool_call_id": c["id"], "content": run(c["function"]["name"], c["function"]["arguments"])})
sys.exit("no answer after 8 turns")
`

// notesContent is what the model writes to NOTES.md.
const notesContent = "# Release notes 2.0\n\n## Added\n\n- Added the fleet view\n"

// judgeReference is the eval's expected_output, which the judge must be shown.
const judgeReference = "REFERENCE-7f3a: version 1.2.0 has no date"

// sameModel returns the scripted model both agents talk to. It picks a scenario from the case's
// input and its step from the tool results so far, so either agent gets the same calls. A
// NOTES-WRITE-429 conversation is rate-limited once, at its first request, for each agent.
func sameModel() func(int, agenttest.Request) agenttest.Reply {
	var mu sync.Mutex
	limited := map[any]bool{}
	return func(n int, r agenttest.Request) agenttest.Reply {
		if strings.Contains(string(r.Body), "NOTES-WRITE-429") {
			mu.Lock()
			first := !limited[r.Params()["model"]]
			limited[r.Params()["model"]] = true
			mu.Unlock()
			if first {
				return agenttest.Fail(http.StatusTooManyRequests, "Retry-After-Ms", "20")
			}
		}
		return sameAnswer(n, r)
	}
}

func sameAnswer(_ int, r agenttest.Request) agenttest.Reply {
	if r.Params()["model"] == "judge-model" {
		return agenttest.Text(`{"passed": true, "evidence": "the answer names 1.2.0"}`, 50, 10)
	}
	input, tools := "", 0
	for _, m := range r.Messages() {
		switch m["role"] {
		case "user":
			if s, _ := m["content"].(string); input == "" {
				input = s
			}
		case "tool":
			tools++
		}
	}
	bash := func(id, cmd string) agenttest.Reply {
		args, _ := json.Marshal(map[string]string{"command": cmd})
		return agenttest.ToolCalls(100, 10, agenttest.Call{ID: id, Name: "bash", Arguments: string(args)})
	}
	switch {
	case strings.HasPrefix(input, "NOTES-WRITE"):
		switch tools {
		case 0:
			return bash("call-1", "cat /skills/release-notes/SKILL.md")
		case 1:
			args, _ := json.Marshal(map[string]string{"path": "NOTES.md", "content": notesContent})
			return agenttest.ToolCalls(200, 10, agenttest.Call{ID: "call-2", Name: "write_file", Arguments: string(args)})
		}
		return agenttest.Text("The release notes are in NOTES.md.", 300, 10)
	case strings.HasPrefix(input, "NOTES-PEEK"):
		switch tools {
		case 0:
			return bash("call-1", "cat /skills/release-notes/SKILL.md")
		case 1:
			return bash("call-2", "cat /skills/changelog-lint/SKILL.md")
		}
		return agenttest.Text("Both skills are read.", 300, 10)
	case strings.HasPrefix(input, "LINT"):
		if tools == 0 {
			return bash("call-1", "cat evals/files/CHANGELOG.md")
		}
		// Each agent's own answer (the model names differ), so that the judge's cache, keyed by
		// the answer, cannot answer the second from the first.
		return agenttest.Text(fmt.Sprintf("Version 1.2.0 has no date (%v).", r.Params()["model"]), 200, 10)
	}
	return agenttest.Text("unknown scenario: "+input, 10, 1)
}

// sameBundle writes sameSuite into a directory and bundles it.
func sameBundle(t *testing.T) []byte {
	t.Helper()
	root := t.TempDir()
	for name, body := range sameSuite {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := suite.Load([]string{root}, skill.Options{})
	if s.Diagnostics.HasErrors() {
		t.Fatalf("the suite does not load: %v", s.Diagnostics)
	}
	var buf bytes.Buffer
	if _, err := suite.WriteBundle(&buf, s.Graph, s.Catalog.Skills()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestSameVerdictsThroughBothAgents runs one suite against the built-in agent and an agent CLI
// behind the model gateway, in one run on real sandboxes, with the same scripted model: what
// decides a verdict (activations, tool calls, turns, files, the judge) must be seen alike
// whether the loop runs in the worker or in the sandbox.
func TestSameVerdictsThroughBothAgents(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker test; skipped with -short")
	}
	t.Setenv("SAME_UPSTREAM_KEY", "sk-test-SAME-51e0")
	srv := agenttest.NewFunc(t, sameModel())

	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	models := modelsFromConfig(t, map[string]any{
		"agents": []map[string]any{
			{"name": "builtin", "model": "agent-model", "base_url": srv.BaseURL(), "api_key_env": "SAME_UPSTREAM_KEY", "max_turns": 6},
			{"name": "cli", "model": "cli-model", "base_url": srv.BaseURL(), "api_key_env": "SAME_UPSTREAM_KEY",
				"command": []string{"python3", "-c", strings.TrimSpace(loopCLI), "{{prompt}}"},
				"env":     map[string]string{"OPENAI_BASE_URL": "{{base_url}}", "OPENAI_API_KEY": "{{token}}"}},
		},
		"judge": map[string]any{"model": "judge-model", "base_url": srv.BaseURL(), "api_key_env": "SAME_UPSTREAM_KEY"},
	}, log)
	if !slices.Equal(models.Names, []string{"builtin", "cli"}) {
		t.Fatalf("agents %v, want builtin and cli", models.Names)
	}

	runner := startRunner(t, "same", log)
	exec := worker.NewSandboxExecutor(runner, log).WithAgents(models.Agents, models.Judge, models.Votes)
	f := startFleet(t, exec, 1, nil)
	rep := runToEnd(t, f, sameBundle(t), &pb.RunSpec{Agents: models.Names})

	wants := checkSameVerdicts(t, rep, models.Names)

	// The rate limit happened: each agent's conversation was refused once and sent again.
	limited := map[any]int{}
	for _, r := range srv.Requests() {
		if strings.Contains(string(r.Body), "NOTES-WRITE-429") {
			limited[r.Params()["model"]]++
		}
	}
	if limited["agent-model"] != 4 || limited["cli-model"] != 4 {
		t.Errorf("requests of notes-after-rate-limit per model %v, want 4 each (one refused, three answered)", limited)
	}

	// The judge was asked once per agent, and shown the eval's expected_output.
	judged, judgedAnswers := 0, []string(nil)
	for _, r := range srv.Requests() {
		if r.Params()["model"] != "judge-model" {
			continue
		}
		judged++
		body := string(r.Body)
		if !strings.Contains(body, judgeReference) {
			t.Errorf("the judge was not shown the expected_output: %s", body)
		}
		for _, m := range []string{"agent-model", "cli-model"} {
			if strings.Contains(body, "has no date ("+m+")") {
				judgedAnswers = append(judgedAnswers, m)
			}
		}
	}
	slices.Sort(judgedAnswers)
	if judged != 2 || !slices.Equal(judgedAnswers, []string{"agent-model", "cli-model"}) {
		t.Errorf("%d judge requests judging the answers of %v, want eval-1's answer of each agent", judged, judgedAnswers)
	}

	checkTrajectories(t, f.Coordinator, rep.Run, wants, models.Names)
	checkWorkspace(t, f.Coordinator, rep.Run, models.Names)
}

// sameWant is a case's verdict and the assertions that fail in it, for every agent.
type sameWant struct {
	status  string
	failing []string
}

// checkSameVerdicts checks a run of sameSuite: every case has a row per agent with the
// expected verdict and failing assertions, and every agent's assertion results equal the
// first agent's, evidence included (the agents made the same calls). It returns the cases.
func checkSameVerdicts(t *testing.T, rep report.Report, agents []string) map[string]sameWant {
	t.Helper()
	wants := map[string]sameWant{
		"release-notes/notes-written":       {report.StatusPassed, nil},
		"release-notes/lint-skill-read-too": {report.StatusFailed, []string{"skill_not_activated"}},
		"release-notes/no-file-writes":      {report.StatusFailed, []string{"tool_not_called", "max_turns"}},
		// One rate-limited request, retried, is not a turn: the built-in agent's client retries
		// within its turn, and an agent CLI's retry must not count as another.
		"release-notes/notes-after-rate-limit": {report.StatusPassed, nil},
		"changelog-lint/eval-1":                {report.StatusPassed, nil},
	}
	got := map[string]map[string]report.Case{} // case → agent → row
	for _, c := range rep.Cases {
		key := c.Skill + "/" + c.Case
		if got[key] == nil {
			got[key] = map[string]report.Case{}
		}
		got[key][c.Agent] = c
	}
	if len(got) != len(wants) {
		t.Errorf("cases %v, want %d", keys(got), len(wants))
	}
	for key, w := range wants {
		base, ok := got[key][agents[0]]
		if !ok {
			t.Errorf("%s: no row for agent %s", key, agents[0])
			continue
		}
		for _, a := range agents {
			c, ok := got[key][a]
			if !ok {
				t.Errorf("%s: no row for agent %s", key, a)
				continue
			}
			t.Logf("%-36s %-18s %s", key, a, c.Status)
			var failing []string
			for _, as := range c.Assertions {
				if !as.Passed || as.Errored {
					failing = append(failing, as.Type)
				}
			}
			if c.Status != w.status || !slices.Equal(failing, w.failing) {
				t.Errorf("%s with %s: %s failing %v, want %s failing %v%s", key, a, c.Status, failing, w.status, w.failing, evidence(c))
			}
			// Assertion by assertion, not only the verdict: the agents must be judged alike.
			if len(c.Assertions) != len(base.Assertions) {
				t.Errorf("%s: %s has %d assertion results, %s %d", key, agents[0], len(base.Assertions), a, len(c.Assertions))
				continue
			}
			for i := range c.Assertions {
				if c.Assertions[i] != base.Assertions[i] {
					t.Errorf("%s assertion %d: %s %s passed=%v (%s), %s %s passed=%v (%s)", key, i,
						agents[0], base.Assertions[i].Type, base.Assertions[i].Passed, base.Assertions[i].Message,
						a, c.Assertions[i].Type, c.Assertions[i].Passed, c.Assertions[i].Message)
				}
			}
		}
	}
	return wants
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// checkTrajectories: every prompt job's result carries a valid ATIF trajectory, and its
// transcript records when release-notes entered the model's context: at turn 2, the first
// model call after the `cat` of turn 1, for either agent.
func checkTrajectories[W any](t *testing.T, c *coordinator.Coordinator, run string, cases map[string]W, agents []string) {
	t.Helper()
	ctx := context.Background()
	for key := range cases {
		sk, cs, _ := strings.Cut(key, "/")
		for _, a := range agents {
			raw, err := c.Trajectory(ctx, run, coordinator.TrajectoryQuery{Skill: sk, Case: cs, Agent: a})
			if err != nil {
				t.Errorf("%s with %s: %v", key, a, err)
				continue
			}
			var tr atif.Trajectory
			if err := json.Unmarshal(raw, &tr); err != nil {
				t.Errorf("%s with %s: trajectory is not JSON: %v", key, a, err)
				continue
			}
			if err := tr.Validate(); err != nil {
				t.Errorf("%s with %s: invalid trajectory: %v", key, a, err)
			}
			if len(tr.Steps) == 0 || tr.Steps[len(tr.Steps)-1].Source != atif.SourceAgent {
				t.Errorf("%s with %s: trajectory does not end with the agent's answer: %s", key, a, raw)
			}
		}
	}
	err := c.AcceptedResults(ctx, run, func(r *pb.Result) error {
		if r.GetSkill() != "release-notes" {
			return nil
		}
		acts := r.GetTranscript().GetActivations()
		want := []string{"release-notes"}
		if r.GetCaseName() == "lint-skill-read-too" {
			want = append(want, "changelog-lint")
		}
		var gotNames []string
		for _, act := range acts {
			gotNames = append(gotNames, act.GetSkill())
		}
		if !slices.Equal(gotNames, want) || acts[0].GetTurn() != 2 || (len(acts) > 1 && acts[1].GetTurn() != 3) {
			t.Errorf("%s with %s: activations %v, want release-notes at turn 2 (changelog-lint at 3 when read)", r.GetCaseName(), r.GetAgent(), acts)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkWorkspace exports the run as the CLI's --workspace does and reads back grading.json
// and timing.json with the guide's field names, and the file the agent wrote.
func checkWorkspace(t *testing.T, c *coordinator.Coordinator, run string, agents []string) {
	t.Helper()
	ctx := context.Background()
	results := func(fn func(*pb.Result) error) error {
		return c.AcceptedResults(ctx, run, func(r *pb.Result) error {
			c.ResolveDocuments(ctx, r)
			return fn(r)
		})
	}
	runs := map[string]int{}
	if err := results(func(r *pb.Result) error { runs[workspace.RunsKey(r)]++; return nil }); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	w, err := workspace.New(dir, runs)
	if err != nil {
		t.Fatal(err)
	}
	if err := results(func(r *pb.Result) error {
		j, err := workspace.FromResult(r)
		if err != nil {
			return err
		}
		return w.Add(j)
	}); err != nil {
		t.Fatal(err)
	}

	readJSON := func(p string) map[string]any {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		return m
	}
	jobs := []struct {
		skill, eval string
		passed      bool
		notes       bool
	}{
		{"release-notes", "eval-notes-written", true, true},
		{"release-notes", "eval-lint-skill-read-too", false, false},
		{"release-notes", "eval-no-file-writes", false, true},
		{"release-notes", "eval-notes-after-rate-limit", true, true},
		{"changelog-lint", "eval-1", true, false},
	}
	for _, j := range jobs {
		for _, a := range agents {
			jd := filepath.Join(dir, j.skill, "iteration-1", j.eval, workspace.WithSkill, "run-"+a+"-1")
			g := readJSON(filepath.Join(jd, "grading.json"))
			exps, _ := g["expectations"].([]any)
			summary, _ := g["summary"].(map[string]any)
			if len(exps) == 0 || summary == nil || g["assertion_results"] == nil {
				t.Errorf("%s: grading.json lacks expectations, assertion_results or summary: %v", jd, g)
				continue
			}
			for _, e := range exps {
				em, _ := e.(map[string]any)
				for _, k := range []string{"text", "passed", "evidence"} {
					if _, ok := em[k]; !ok {
						t.Errorf("%s: an expectation lacks %q: %v", jd, k, em)
					}
				}
			}
			if rate, _ := summary["pass_rate"].(float64); (rate == 1) != j.passed {
				t.Errorf("%s: pass_rate %v, want passed=%v", jd, summary["pass_rate"], j.passed)
			}
			tm := readJSON(filepath.Join(jd, "timing.json"))
			if tok, _ := tm["total_tokens"].(float64); tok <= 0 {
				t.Errorf("%s: timing.json total_tokens %v", jd, tm["total_tokens"])
			}
			if _, ok := tm["duration_ms"]; !ok {
				t.Errorf("%s: timing.json lacks duration_ms: %v", jd, tm)
			}
			if _, err := os.Stat(filepath.Join(jd, "trajectory.json")); err != nil {
				t.Errorf("%s: %v", jd, err)
			}
			notes, err := os.ReadFile(filepath.Join(jd, "outputs", "NOTES.md"))
			switch {
			case j.notes && string(notes) != notesContent:
				t.Errorf("%s: outputs/NOTES.md %q (%v), want what the agent wrote", jd, notes, err)
			case !j.notes && err == nil:
				t.Errorf("%s: outputs/NOTES.md from a case that wrote none", jd)
			}
		}
	}
	if t.Failed() {
		t.Logf("workspace:\n%s", treeOf(dir))
	}
}

// treeOf lists the files under dir, for a failure message.
func treeOf(dir string) string {
	var b strings.Builder
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			b.WriteString(rel + "\n")
		}
		return nil
	})
	return b.String()
}
