package cli

import (
	"strings"
	"testing"
)

// TestEvalsInPlanAndValidate: a skill's evals/evals.json cases are planned and listed like its
// other prompt cases, and validate reports an evals file's problems with file, line and rule.
func TestEvalsInPlanAndValidate(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		golden string
		want   []string
	}{
		{
			name: "plan text", args: []string{"plan", "testdata/evals/csv-report"}, code: ExitOK, golden: "plan-evals.txt",
			want: []string{"prompt   csv-report/eval-1 #1  60s", "prompt   csv-report/eval-2 #1  60s", "2 jobs, 0 errors"},
		},
		{
			name: "plan json", args: []string{"plan", "--format", "json", "testdata/evals/csv-report"}, code: ExitOK, golden: "plan-evals.json",
			want: []string{`"case": "eval-1"`, `"kind": "prompt"`},
		},
		{
			name: "plan one eval", args: []string{"plan", "--case", "eval-2", "testdata/evals/csv-report"}, code: ExitOK,
			want: []string{"csv-report/eval-2", "1 job,"},
		},
		{
			name: "validate", args: []string{"validate", "testdata/evals"}, code: ExitErrors, golden: "validate-evals.txt",
			want: []string{"wrong-name/evals/evals.json:2: error evals.skillName:", "2 skills, 1 error"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.code, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if tt.golden != "" {
				checkGolden(t, tt.golden, out)
			}
		})
	}
}
