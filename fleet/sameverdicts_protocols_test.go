package fleet

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/skillfleet/skillfleet/agent/agenttest"
	"github.com/skillfleet/skillfleet/agent/agenttest/standin"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/sandbox"
	"github.com/skillfleet/skillfleet/worker"
)

// standinMount is where the stand-in CLIs' binaries appear in their sandboxes.
const standinMount = "/opt/standin"

// protocolModel is the scripted model of TestSameVerdictsThroughEveryProtocol: sameAnswer's
// scenarios, told apart by the case's input and stepped by the tool results so far, in
// whichever protocol the request speaks, so every agent gets the same calls. A
// NOTES-WRITE-429 conversation is rate-limited once per model, in its provider's own form.
func protocolModel() func(int, agenttest.Request) agenttest.Reply {
	var mu sync.Mutex
	limited := map[string]bool{}
	return agenttest.Scripted(func(_ int, c agenttest.Conv) (agenttest.Turn, *agenttest.Reply) {
		if c.Model == "judge-model" {
			return agenttest.Turn{Text: `{"passed": true, "evidence": "the answer names 1.2.0"}`, Usage: agenttest.Tokens{Prompt: 50, Completion: 10}}, nil
		}
		if strings.HasPrefix(c.Input, "NOTES-WRITE-429") {
			mu.Lock()
			first := !limited[c.Model]
			limited[c.Model] = true
			mu.Unlock()
			if first {
				return agenttest.Turn{}, agenttest.FailFor(c, http.StatusTooManyRequests, "Retry-After", "0")
			}
		}
		usage := func(prompt int64) agenttest.Tokens { return agenttest.Tokens{Prompt: prompt, Completion: 10} }
		bash := func(id, cmd string) agenttest.Turn {
			args, _ := json.Marshal(map[string]string{"command": cmd})
			return agenttest.Turn{Calls: []agenttest.Call{{ID: id, Name: "bash", Arguments: string(args)}}, Usage: usage(100)}
		}
		tools := len(c.ToolResults)
		switch {
		case strings.HasPrefix(c.Input, "NOTES-WRITE"):
			switch tools {
			case 0:
				return bash("call-1", "cat /skills/release-notes/SKILL.md"), nil
			case 1:
				args, _ := json.Marshal(map[string]string{"path": "NOTES.md", "content": notesContent})
				return agenttest.Turn{Calls: []agenttest.Call{{ID: "call-2", Name: "write_file", Arguments: string(args)}}, Usage: usage(200)}, nil
			}
			return agenttest.Turn{Text: "The release notes are in NOTES.md.", Usage: usage(300)}, nil
		case strings.HasPrefix(c.Input, "NOTES-PEEK"):
			switch tools {
			case 0:
				return bash("call-1", "cat /skills/release-notes/SKILL.md"), nil
			case 1:
				return bash("call-2", "cat /skills/changelog-lint/SKILL.md"), nil
			}
			return agenttest.Turn{Text: "Both skills are read.", Usage: usage(300)}, nil
		case strings.HasPrefix(c.Input, "LINT"):
			if tools == 0 {
				return bash("call-1", "cat evals/files/CHANGELOG.md"), nil
			}
			// Each agent's own answer, so that the judge's cache cannot answer one from another.
			return agenttest.Turn{Text: fmt.Sprintf("Version 1.2.0 has no date (%s).", c.Model), Usage: usage(200)}, nil
		}
		return agenttest.Turn{Text: "unknown scenario: " + c.Input, Usage: usage(10)}, nil
	})
}

// standinDir builds the stand-in CLIs into a directory the sandbox's user can read.
func standinDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "standin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range standin.Names() {
		b, err := os.ReadFile(standin.Build(t, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestSameVerdictsThroughEveryProtocol runs sameSuite against the built-in agent on each
// provider's protocol (OpenAI Chat Completions, Anthropic Messages, Gemini, natively through
// the official SDKs) and three stand-in CLIs built on those SDKs (Anthropic, Gemini, OpenAI
// Responses),
// each in a real sandbox behind the model gateway in its own protocol, loading its skills
// from its skills_dir as the real CLI's loader does, with one scripted model: every case gets
// the same verdict and the same assertion results through every protocol, the trajectories
// record activation at the same turn, the real key never enters a sandbox and no sandbox's
// token reaches the upstream.
func TestSameVerdictsThroughEveryProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker test; skipped with -short")
	}
	const key = "sk-test-EVERY-7c21"
	t.Setenv("SAME_UPSTREAM_KEY", key)
	srv := agenttest.NewAny(t, protocolModel())
	bins := standinDir(t)

	cli := func(name, api, bin, dir string, env map[string]string, flags ...string) map[string]any {
		return map[string]any{"name": name, "api": api, "model": name + "-model", "api_key_env": "SAME_UPSTREAM_KEY",
			"base_url":   map[string]string{"openai": srv.BaseURL(), "anthropic": srv.URL, "gemini": srv.URL}[api],
			"skills_dir": dir, "command": append(append([]string{standinMount + "/" + bin}, flags...), "{{prompt}}"), "env": env}
	}
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	models := modelsFromConfig(t, map[string]any{
		"agents": []map[string]any{
			{"name": "builtin", "model": "agent-model", "base_url": srv.BaseURL(), "api_key_env": "SAME_UPSTREAM_KEY", "max_turns": 6},
			// The built-in agent natively on each provider's protocol.
			{"name": "builtin-anthropic", "api": "anthropic", "model": "b-claude-model", "base_url": srv.URL, "api_key_env": "SAME_UPSTREAM_KEY", "max_turns": 6},
			{"name": "builtin-gemini", "api": "gemini", "model": "b-gemini-model", "base_url": srv.URL, "api_key_env": "SAME_UPSTREAM_KEY", "max_turns": 6},
			cli("claude", "anthropic", "anthropic", "/work/.claude/skills",
				map[string]string{"ANTHROPIC_BASE_URL": "{{gateway_url}}", "ANTHROPIC_API_KEY": "{{token}}"}, "-stream"),
			cli("gemini", "gemini", "gemini", "/work/.gemini/skills",
				map[string]string{"GOOGLE_GEMINI_BASE_URL": "{{gateway_url}}", "GEMINI_API_KEY": "{{token}}"}, "-stream"),
			cli("codex", "openai", "openai", "/work/.agents/skills",
				map[string]string{"OPENAI_BASE_URL": "{{base_url}}", "CODEX_API_KEY": "{{token}}"}),
		},
		"judge": map[string]any{"model": "judge-model", "base_url": srv.BaseURL(), "api_key_env": "SAME_UPSTREAM_KEY"},
	}, log)
	for _, name := range []string{"claude", "gemini", "codex"} {
		spec := models.Agents[name]
		spec.Mounts = append(spec.Mounts, sandbox.Mount{Source: bins, Target: standinMount})
		models.Agents[name] = spec
	}

	runner := startRunner(t, "every", log)
	exec := worker.NewSandboxExecutor(runner, log).WithAgents(models.Agents, models.Judge, models.Votes)
	f := startFleet(t, exec, 1, nil)
	rep := runToEnd(t, f, sameBundle(t), &pb.RunSpec{Agents: models.Names})

	wants := checkSameVerdicts(t, rep, models.Names)
	checkTrajectories(t, f.Coordinator, rep.Run, wants, models.Names)

	// The key stayed in the worker: every request reached the upstream with it, none with a
	// sandbox's token in its place.
	for _, r := range srv.Requests() {
		auth := r.Header.Get("Authorization") + r.Header.Get("X-Api-Key") + r.Header.Get("X-Goog-Api-Key")
		if !strings.Contains(auth, key) {
			t.Errorf("a request to %s reached the upstream without the real key: %v", r.Path, r.Header)
		}
	}
	// Each CLI found the skills where its own loader looks: its catalog (the stand-ins list
	// every skill they load in their system prompt) names both skills under its skills_dir.
	dirs := map[string]string{"claude-model": "/work/.claude/skills", "gemini-model": "/work/.gemini/skills", "codex-model": "/work/.agents/skills"}
	seen := map[string]int{}
	for _, r := range srv.Requests() {
		c := agenttest.ParseConv(r)
		dir, ok := dirs[c.Model]
		if !ok {
			continue
		}
		seen[c.Model]++
		for _, sk := range []string{"release-notes", "changelog-lint"} {
			if !strings.Contains(c.System, dir+"/"+sk+"/SKILL.md") {
				t.Errorf("%s's system prompt does not list %s from %s: %q", c.Model, sk, dir, c.System)
			}
		}
	}
	if len(seen) != len(dirs) {
		t.Errorf("requests per CLI model %v, want some from each of %v", seen, dirs)
	}
	// Each model's rate-limited conversation was refused once and answered three times.
	limited := map[string]int{}
	for _, r := range srv.Requests() {
		if c := agenttest.ParseConv(r); strings.HasPrefix(c.Input, "NOTES-WRITE-429") {
			limited[c.Protocol+"/"+c.Model]++
		}
	}
	for _, m := range []string{"openai-chat/agent-model", "anthropic/claude-model", "gemini/gemini-model", "openai-responses/codex-model",
		"anthropic/b-claude-model", "gemini/b-gemini-model"} {
		if limited[m] != 4 {
			t.Errorf("requests of notes-after-rate-limit %v: want 4 for %s (one refused, three answered)", limited, m)
		}
	}
}
