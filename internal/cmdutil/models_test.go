package cmdutil

import (
	"slices"
	"testing"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/config"
)

func TestBuildModels(t *testing.T) {
	two := &config.Suite{Agents: []config.Agent{{Name: "a", Model: "m1", MaxTurns: 7}, {Name: "b", Model: "m2"}}, Judge: &config.Judge{Model: "j", Votes: 3}}
	tests := []struct {
		name      string
		flags     ModelFlags
		cfg       *config.Suite
		wantNames []string
		wantKeys  []string
		judge     bool
		votes     int
		wantErr   bool
	}{
		{name: "nothing configured", flags: ModelFlags{MaxTurns: 50}, votes: 1},
		{name: "default agent from flags", flags: ModelFlags{Model: "m", JudgeModel: "j", MaxTurns: 50}, wantKeys: []string{""}, judge: true, votes: 1},
		{name: "named agents and judge from config", flags: ModelFlags{MaxTurns: 50}, cfg: two, wantNames: []string{"a", "b"}, wantKeys: []string{"a", "b"}, judge: true, votes: 3},
		{name: "flag and config agents conflict", flags: ModelFlags{Model: "m"}, cfg: two, wantErr: true},
		{name: "a judge without agents", flags: ModelFlags{JudgeModel: "j"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := tt.flags.Build(tt.cfg, nil, zap.NewNop())
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
