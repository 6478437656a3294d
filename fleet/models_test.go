package fleet

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/config"
	"github.com/skillfleet/skillfleet/gateway"
	"github.com/skillfleet/skillfleet/sandbox"
)

func TestBuildModels(t *testing.T) {
	two := &config.Settings{Agents: []config.Agent{{Name: "a", Model: "m1", MaxTurns: 7}, {Name: "b", Model: "m2"}}, Judge: &config.Judge{Model: "j", Votes: 3}}
	tests := []struct {
		name      string
		flags     ModelsConfig
		cfg       *config.Settings
		wantNames []string
		wantKeys  []string
		judge     bool
		votes     int
		wantErr   bool
	}{
		{name: "nothing configured", flags: ModelsConfig{MaxTurns: 50}, votes: 1},
		{name: "default agent from flags", flags: ModelsConfig{Model: "m", JudgeModel: "j", MaxTurns: 50}, wantKeys: []string{""}, judge: true, votes: 1},
		{name: "named agents and judge from config", flags: ModelsConfig{MaxTurns: 50}, cfg: two, wantNames: []string{"a", "b"}, wantKeys: []string{"a", "b"}, judge: true, votes: 3},
		{name: "flag and config agents conflict", flags: ModelsConfig{Model: "m"}, cfg: two, wantErr: true},
		{name: "a judge without agents", flags: ModelsConfig{JudgeModel: "j"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := BuildModels(tt.flags, tt.cfg, nil, zap.NewNop())
			if tt.wantErr {
				if err == nil {
					t.Fatal("want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for k := range m.Agents {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if !slices.Equal(keys, tt.wantKeys) || !slices.Equal(m.Names, tt.wantNames) || (m.Judge != nil) != tt.judge || m.Votes != tt.votes {
				t.Fatalf("agents %v names %v judge %v votes %d", keys, m.Names, m.Judge != nil, m.Votes)
			}
			if tt.cfg != nil && m.Agents["a"].Limits.MaxTurns != 7 {
				t.Fatalf("agent a limits %+v, want its own max_turns", m.Agents["a"].Limits)
			}
		})
	}
}

func TestBuildCommandAgent(t *testing.T) {
	t.Setenv("CLI_KEY", "sk-real")
	dir := t.TempDir()
	cfg := &config.Settings{Agents: []config.Agent{
		{Name: "cli", Model: "m", BaseURL: "http://127.0.0.1:1/v1", APIKeyEnv: "CLI_KEY", MaxTokens: 500,
			Command: []string{"my-agent", "{{prompt}}"}, Env: map[string]string{"OPENAI_API_KEY": "{{token}}"}},
		{Name: "builtin", Model: "m"},
	}}
	m, err := BuildModels(ModelsConfig{MaxTurns: 5, GatewayDir: dir}, cfg, nil, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	spec := m.Agents["cli"]
	if _, ok := spec.Agent.(*agent.Command); !ok {
		t.Fatalf("agent cli is a %T, want a command agent", spec.Agent)
	}
	if spec.Limits.MaxTokens != 500 {
		t.Fatalf("limits %+v, want the agent's max_tokens as the budget", spec.Limits)
	}
	want := []sandbox.Mount{{Source: filepath.Join(dir, "cli"), Target: GatewayMount}}
	if !slices.Equal(spec.Mounts, want) {
		t.Fatalf("mounts %v, want %v", spec.Mounts, want)
	}
	if len(m.Agents["builtin"].Mounts) != 0 || !slices.Equal(m.Names, []string{"cli", "builtin"}) {
		t.Fatalf("builtin %+v, names %v", m.Agents["builtin"], m.Names)
	}
	sock := filepath.Join(dir, "cli", gateway.SocketName)
	st, err := os.Stat(filepath.Join(dir, "cli"))
	if err != nil || st.Mode().Perm() != 0o711 {
		t.Fatalf("socket directory: %v %v, want mode 0711: the sandbox user reaches the sockets, but cannot list the jobs' ones", st, err)
	}
	if st, err := os.Stat(sock); err != nil || st.Mode()&os.ModeSocket == 0 {
		t.Fatalf("gateway socket: %v %v", st, err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cli")); !os.IsNotExist(err) {
		t.Fatalf("Close left the socket directory behind: %v", err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("Close removed the directory it was given: %v", err)
	}

	// Without --gateway-dir: a private directory of its own, removed by Close.
	m, err = BuildModels(ModelsConfig{}, cfg, nil, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	own := filepath.Dir(m.Agents["cli"].Mounts[0].Source)
	if !strings.HasPrefix(filepath.Base(own), "skillfleet-gateway-") {
		t.Fatalf("default gateway directory %s", own)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(own); !os.IsNotExist(err) {
		t.Fatalf("Close left %s behind: %v", own, err)
	}

	bad := &config.Settings{Agents: []config.Agent{{Name: "cli", Model: "m", Command: []string{"-x"}}}}
	if _, err := BuildModels(ModelsConfig{GatewayDir: t.TempDir()}, bad, nil, zap.NewNop()); err == nil {
		t.Fatal("a command starting with '-' was accepted")
	}
}
