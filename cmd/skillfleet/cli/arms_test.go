package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	runreport "github.com/skillfleet/skillfleet/report"
)

// armResults is a resultSource of one run of n cases in two arms: with_skill passes where
// with is true, the baseline arm where base is true.
func armResults(n int, arm string, with, base bool) resultSource {
	verdict := func(ok bool) pb.Verdict {
		if ok {
			return pb.Verdict_VERDICT_PASSED
		}
		return pb.Verdict_VERDICT_FAILED
	}
	return func(_ context.Context, _ string, fn func(*pb.Result) error) error {
		for i := range n {
			for _, r := range []*pb.Result{
				{Skill: "s", CaseName: fmt.Sprintf("c%d", i), Epoch: 1, Verdict: verdict(with)},
				{Skill: "s", CaseName: fmt.Sprintf("c%d", i), Epoch: 1, Arm: arm, Verdict: verdict(base)},
			} {
				if err := fn(r); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

// TestBaselineGates: after a baseline run, the comparison of its arms is printed and the gates
// set the exit status: better with the skill passes both, worse fails --fail-if-worse, and
// "no difference" fails --fail-unless-better; without a baseline the gates are a usage error.
func TestBaselineGates(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		src        resultSource
		gates      armGates
		wantCode   int
		wantOutput string
	}{
		{"better, both gates", armResults(12, "without_skill", true, false), armGates{true, true}, ExitOK, "without_skill"},
		{"worse, fail-if-worse", armResults(12, "without_skill", false, true), armGates{failIfWorse: true}, ExitErrors, ""},
		{"same, fail-unless-better", armResults(12, "old_skill", true, true), armGates{failUnlessBetter: true}, ExitErrors, ""},
		{"worse, no gate", armResults(12, "without_skill", false, true), armGates{}, ExitOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			e := &env{stdout: &out, stderr: &bytes.Buffer{}}
			arm := "without_skill"
			if strings.Contains(tc.name, "same") {
				arm = "old_skill"
			}
			var cmp runComparison
			o := outputFlags{format: "text", compare: cmp.arms(ctx, tc.src, "r1", arm, &pb.RunSpec{})}
			st := &pb.RunStatus{Id: "r1", State: pb.RunState_RUN_STATE_COMPLETED}
			rep := runreport.Report{Run: "r1", Summary: runreport.Summary{Total: 1, Passed: 1}}
			err := cmp.gate(tc.gates, finishRun(e, st, rep, o))
			if code := exitCode(err); code != tc.wantCode {
				t.Fatalf("exit %d (%v), want %d\n%s", code, err, tc.wantCode, out.String())
			}
			if !strings.Contains(out.String(), tc.wantOutput) || !strings.Contains(out.String(), "comparing B") {
				t.Errorf("the text report lacks the comparison (%q):\n%s", tc.wantOutput, out.String())
			}
		})
	}
	// JSON and JUnit carry the comparison too.
	var out bytes.Buffer
	var cmp runComparison
	junit := filepath.Join(t.TempDir(), "junit.xml")
	o := outputFlags{format: "json", junit: junit, compare: cmp.arms(ctx, armResults(12, "without_skill", true, false), "r1", "without_skill", &pb.RunSpec{})}
	if err := finishRun(&env{stdout: &out, stderr: &bytes.Buffer{}}, &pb.RunStatus{Id: "r1", State: pb.RunState_RUN_STATE_COMPLETED}, runreport.Report{Run: "r1", Summary: runreport.Summary{Total: 1, Passed: 1}}, o); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Comparison struct {
			PerSkill []struct {
				Skill       string
				Significant bool
			} `json:"per_skill"`
		}
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || len(doc.Comparison.PerSkill) != 1 || !doc.Comparison.PerSkill[0].Significant {
		t.Errorf("JSON report's comparison: %+v (%v)\n%s", doc.Comparison, err, out.String())
	}
	if data, err := os.ReadFile(junit); err != nil || !strings.Contains(string(data), `<testsuite name="comparison"`) || !strings.Contains(string(data), `name="compare.s.significant" value="true"`) {
		t.Errorf("JUnit report's comparison:\n%s (%v)", data, err)
	}
	if err := (armGates{failIfWorse: true}).check(false); exitCode(err) != ExitUsage {
		t.Errorf("gates without a baseline: %v, want a usage error", err)
	}
}
