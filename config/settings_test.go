package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	tests := []struct {
		name, yaml string
		rule       string
		line       int
		memory     int64
		cpus       int64
	}{
		{name: "limits", yaml: "sandbox:\n  memory: 256Mi\n  cpus: 0.5\n  pids: 64\n  file_size: 8m\n  output: 64KiB\n", memory: 256 << 20, cpus: 5e8},
		{name: "empty file", yaml: ""},
		{name: "typo", yaml: "sandbox:\n  memroy: 1g\n", rule: "config.yaml", line: 2},
		{name: "bad size", yaml: "sandbox:\n  cpus: 1\n  memory: lots\n", rule: "config.sandbox.memory", line: 3},
		{name: "negative cpus", yaml: "sandbox:\n  cpus: -1\n", rule: "config.sandbox.cpus", line: 2},
		{name: "unknown top level", yaml: "workers: 3\nsandbox: {}\n", rule: "config.yaml", line: 1},
		{name: "agents", yaml: "agents:\n  - name: gpt\n    model: gpt-4.1-mini\n    api_key_env: OPENAI_API_KEY\n  - name: local\n    base_url: http://127.0.0.1:11434/v1\n    model: qwen\njudge:\n  model: judge-m\n  votes: 3\n"},
		{name: "agent without model", yaml: "agents:\n  - name: a\n  - name: b\n    model: m\n", rule: "config.agents.model", line: 2},
		{name: "duplicate agent", yaml: "agents:\n  - {name: a, model: m}\n  - {name: a, model: m}\n", rule: "config.agents.name", line: 3},
		{name: "bad key variable", yaml: "agents:\n  - {name: a, model: m, api_key_env: \"$(curl x)\"}\n", rule: "config.agents.api_key_env", line: 2},
		{name: "command agent", yaml: "agents:\n  - name: cli\n    model: m\n    command: [python3, agent.py, \"{{prompt}}\"]\n    env: {OPENAI_BASE_URL: \"{{base_url}}\", OPENAI_API_KEY: \"{{token}}\"}\n"},
		{name: "command as a string", yaml: "agents:\n  - name: cli\n    model: m\n    command: claude -p\n", rule: "config.agents.command", line: 4},
		{name: "empty command", yaml: "agents:\n  - name: cli\n    model: m\n    command: []\n", rule: "config.agents.command", line: 4},
		{name: "command with a list inside", yaml: "agents:\n  - name: cli\n    model: m\n    command: [a, [b]]\n", rule: "config.agents.command", line: 4},
		{name: "command with null", yaml: "agents:\n  - name: cli\n    model: m\n    command: [a, null]\n", rule: "config.agents.command", line: 4},
		{name: "command program is an option", yaml: "agents:\n  - name: cli\n    model: m\n    command: [--rm, x]\n", rule: "config.agents.command", line: 4},
		{name: "bad command env name", yaml: "agents:\n  - name: cli\n    model: m\n    command: [x]\n    env: {\"A=B\": c}\n", rule: "config.agents.env", line: 5},
		{name: "env without command", yaml: "agents:\n  - name: cli\n    model: m\n    env: {A: b}\n", rule: "config.agents.env", line: 4},
		{name: "max tokens field", yaml: "agents:\n  - name: cli\n    model: m\n    command: [x]\n    max_tokens_field: max_tokens\n"},
		{name: "bad max tokens field", yaml: "agents:\n  - name: cli\n    model: m\n    command: [x]\n    max_tokens_field: maxTokens\n", rule: "config.agents.max_tokens_field", line: 5},
		{name: "max tokens field without command", yaml: "agents:\n  - name: gpt\n    model: m\n    max_tokens_field: max_tokens\n", rule: "config.agents.max_tokens_field", line: 4},
		{name: "alias bomb", yaml: "agents:\n  - &a {name: a, model: m, env: {A: b}}\n  - *a\n", rule: RuleAlias, line: 2},
		{name: "laughs", yaml: "judge:\n  model: j\nagents:\n  - {name: a, model: m, command: [x], env: {A: &a [b, b]}}\n  - {name: b, model: m, command: [x], env: {A: [*a, *a]}}\n", rule: RuleAlias, line: 4},
		{name: "anchor", yaml: "sandbox:\n  memory: &m 256Mi\n", rule: RuleAlias, line: 2},
		// yaml.v3 numbers parser errors from 0: the stray key is on line 3, not 2.
		{name: "parser error line", yaml: "sandbox:\n  memory: 1g\n cpus: 2\n", rule: "config.yaml", line: 3},
		// yaml.v3 gives no line for the first one.
		{name: "syntax error on line 1", yaml: ": :\n", rule: "config.yaml", line: 1},
		{name: "too deep", yaml: "agents:\n" + strings.Repeat("  ", 0) + strings.Repeat("[", 70) + strings.Repeat("]", 70) + "\n", rule: "config.yaml", line: 2},
		{name: "even votes", yaml: "judge:\n  model: j\n  votes: 2\n", rule: "config.judge.votes", line: 3},
		{name: "max output tokens", yaml: "agents:\n  - name: cli\n    model: m\n    command: [x]\n    max_output_tokens: 64000\n  - {name: gpt, model: m, max_output_tokens: 8000}\njudge:\n  model: j\n  max_output_tokens: 2000\n"},
		{name: "negative max output tokens", yaml: "agents:\n  - name: cli\n    model: m\n    max_output_tokens: -1\n", rule: "config.agents.max_output_tokens", line: 4},
		{name: "max output tokens past any model's", yaml: "agents:\n  - name: cli\n    model: m\n    max_output_tokens: 99999999999\n", rule: "config.agents.max_output_tokens", line: 4},
		{name: "judge max output tokens past any model's", yaml: "judge:\n  model: j\n  max_output_tokens: 16777217\n", rule: "config.judge.max_output_tokens", line: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName)
			if err := os.WriteFile(path, []byte(tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			_, limits, diags := Load(path)
			if tt.rule != "" {
				if len(diags) != 1 || diags[0].Rule != tt.rule || diags[0].Line != tt.line || diags[0].File != path {
					t.Fatalf("diagnostics %v, want %s at line %d", diags, tt.rule, tt.line)
				}
				return
			}
			if len(diags) > 0 {
				t.Fatalf("unexpected diagnostics %v", diags)
			}
			if limits.GetMemoryBytes() != tt.memory || limits.GetNanoCpus() != tt.cpus {
				t.Fatalf("limits %v", limits)
			}
		})
	}
	if _, _, d := Load(filepath.Join(t.TempDir(), "nope.yaml")); len(d) != 1 || !strings.Contains(d[0].Message, "does not exist") {
		t.Fatalf("missing file: %v", d)
	}
	root := t.TempDir()
	if Find([]string{t.TempDir(), root}) != "" {
		t.Fatal("found a config where there is none")
	}
	_ = os.WriteFile(filepath.Join(root, FileName), nil, 0o644)
	if got := Find([]string{t.TempDir(), root}); got != filepath.Join(root, FileName) {
		t.Fatalf("Find = %q", got)
	}
}

func TestLoadMaxOutputTokens(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	yaml := "agents:\n  - {name: cli, model: m, command: [x], max_output_tokens: 64000}\n  - {name: gpt, model: m}\njudge:\n  model: j\n  max_output_tokens: 2000\n"
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	s, _, diags := Load(path)
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	if s.Agents[0].MaxOutputTokens != 64000 || s.Agents[1].MaxOutputTokens != 0 || s.Judge.MaxOutputTokens != 2000 {
		t.Errorf("max output tokens %d, %d, judge %d; want 64000, 0 (the model's own), 2000",
			s.Agents[0].MaxOutputTokens, s.Agents[1].MaxOutputTokens, s.Judge.MaxOutputTokens)
	}
}
