package verdict

import (
	"strings"
	"testing"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

func TestOf(t *testing.T) {
	pass := &pb.AssertionResult{Type: "exit_code", Passed: true}
	fail := &pb.AssertionResult{Type: "exit_code"}
	errd := &pb.AssertionResult{Type: "semantic_match", Errored: true, Message: "no judge configured"}
	tests := []struct {
		name   string
		in     []*pb.AssertionResult
		want   pb.Verdict
		reason string
	}{
		{"all passed", []*pb.AssertionResult{pass, pass}, pb.Verdict_VERDICT_PASSED, ""},
		{"one failed", []*pb.AssertionResult{pass, fail}, pb.Verdict_VERDICT_FAILED, ""},
		{"errored beats failed", []*pb.AssertionResult{fail, errd}, pb.Verdict_VERDICT_ERRORED, "semantic_match could not be decided: no judge configured"},
		{"no assertions is never a pass", nil, pb.Verdict_VERDICT_ERRORED, "no assertion results"},
		{"passed but errored is errored", []*pb.AssertionResult{{Type: "x", Passed: true, Errored: true}}, pb.Verdict_VERDICT_ERRORED, "x could not be decided"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := Of(tt.in)
			if got != tt.want || !strings.Contains(why, tt.reason) || (tt.reason == "") != (why == "") {
				t.Fatalf("Of = %v, %q; want %v, %q", got, why, tt.want, tt.reason)
			}
		})
	}
}

func TestCounted(t *testing.T) {
	pass := &pb.AssertionResult{Type: "exit_code", Passed: true}
	tests := []struct {
		name   string
		in     *pb.Result
		want   pb.Verdict
		reason string
	}{
		{"a backed pass counts", &pb.Result{Verdict: pb.Verdict_VERDICT_PASSED, Assertions: []*pb.AssertionResult{pass}}, pb.Verdict_VERDICT_PASSED, ""},
		{"a pass without assertions is errored", &pb.Result{Verdict: pb.Verdict_VERDICT_PASSED}, pb.Verdict_VERDICT_ERRORED, "without any assertion result"},
		{"a pass with a failed assertion is errored", &pb.Result{Verdict: pb.Verdict_VERDICT_PASSED, Assertions: []*pb.AssertionResult{pass, {Type: "stdout_contains"}}}, pb.Verdict_VERDICT_ERRORED, `assertion "stdout_contains" did not pass`},
		{"a pass with an errored assertion is errored", &pb.Result{Verdict: pb.Verdict_VERDICT_PASSED, Assertions: []*pb.AssertionResult{{Type: "semantic_match", Passed: true, Errored: true}}}, pb.Verdict_VERDICT_ERRORED, "did not pass"},
		{"failed keeps its reason", &pb.Result{Verdict: pb.Verdict_VERDICT_FAILED, Reason: "r"}, pb.Verdict_VERDICT_FAILED, "r"},
		{"timed out", &pb.Result{Verdict: pb.Verdict_VERDICT_TIMED_OUT, Reason: "killed"}, pb.Verdict_VERDICT_TIMED_OUT, "killed"},
		{"skipped", &pb.Result{Verdict: pb.Verdict_VERDICT_SKIPPED}, pb.Verdict_VERDICT_SKIPPED, ""},
		{"a reuse naming its run and digest counts as reused", &pb.Result{Verdict: pb.Verdict_VERDICT_REUSED, ReusedFrom: "r0", CellDigest: "sha256:c"}, pb.Verdict_VERDICT_REUSED, ""},
		{"a reuse without its run is errored", &pb.Result{Verdict: pb.Verdict_VERDICT_REUSED, CellDigest: "sha256:c"}, pb.Verdict_VERDICT_ERRORED, "reuse without"},
		{"a reuse without its digest is errored", &pb.Result{Verdict: pb.Verdict_VERDICT_REUSED, ReusedFrom: "r0"}, pb.Verdict_VERDICT_ERRORED, "reuse without"},
		{"a reuse that ran assertions is errored", &pb.Result{Verdict: pb.Verdict_VERDICT_REUSED, ReusedFrom: "r0", CellDigest: "sha256:c", Assertions: []*pb.AssertionResult{pass}}, pb.Verdict_VERDICT_ERRORED, "assertion results"},
		{"no verdict is errored", &pb.Result{}, pb.Verdict_VERDICT_ERRORED, "no usable verdict"},
		{"an unknown verdict is errored", &pb.Result{Verdict: pb.Verdict(42)}, pb.Verdict_VERDICT_ERRORED, "no usable verdict"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := Counted(tt.in)
			if got != tt.want || !strings.Contains(why, tt.reason) {
				t.Fatalf("Counted = %v, %q; want %v, %q", got, why, tt.want, tt.reason)
			}
		})
	}
}
