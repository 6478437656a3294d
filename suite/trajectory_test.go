package suite

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/skillfleet/skillfleet/assert"
	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/skill"
)

// TestTrajectoryAssertions reads every trajectory kind from a case file, in each form it may be
// written, with the defaults a case file leaves out.
func TestTrajectoryAssertions(t *testing.T) {
	root := filepath.Join("testdata", "trajectory")
	s := Load([]string{root}, skill.Options{})
	if s.Diagnostics.HasErrors() {
		t.Fatalf("errors:\n%s", diagText(root, s.Diagnostics))
	}
	if len(s.Cases) != 1 {
		t.Fatalf("planned %d cases, want 1", len(s.Cases))
	}
	c := s.Cases[0]
	type row struct {
		Type      assert.Type
		Value     string
		ArgsMatch string
		Min       int
		Max       int64
		MaxSet    bool
		Names     []string
		Line      int
	}
	want := []row{
		{Type: assert.SkillActivated, Value: "deploy", Line: 5},
		{Type: assert.SkillActivated, Value: "lint", Line: 5},
		{Type: assert.SkillNotActivated, Value: "other", Line: 6},
		{Type: assert.ToolCalled, Value: "read_file", Min: 1, Line: 8},
		{Type: assert.ToolCalled, Value: "bash", ArgsMatch: "make deploy", Min: 1, Line: 9},
		{Type: assert.ToolCalled, Value: "bash", ArgsMatch: "rm -rf", Min: 0, MaxSet: true, Line: 11},
		{Type: assert.ToolCalled, Value: "write_file", Min: 0, Max: 2, MaxSet: true, Line: 14},
		{Type: assert.ToolNotCalled, Value: "web_fetch", Line: 17},
		{Type: assert.ToolOrder, Names: []string{"read_file", "bash"}, Line: 18},
		{Type: assert.MaxTurns, Max: 8, Line: 19},
		{Type: assert.MaxToolCalls, Max: 20, Line: 20},
		{Type: assert.MaxTokens, Max: 50000, Line: 21},
		{Type: assert.OutputContains, Value: "deployed", Line: 22},
	}
	var got []row
	for _, a := range c.Assertions {
		got = append(got, row{a.Type, a.Value, a.ArgsMatch, a.Min, a.Max, a.MaxSet, a.Names, a.Line})
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("assertions:\n got  %+v\n want %+v", got, want)
	}
}

// TestSkillNamesAgainstTheClosure: a skill outside the case's skill and its requires closure
// is an error for skill_activated (the case is left out) and a warning for
// skill_not_activated (the case stays).
func TestSkillNamesAgainstTheClosure(t *testing.T) {
	root := filepath.Join("testdata", "trajectory")
	s := Load([]string{root}, skill.Options{})
	var warned bool
	for _, d := range s.Diagnostics {
		if d.Rule == "case.unknownSkill" {
			if d.Severity != diag.SeverityWarning || d.Line != 6 || filepath.Base(d.File) != "cases.yaml" {
				t.Errorf("unexpected diagnostic %s", d)
			}
			warned = true
		}
	}
	if !warned {
		t.Fatalf("no warning for skill_not_activated of a skill outside the closure:\n%s", diagText(root, s.Diagnostics))
	}

	cases := []*Case{
		{Skill: s.Catalog.Lookup("lint"), Name: "x", File: "f", Assertions: []Assertion{
			{Assertion: assert.Assertion{Type: assert.SkillActivated, Value: "deploy"}, Line: 3}}},
		{Skill: s.Catalog.Lookup("deploy"), Name: "y", File: "f", Assertions: []Assertion{
			{Assertion: assert.Assertion{Type: assert.SkillActivated, Value: "lint"}, Line: 4}}},
	}
	kept, diags := checkSkillNames(s.Graph, cases)
	// lint does not require deploy: activating it from lint's case is refused.
	if len(kept) != 1 || kept[0].Name != "y" {
		t.Errorf("kept %d cases, want only y", len(kept))
	}
	if len(diags) != 1 || diags[0].Severity != diag.SeverityError || diags[0].Line != 3 ||
		diags[0].Message != `skill_activated: "deploy" is neither skill lint nor one it requires` {
		t.Errorf("diagnostics: %v", diags)
	}
}
