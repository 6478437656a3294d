package assert

import "testing"

func TestEvaluateExitCode(t *testing.T) {
	tests := []struct {
		want, got int
		result    Result
	}{
		{0, 0, Result{Passed: true, Expected: "exit code 0", Actual: "0", Message: "exit code is 0"}},
		{0, 1, Result{Expected: "exit code 0", Actual: "1", Message: "exit code is 1, expected 0"}},
		{2, 2, Result{Passed: true, Expected: "exit code 2", Actual: "2", Message: "exit code is 2"}},
		{1, 0, Result{Expected: "exit code 1", Actual: "0", Message: "exit code is 0, expected 1"}},
		{0, 137, Result{Expected: "exit code 0", Actual: "137",
			Message: "exit code is 137 (128+9, as when killed by SIGKILL), expected 0"}},
		{0, 200, Result{Expected: "exit code 0", Actual: "200", Message: "exit code is 200, expected 0"}},
		{0, -1, Result{Expected: "exit code 0", Actual: "-1", Message: "exit code is -1, expected 0"}},
	}
	for _, tt := range tests {
		got, err := Evaluate(Assertion{Type: ExitCode, ExitCode: tt.want}, Observation{ExitCode: tt.got, Stdout: "x"})
		if err != nil {
			t.Fatalf("Evaluate: %v", err)
		}
		tt.result.Type = ExitCode
		if got != tt.result {
			t.Errorf("want %d, got %d:\n got %#v\nwant %#v", tt.want, tt.got, got, tt.result)
		}
	}
}
