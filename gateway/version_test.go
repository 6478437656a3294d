package gateway

import (
	"net/http"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/agent"
)

// The CLI's version is read from the User-Agent it sends, as each CLI builds it: Claude Code
// "claude-cli/<v> (external, <entrypoint>)" (captures in testdata/cli), Codex
// "<originator>/<v> (<os> <os version>; <arch>) <terminal>" with originator codex_cli_rs, or
// codex_exec under `codex exec` (openai/codex codex-rs/core/src/default_client.rs
// get_codex_user_agent, codex-rs/exec/src/lib.rs), Gemini CLI
// "GeminiCLI/<v>/<model> (<platform>; <arch>; <surface>)" (google-gemini/gemini-cli v0.56.0,
// packages/core/src/core/contentGenerator.ts). What a sandboxed program sends is bounded and
// restricted to a product token's characters before it reaches a result.
func TestCLIVersionFromUserAgent(t *testing.T) {
	for _, tt := range []struct{ ua, want string }{
		{"claude-cli/2.1.165 (external, sdk-cli)", "claude-cli/2.1.165"},
		{"claude-cli/2.1.240 (external, cli)", "claude-cli/2.1.240"},
		{"codex_exec/0.162.1 (Debian 12.0.0; x86_64) dumb", "codex_exec/0.162.1"},
		{"codex_cli_rs/0.46.0 (Debian 12.0.0; x86_64) xterm-256color", "codex_cli_rs/0.46.0"},
		{"GeminiCLI/0.56.0/gemini-2.5-pro (linux; x64; terminal) google-genai-sdk/1.30.0 gl-node/v22.17.0", "GeminiCLI/0.56.0"},
		{"GeminiCLI-a2a-server/0.56.0/gemini-2.5-pro (linux; x64; a2a)", "GeminiCLI-a2a-server/0.56.0"},
		{"opencode/1.18.33 ai-sdk/openai-compatible/1.0.x", "opencode/1.18.33"},
		{"Charm-Crush/0.90.0 (https://charm.land/crush)", "Charm-Crush/0.90.0"},
		{"Go-http-client/1.1", ""},
		{"", ""},
		{"claude-cli", ""},
		{"claude-cli/", ""},
		{"claude-cli/latest", ""},
		{"/2.1.0", ""},
		{"claude cli/2.1.0", ""},
		{"claude-cli/2.1.0<script>", ""},
		{"claude-cli/2.1.0\x00", ""},
		{"x/" + strings.Repeat("1", 65), ""},
		{strings.Repeat("x", 65) + "/1.0", ""},
	} {
		if got := cliVersion(tt.ua); got != tt.want {
			t.Errorf("cliVersion(%q) = %q, want %q", tt.ua, got, tt.want)
		}
	}
}

// A session records the version of the CLI that sent its requests, the first one it could
// read; the trajectory names it as the agent's version. A session whose CLI sent none says
// unknown.
func TestSessionRecordsTheCLIVersion(t *testing.T) {
	g := readAnthropicGolden(t, "claude-code-2.1.messages-stream.json")
	up := newAnthropicUpstream(t, anthropicAnswers)
	f := serveAnthropic(t, up.URL, nil)
	s, err := f.g.Open("job", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := s.AgentVersion(); v != "" {
		t.Errorf("before any request: version %q", v)
	}
	if r := f.replayAnthropic(t, g, s.Token()); r.Status != http.StatusOK {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	// A later request with another User-Agent (a helper the CLI started) does not replace it.
	g.Headers["User-Agent"] = "claude-cli/9.9.9 (external, sdk-ts)"
	if r := f.replayAnthropic(t, g, s.Token()); r.Status != http.StatusOK {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if v := s.AgentVersion(); v != "claude-cli/2.1.165" {
		t.Errorf("version %q, want claude-cli/2.1.165", v)
	}
	if v := s.Trajectory().Agent.Version; v != "claude-cli/2.1.165" {
		t.Errorf("the trajectory's agent version %q, want claude-cli/2.1.165", v)
	}

	quiet, err := f.g.Open("job2", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g.Headers["User-Agent"] = "" // Go's client then sends none
	if r := f.replayAnthropic(t, g, quiet.Token()); r.Status != http.StatusOK {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if v, tv := quiet.AgentVersion(), quiet.Trajectory().Agent.Version; v != "" || tv != agent.CommandAgentVersion {
		t.Errorf("no User-Agent: version %q, trajectory's %q; want none and %q", v, tv, agent.CommandAgentVersion)
	}
}

// The User-Agents of the CLIs' golden requests (testdata/cli, each naming its source) give
// their versions.
func TestCLIVersionOfTheGoldens(t *testing.T) {
	for file, want := range map[string]string{
		"claude-code-2.1.messages-stream.json": "claude-cli/2.1.165",
		"gemini-cli-0.56.stream.json":          "GeminiCLI/0.56.0",
		"codex-2025.responses.json":            "codex_cli_rs/0.46.0",
		"crush.chat.json":                      "Charm-Crush/0.90.0",
	} {
		if got := cliVersion(loadGolden(t, file).Headers["User-Agent"]); got != want {
			t.Errorf("%s: %q, want %q", file, got, want)
		}
	}
}
