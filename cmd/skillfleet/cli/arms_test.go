package cli

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
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
			var out, errb bytes.Buffer
			e := &env{stdout: &out, stderr: &errb}
			arm := "without_skill"
			if strings.Contains(tc.name, "same") {
				arm = "old_skill"
			}
			err := afterBaseline(ctx, e, tc.src, "r1", arm, &pb.RunSpec{}, "text", tc.gates, nil)
			if code := exitCode(err); code != tc.wantCode {
				t.Fatalf("exit %d (%v), want %d\n%s", code, err, tc.wantCode, out.String())
			}
			if !strings.Contains(out.String(), tc.wantOutput) || !strings.Contains(out.String(), "s") {
				t.Errorf("comparison output lacks %q:\n%s", tc.wantOutput, out.String())
			}
		})
	}
	e := &env{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	if code := exitCode(afterBaseline(ctx, e, nil, "r1", "", nil, "text", armGates{failIfWorse: true}, nil)); code != ExitUsage {
		t.Errorf("gates without a baseline: exit %d, want %d", code, ExitUsage)
	}
}
