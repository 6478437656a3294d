package suite

import (
	"slices"
	"testing"

	"github.com/skillfleet/skillfleet/skill"
)

// TestTestPaths: a skill's test definitions are tests/, evals/ and the cases file its
// test.cases names, cleaned; a name that would leave the skill or repeat a directory adds
// nothing.
func TestTestPaths(t *testing.T) {
	tests := []struct {
		cases string // "" for a skill without a test field
		want  []string
	}{
		{"", []string{"tests", "evals"}},
		{"test/cases.yaml", []string{"tests", "evals", "test/cases.yaml"}},
		{"./cases.yaml", []string{"tests", "evals", "cases.yaml"}},
		{"tests/cases.yaml", []string{"tests", "evals", "tests/cases.yaml"}},
		{"../other/cases.yaml", []string{"tests", "evals"}},
		{"evals", []string{"tests", "evals"}},
	}
	for _, tt := range tests {
		s := &skill.Skill{Name: "s"}
		if tt.cases != "" {
			s.Test = &skill.TestConfig{Cases: tt.cases}
		}
		if got := TestPaths(s); !slices.Equal(got, tt.want) {
			t.Errorf("cases %q: %q, want %q", tt.cases, got, tt.want)
		}
	}
}
