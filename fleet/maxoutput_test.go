package fleet

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/agent/agenttest"
	"github.com/skillfleet/skillfleet/config"
	"github.com/skillfleet/skillfleet/gateway"
)

// An agent's and the judge's max_output_tokens reach the wire: the built-in agent's and the
// judge's requests carry it, and so does a command agent's request that names none, at its
// gateway.
func TestMaxOutputTokensReachTheWire(t *testing.T) {
	answer := func(int, agenttest.Request) agenttest.Reply { return agenttest.Text("done", 10, 2) }
	builtin, judgeUp, cliUp := agenttest.NewFunc(t, answer), agenttest.NewFunc(t, answer), agenttest.NewFunc(t, answer)
	cfg := &config.Settings{
		Agents: []config.Agent{
			{Name: "builtin", Model: "m", BaseURL: builtin.BaseURL(), MaxOutputTokens: 7000},
			{Name: "cli", Model: "m", BaseURL: cliUp.BaseURL(), MaxOutputTokens: 6000, MaxTokens: 1_000_000, Command: []string{"cli", "{{prompt}}"}},
		},
		Judge: &config.Judge{Model: "j", BaseURL: judgeUp.BaseURL(), MaxOutputTokens: 900},
	}
	m, err := BuildModels(ModelsConfig{GatewayDir: t.TempDir()}, cfg, nil, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	ctx := context.Background()

	if _, _, err := m.Agents["builtin"].Agent.Run(ctx, nil, agent.Request{Input: "go"}); err != nil {
		t.Fatalf("built-in agent: %v", err)
	}
	// The judge's answer is no verdict: only what it sent matters here.
	_, _, _ = m.Judge.EvaluateWithReference(ctx, "says done", "go", "", "done", 1)

	s, err := m.gateways[0].Open("job", gateway.Budget{MaxTokens: 1_000_000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(`{"model":"x","messages":[{"role":"user","content":"go"}]}`))
	req.Header.Set("Authorization", "Bearer "+s.Token())
	rec := httptest.NewRecorder()
	m.gateways[0].ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("gateway: %d %s", rec.Code, rec.Body)
	}

	for name, tc := range map[string]struct {
		up   *agenttest.Server
		want float64
	}{"built-in agent": {builtin, 7000}, "judge": {judgeUp, 900}, "command agent's gateway": {cliUp, 6000}} {
		reqs := tc.up.Requests()
		if len(reqs) == 0 {
			t.Errorf("%s: no request reached its endpoint", name)
			continue
		}
		if got := reqs[0].Params()["max_completion_tokens"]; got != tc.want {
			t.Errorf("%s: max_completion_tokens %v, want %v", name, got, tc.want)
		}
	}
}

// max_output_tokens decides where answers may be cut, so it is part of an agent's digest (and
// the judge's of every agent's); unset, the digest is what it was before the key.
func TestMaxOutputTokensInTheDigest(t *testing.T) {
	base := func() *config.Settings {
		return &config.Settings{Agents: []config.Agent{{Name: "a", Model: "m"}}, Judge: &config.Judge{Model: "j"}}
	}
	digest := func(cfg *config.Settings) string {
		return AgentDigests(ModelsConfig{}, cfg, "img", "sha256:img")["a"]
	}
	agentCap, judgeCap := base(), base()
	agentCap.Agents[0].MaxOutputTokens = 8000
	judgeCap.Judge.MaxOutputTokens = 900
	unset := digest(base())
	if digest(agentCap) == unset || digest(judgeCap) == unset || digest(agentCap) == digest(judgeCap) {
		t.Errorf("digests %s (unset), %s (agent), %s (judge); want three", unset, digest(agentCap), digest(judgeCap))
	}
	// Unset, the key is not serialised: digests from before it stay valid.
	a, _ := json.Marshal(agentIdentity{Name: "a"})
	w, _ := json.Marshal(workerIdentity{JudgeModel: "j"})
	if strings.Contains(string(a)+string(w), "max_output_tokens") {
		t.Errorf("identities %s %s name an unset max_output_tokens", a, w)
	}
}
