package fleet

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/skillfleet/skillfleet/agent/agenttest"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
	"github.com/skillfleet/skillfleet/worker"
)

// TestPluginEvalCasesRun runs the `claude plugin eval` suite of suite/testdata against the
// built-in agent and the scripted model of TestSameVerdictsThroughBothAgents, on real
// sandboxes: every mapped grader is decided, and the baseline grader's reference transcript
// reaches the judge.
func TestPluginEvalCasesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker test; skipped with -short")
	}
	t.Setenv("PE_UPSTREAM_KEY", "sk-test-PE-51e0")
	srv := agenttest.NewFunc(t, sameModel())

	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	models := modelsFromConfig(t, map[string]any{
		"agents": []map[string]any{{"name": "builtin", "model": "agent-model", "base_url": srv.BaseURL(), "api_key_env": "PE_UPSTREAM_KEY", "max_turns": 6}},
		"judge":  map[string]any{"model": "judge-model", "base_url": srv.BaseURL(), "api_key_env": "PE_UPSTREAM_KEY"},
	}, log)

	s := suite.Load([]string{filepath.Join("..", "suite", "testdata", "plugineval", "good")}, skill.Options{})
	if s.Diagnostics.HasErrors() {
		t.Fatalf("the suite does not load: %v", s.Diagnostics)
	}
	var buf bytes.Buffer
	if _, err := suite.WriteBundle(&buf, s.Graph, s.Catalog.Skills()); err != nil {
		t.Fatal(err)
	}

	runner := startRunner(t, "plugineval", log)
	exec := worker.NewSandboxExecutor(runner, log).WithAgents(models.Agents, models.Judge, models.Votes)
	f := startFleet(t, exec, 1, nil)
	rep := runToEnd(t, f, buf.Bytes(), &pb.RunSpec{Agents: models.Names})

	wants := map[string]struct {
		status string
		types  []string
	}{
		"notes-written": {report.StatusPassed, []string{"max_turns", "output_matches", "file_matches", "tool_called", "tool_called",
			"tool_order", "file_exists", "file_not_exists", "semantic_match"}},
		"notes-like-reference": {report.StatusPassed, []string{"tool_called", "semantic_match"}},
	}
	if len(rep.Cases) != len(wants) {
		t.Errorf("%d case rows, want %d", len(rep.Cases), len(wants))
	}
	for _, c := range rep.Cases {
		w, ok := wants[c.Case]
		if !ok {
			t.Errorf("unexpected case %s", c.Case)
			continue
		}
		var types []string
		for _, a := range c.Assertions {
			types = append(types, a.Type)
		}
		if c.Status != w.status || !slices.Equal(types, w.types) {
			t.Errorf("%s: %s with assertions %v, want %s with %v%s", c.Case, c.Status, types, w.status, w.types, evidence(c))
		}
	}
	// The baseline grader's reference transcript is shown to the judge, the llm grader's
	// rubric without it.
	var withRef, withoutRef int
	for _, r := range srv.Requests() {
		if r.Params()["model"] != "judge-model" {
			continue
		}
		body := string(r.Body)
		switch {
		case strings.Contains(body, "REFERENCE-9c1d"):
			withRef++
		case strings.Contains(body, "says where the release notes were saved"):
			withoutRef++
		}
	}
	if withRef == 0 || withoutRef == 0 {
		t.Errorf("judge requests: %d with the reference transcript, %d for the llm rubric; want both", withRef, withoutRef)
	}
}
