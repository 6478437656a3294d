package coordinator

import (
	"path/filepath"
	"slices"
	"testing"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
)

// TestJobMessageOfAnEval: the job of an evals.json case carries its prompt, its input files and
// the judge's reference beside its criteria; a YAML prompt case carries neither files nor a
// reference, so its job is what it was before the fields existed.
func TestJobMessageOfAnEval(t *testing.T) {
	s := suite.Load([]string{filepath.Join("..", "suite", "testdata", "evals", "good")}, skill.Options{})
	if s.Diagnostics.HasErrors() {
		t.Fatalf("suite: %v", s.Diagnostics)
	}
	p, err := s.Plan(suite.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalogOf(s.Catalog.Skills(), nil)
	if err != nil {
		t.Fatal(err)
	}
	spec := &pb.RunSpec{Id: "r1", BundleDigest: p.SuiteDigest}
	tests := []struct {
		caseName, input, reference string
		files, criteria            []string
	}{
		{caseName: "yaml-case", input: "say hi"},
		{
			caseName: "eval-1", input: "Find the best month in evals/files/sales.csv.",
			reference: "Names february as the best month, with revenue 20.",
			files:     []string{"evals/files/sales.csv"},
			criteria:  []string{"The answer names february", "The answer gives the revenue 20"},
		},
		{
			caseName: "eval-7", input: "Summarise the skill in one line.",
			reference: "A one-line summary of what the skill does.",
			criteria:  []string{"A one-line summary of what the skill does."},
		},
	}
	for _, tt := range tests {
		t.Run(tt.caseName, func(t *testing.T) {
			i := slices.IndexFunc(p.Jobs, func(j suite.Job) bool { return j.Case.Name == tt.caseName })
			if i < 0 {
				t.Fatalf("no job for %s", tt.caseName)
			}
			m, err := jobMessage(spec, p, cat, p.Jobs[i], 3, nil)
			if err != nil {
				t.Fatal(err)
			}
			if m.GetKind() != pb.CaseKind_CASE_KIND_PROMPT || m.GetInput() != tt.input || m.GetCaseName() != tt.caseName {
				t.Errorf("job %s %v input %q, want a prompt job with input %q", m.GetCaseName(), m.GetKind(), m.GetInput(), tt.input)
			}
			if m.GetReference() != tt.reference || !slices.Equal(m.GetFiles(), tt.files) {
				t.Errorf("reference %q files %v, want %q %v", m.GetReference(), m.GetFiles(), tt.reference, tt.files)
			}
			if tt.criteria == nil {
				return
			}
			var got []string
			for _, a := range m.GetAssertions() {
				if a.GetType() != "semantic_match" || a.GetLine() < 1 {
					t.Errorf("assertion %v is not a located semantic_match", a)
				}
				got = append(got, a.GetValue())
			}
			if !slices.Equal(got, tt.criteria) {
				t.Errorf("criteria %q, want %q", got, tt.criteria)
			}
		})
	}
}
