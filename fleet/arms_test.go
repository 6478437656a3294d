package fleet

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/agent/agenttest"
	"github.com/skillfleet/skillfleet/comparison"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/stats"
	"github.com/skillfleet/skillfleet/suite"
	"github.com/skillfleet/skillfleet/worker"
)

// TestBaselineArms: the scripted model knows the house greeting only from the skill's body,
// which it reads when the system prompt lists the skill. With the skill the case passes;
// without it (not listed, not mounted) it fails; against the old version (listed where the
// skill is, with the old body) it fails too. The with_skill arm alone decides the run.
func TestBaselineArms(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker test; skipped with -short")
	}
	srv := agenttest.Greeter(t, regexp.MustCompile(`<location>(/skills/greeter/SKILL\.md)</location>`))

	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	runner := startRunner(t, "arms", log)
	client, err := agent.NewClient(agent.Endpoint{Name: "agent", BaseURL: srv.BaseURL(), APIKey: apiKey, Model: "agent-model"}, agent.ClientDeps{})
	if err != nil {
		t.Fatal(err)
	}
	exec := worker.NewSandboxExecutor(runner, log).WithAgents(
		map[string]worker.AgentSpec{"": {Agent: agent.NewBuiltIn(client, log), Limits: agent.Limits{MaxTurns: 4}}}, nil, 1)
	f := startFleet(t, exec, 2, nil)

	arms := filepath.Join("..", "suite", "testdata", "arms")
	s := suite.Load([]string{filepath.Join(arms, "current")}, skill.Options{})
	old := suite.LoadOld([]string{filepath.Join(arms, "old")}, skill.Options{})
	var buf bytes.Buffer
	// One bundle for both runs: it holds the old versions, which only old_skill jobs see.
	if _, err := suite.WriteBundleWith(&buf, s.Graph, s.Catalog.Skills(), old); err != nil {
		t.Fatal(err)
	}
	for _, arm := range []string{"without_skill", "old_skill"} {
		t.Run(arm, func(t *testing.T) {
			// Submitted over the untrusted path: the coordinator plans the bundle again.
			rep := runToEnd(t, f, buf.Bytes(), &pb.RunSpec{Name: arm, SkillGlobs: []string{"greeter"}, CaseGlobs: []string{"greet-bob"}, Baseline: arm})
			got := map[string]string{}
			for _, c := range rep.Cases {
				got[c.Arm] = c.Status
			}
			if got[""] != report.StatusPassed || got[arm] != report.StatusFailed || len(rep.Cases) != 2 {
				t.Fatalf("cases by arm %v, want with_skill passed and %s failed: %+v", got, arm, rep.Cases)
			}
			if rep.Summary != (report.Summary{Total: 1, Passed: 1}) || rep.Baseline == nil || rep.Baseline.Failed != 1 {
				t.Errorf("summary %+v, baseline %+v", rep.Summary, rep.Baseline)
			}
			var text bytes.Buffer
			if err := report.WriteText(&text, rep, report.TextOptions{}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text.String(), "greeter/greet-bob ["+arm+"]") {
				t.Errorf("the text report does not name the arm:\n%s", text.String())
			}
			// One case cannot make a difference significant, however large.
			if c := compareArms(t, f, rep.Run, arm); c.Overall.Significant || c.Overall.Delta != 1 {
				t.Errorf("one case: overall %+v, want a delta of 1, not significant", c.Overall)
			}
		})
	}

	// Eight cases, the skill helping in each: significant (McNemar's exact test, 8 discordant
	// pairs all one way: p = 2/256).
	dir := t.TempDir()
	for _, f := range []string{"greeter/SKILL.md", "helper/SKILL.md"} {
		data, err := os.ReadFile(filepath.Join(arms, "current", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f), "test"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var cases strings.Builder
	cases.WriteString("cases:\n")
	for i := range 8 {
		fmt.Fprintf(&cases, "  - {name: greet-%d, input: \"Greet N%d\", assertions: {output_contains: [\"Salutations, N%d\"]}}\n", i, i, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "greeter", "test", "cases.yaml"), []byte(cases.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	eight := suite.Load([]string{dir}, skill.Options{})
	buf.Reset()
	if _, err := suite.WriteBundle(&buf, eight.Graph, eight.Catalog.Skills()); err != nil {
		t.Fatal(err)
	}
	rep := runToEnd(t, f, buf.Bytes(), &pb.RunSpec{Name: "eight", SkillGlobs: []string{"greeter"}, Baseline: "without_skill"})
	c := compareArms(t, f, rep.Run, "without_skill")
	if s := c.Overall; !s.Significant || s.Delta != 1 || s.Test != stats.TestMcNemarExact || math.Abs(s.P-2.0/256) > 1e-12 {
		t.Errorf("eight cases: overall %+v, want a significant delta of 1 by McNemar, p = 2/256", s)
	}

	// A suite of one skill: its without_skill jobs are shown no skill at all, which is the
	// question (does my one skill help?), not a job from an old coordinator.
	one := t.TempDir()
	greeter, err := os.ReadFile(filepath.Join(arms, "current", "greeter", "SKILL.md"))
	if err != nil {
		t.Fatal(err)
	}
	alone := strings.Replace(string(greeter), "requires:\n  - skill: helper\n", "", 1)
	if alone == string(greeter) {
		t.Fatal("the greeter fixture no longer requires helper: update this test")
	}
	if err := os.MkdirAll(filepath.Join(one, "greeter", "test"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(one, "greeter", "SKILL.md"), []byte(alone), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(one, "greeter", "test", "cases.yaml"), []byte(cases.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	single := suite.Load([]string{one}, skill.Options{})
	if single.Diagnostics.HasErrors() || len(single.Catalog.Skills()) != 1 {
		t.Fatalf("the one-skill suite: %v", single.Diagnostics)
	}
	buf.Reset()
	if _, err := suite.WriteBundle(&buf, single.Graph, single.Catalog.Skills()); err != nil {
		t.Fatal(err)
	}
	rep = runToEnd(t, f, buf.Bytes(), &pb.RunSpec{Name: "one", Baseline: "without_skill"})
	for _, cs := range rep.Cases {
		if want := map[string]string{"": report.StatusPassed, "without_skill": report.StatusFailed}[cs.Arm]; cs.Status != want {
			t.Errorf("one skill: %s [%s] %s, want %s%s", cs.Case, cs.Arm, cs.Status, want, evidence(cs))
		}
	}
	c = compareArms(t, f, rep.Run, "without_skill")
	if s := c.Overall; !s.Significant || s.Delta != 1 || math.Abs(s.P-2.0/256) > 1e-12 {
		t.Errorf("one skill, eight cases: overall %+v, want a significant delta of 1, p = 2/256", s)
	}
}

// compareArms compares a finished run's with_skill arm against its baseline arm, as
// skillfleet test does when the run ends.
func compareArms(t *testing.T, f *InProcess, run, arm string) stats.Comparison {
	t.Helper()
	sides := map[string]*comparison.Records{"with_skill": {}, arm: {}}
	err := f.Coordinator.AcceptedResults(context.Background(), run, func(r *pb.Result) error {
		a := r.GetArm()
		if a == "" {
			a = "with_skill"
		}
		sides[a].Add(r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := comparison.Compare(comparison.Side{Arm: arm, Results: sides[arm].List()}, comparison.Side{Arm: "with_skill", Results: sides["with_skill"].List()}, comparison.Options{Axis: comparison.AxisArm})
	if err != nil {
		t.Fatal(err)
	}
	return rep.Comparison
}
