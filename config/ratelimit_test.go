package config

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLoadRateLimit(t *testing.T) {
	for _, tt := range []struct {
		name, yaml string
		rule       string
		line       int
		agent      *RateLimit
		judge      *RateLimit
	}{
		{name: "agent and judge", yaml: "agents:\n  - name: gpt\n    model: m\n    rate_limit: {requests_per_minute: 120, tokens_per_minute: 90000}\njudge:\n  model: j\n  rate_limit:\n    requests_per_minute: 30\n",
			agent: &RateLimit{RequestsPerMinute: 120, TokensPerMinute: 90000}, judge: &RateLimit{RequestsPerMinute: 30}},
		{name: "none", yaml: "agents:\n  - {name: gpt, model: m}\n"},
		{name: "zero is no limit", yaml: "agents:\n  - {name: gpt, model: m, rate_limit: {}}\n", agent: &RateLimit{}},
		{name: "negative requests", yaml: "agents:\n  - name: gpt\n    model: m\n    rate_limit: {requests_per_minute: -1}\n", rule: "config.agents.rate_limit", line: 4},
		{name: "too many tokens", yaml: "agents:\n  - name: gpt\n    model: m\n    rate_limit: {tokens_per_minute: 2000000000}\n", rule: "config.agents.rate_limit", line: 4},
		{name: "typo", yaml: "agents:\n  - name: gpt\n    model: m\n    rate_limit: {requests_per_min: 60}\n", rule: "config.yaml", line: 4},
		{name: "command agent", yaml: "agents:\n  - name: cli\n    model: m\n    command: [x]\n    rate_limit: {requests_per_minute: 60}\n", rule: "config.agents.rate_limit", line: 5},
		{name: "judge negative tokens", yaml: "judge:\n  model: j\n  rate_limit: {tokens_per_minute: -5}\n", rule: "config.judge.rate_limit", line: 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName)
			if err := os.WriteFile(path, []byte(tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			s, _, diags := Load(path)
			if tt.rule != "" {
				if len(diags) != 1 || diags[0].Rule != tt.rule || diags[0].Line != tt.line || diags[0].File != path {
					t.Fatalf("diagnostics %v, want %s at line %d", diags, tt.rule, tt.line)
				}
				return
			}
			if len(diags) > 0 {
				t.Fatalf("unexpected diagnostics %v", diags)
			}
			var agent, judge *RateLimit
			if len(s.Agents) > 0 {
				agent = s.Agents[0].RateLimit
			}
			if s.Judge != nil {
				judge = s.Judge.RateLimit
			}
			if !sameRate(agent, tt.agent) || !sameRate(judge, tt.judge) {
				t.Fatalf("agent %+v judge %+v, want %+v and %+v", agent, judge, tt.agent, tt.judge)
			}
		})
	}
}

func sameRate(a, b *RateLimit) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
