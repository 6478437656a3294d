package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/skillfleet/skillfleet/agent/agenttest"
	"github.com/skillfleet/skillfleet/agent/agenttest/standin"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
	"github.com/skillfleet/skillfleet/sandbox"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
	"github.com/skillfleet/skillfleet/worker"
)

// grepMarkers searches the whole filesystem of the sandbox (but the kernel's /proc, /sys and
// /dev, and devices, pipes and sockets) for every marker, printing each one found. Its
// pattern does not match itself, so the command line that holds it finds nothing.
const grepMarkers = `grep -rIoh -D skip --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev -E 'QZX[-][A-Z]+' / 2>/dev/null | sort -u; true`

// hiddenSuite is a skill whose every test definition holds a marker no runtime file holds:
// QZX-CASES in its RFC cases file (with the prompt case's own expected strings), QZX-COMMAND
// in its command case, QZX-UNDECLARED in a fixture no case declares, QZX-EVALS in its
// evals.json, QZX-HELPER in the test files of the skill it requires. QZX-RUNTIME is in a
// reference of each skill and QZX-FIXTURE in the fixture the command case declares: what a
// case must still see. Its cases grep the filesystem for the markers and fail on any hidden
// one, and on a missing QZX-RUNTIME, which proves the search reached the skills.
var hiddenSuite = map[string]string{
	"seeker/SKILL.md": "---\nname: seeker\ndescription: Searches files for markers. Use when asked to grep everything.\n" +
		"requires:\n  - skill: helper\ntest:\n  cases: test/cases.yaml\n---\n\nRun grep.\n",
	"seeker/references/notes.md": "The runtime marker QZX-RUNTIME is the skill's own.\n",
	"seeker/test/cases.yaml": "# QZX-CASES\ncases:\n" +
		"  - name: grep-prompt\n    input: GREP-EVERYTHING\n    assertions:\n" +
		"      output_contains: [QZX-RUNTIME]\n" +
		"      output_not_contains: [QZX-CASES, QZX-COMMAND, QZX-UNDECLARED, QZX-EVALS, QZX-HELPER]\n",
	"seeker/tests/cases/grep-command.yaml": "name: grep-command\ndescription: QZX-COMMAND\ninput:\n" +
		"  command: \"" + grepMarkers + "\"\n  files: [tests/fixtures/mine.txt]\n" +
		"expected:\n  stdout-contains: [QZX-RUNTIME, QZX-FIXTURE]\n" +
		"  not-contains: [QZX-CASES, QZX-COMMAND, QZX-UNDECLARED, QZX-EVALS, QZX-HELPER]\n",
	"seeker/tests/fixtures/mine.txt":   "QZX-FIXTURE\n",
	"seeker/tests/fixtures/theirs.txt": "QZX-UNDECLARED\n",
	"seeker/evals/evals.json":          `{"skill_name": "seeker", "evals": [{"id": "x", "prompt": "Say QZX-EVALS", "expected_output": "QZX-EVALS"}]}`,
	"helper/SKILL.md":                  "---\nname: helper\ndescription: Helps the seeker. Use when seeking.\n---\n\nHelp.\n",
	"helper/scripts/help.sh":           "echo QZX-RUNTIME\n",
	"helper/tests/cases/h.yaml":        "name: h\ninput:\n  command: echo QZX-HELPER\nexpected:\n  stdout-contains: QZX-HELPER\n",
	"helper/evals/evals.json":          `{"skill_name": "helper", "evals": [{"id": 1, "prompt": "QZX-HELPER", "expected_output": "QZX-HELPER"}]}`,
}

func hiddenBundle(t *testing.T) []byte {
	t.Helper()
	root := t.TempDir()
	for name, body := range hiddenSuite {
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

// grepModel answers GREP-EVERYTHING: grep the filesystem, write what was found to found.txt,
// then answer with it.
func grepModel() func(int, agenttest.Request) agenttest.Reply {
	return agenttest.Scripted(func(_ int, c agenttest.Conv) (agenttest.Turn, *agenttest.Reply) {
		usage := agenttest.Tokens{Prompt: 100, Completion: 10}
		if c.Input != "GREP-EVERYTHING" {
			return agenttest.Turn{Text: "unknown scenario: " + c.Input, Usage: usage}, nil
		}
		switch len(c.ToolResults) {
		case 0:
			args, _ := json.Marshal(map[string]string{"command": grepMarkers})
			return agenttest.Turn{Calls: []agenttest.Call{{ID: "call-1", Name: "bash", Arguments: string(args)}}, Usage: usage}, nil
		case 1:
			args, _ := json.Marshal(map[string]string{"path": "found.txt", "content": c.ToolResults[0]})
			return agenttest.Turn{Calls: []agenttest.Call{{ID: "call-2", Name: "write_file", Arguments: string(args)}}, Usage: usage}, nil
		}
		return agenttest.Turn{Text: "Found:\n" + c.ToolResults[0], Usage: usage}, nil
	})
}

// TestAJobNeverSeesItsTest (issue 31): an agent, the built-in one or a CLI (a stand-in on
// Anthropic's SDK, given its skills in its skills_dir under the work directory), in the
// with_skill and the without_skill arm, and a command case, each in a real sandbox, grep the
// whole filesystem for their cases' expected strings and the suite's other test definitions
// and find none of them, while the skills' runtime files and the command case's declared
// fixture are there. The CLI's placed skills are not among a job's outputs: each prompt job
// keeps only the file its agent wrote.
func TestAJobNeverSeesItsTest(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker test; skipped with -short")
	}
	t.Setenv("HIDDEN_UPSTREAM_KEY", "sk-test-HIDDEN-0b7d")
	srv := agenttest.NewAny(t, grepModel())
	bins := filepath.Join(t.TempDir(), "standin")
	if err := os.MkdirAll(bins, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(bins), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(standin.Build(t, "anthropic"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bins, "anthropic"), b, 0o755); err != nil {
		t.Fatal(err)
	}

	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	models := modelsFromConfig(t, map[string]any{"agents": []map[string]any{
		{"name": "builtin", "model": "agent-model", "base_url": srv.BaseURL(), "api_key_env": "HIDDEN_UPSTREAM_KEY", "max_turns": 6},
		{"name": "claude", "api": "anthropic", "model": "claude-model", "base_url": srv.URL, "api_key_env": "HIDDEN_UPSTREAM_KEY",
			"skills_dir": "/work/.claude/skills", "command": []string{standinMount + "/anthropic", "{{prompt}}"},
			"env": map[string]string{"ANTHROPIC_BASE_URL": "{{gateway_url}}", "ANTHROPIC_API_KEY": "{{token}}"}},
	}}, log)
	spec := models.Agents["claude"]
	spec.Mounts = append(spec.Mounts, sandbox.Mount{Source: bins, Target: standinMount})
	models.Agents["claude"] = spec

	runner := startRunner(t, "hidden", log)
	exec := worker.NewSandboxExecutor(runner, log).WithAgents(models.Agents, models.Judge, models.Votes)
	f := startFleet(t, exec, 1, nil)
	rep := runToEnd(t, f, hiddenBundle(t), &pb.RunSpec{Name: "hidden", CaseGlobs: []string{"grep-*"},
		Agents: models.Names, Baseline: "without_skill"})

	want := map[string]bool{"grep-prompt@builtin": true, "grep-prompt@claude": true, "grep-command@": true,
		"grep-prompt@builtin without_skill": true, "grep-prompt@claude without_skill": true}
	for _, c := range rep.Cases {
		key := strings.TrimSpace(c.Case + "@" + c.Agent + " " + c.Arm)
		if !want[key] {
			t.Errorf("unexpected case %s", key)
			continue
		}
		delete(want, key)
		if c.Status != report.StatusPassed {
			t.Errorf("%s: %s %s%s\n    output: %.600q", key, c.Status, c.Reason, evidence(c), c.Output)
		}
	}
	if len(want) > 0 {
		t.Errorf("cases not in the report: %v", want)
	}
	if rep.Baseline == nil || rep.Baseline.Passed != 2 || rep.Baseline.Total != 2 {
		t.Errorf("baseline arm %+v, want both agents' without_skill jobs passed", rep.Baseline)
	}

	prompts := 0
	err = f.Coordinator.AcceptedResults(context.Background(), rep.Run, func(r *pb.Result) error {
		if r.GetKind() != pb.CaseKind_CASE_KIND_PROMPT {
			return nil
		}
		prompts++
		var kept []string
		for _, o := range r.GetOutputs() {
			kept = append(kept, o.GetPath())
		}
		if !slices.Equal(kept, []string{"found.txt"}) {
			t.Errorf("%s with %s (%q): outputs %q, want only the file the agent wrote", r.GetCaseName(), r.GetAgent(), r.GetArm(), kept)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if prompts != 4 {
		t.Errorf("%d prompt results, want 4 (two agents, two arms)", prompts)
	}
}
