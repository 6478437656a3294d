package coordinator

import (
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
)

// TestArmsJobsAndCatalog: an old_skill run's catalog lists the old versions under the
// bundle's baseline directory; its baseline jobs carry their arm (with_skill jobs carry none,
// so their messages are what they were before arms), and the report is told each arm's cases.
func TestArmsJobsAndCatalog(t *testing.T) {
	arms := filepath.Join("..", "suite", "testdata", "arms")
	s := suite.Load([]string{filepath.Join(arms, "current")}, skill.Options{})
	old := suite.LoadOld([]string{filepath.Join(arms, "old")}, skill.Options{})
	p, err := s.Plan(suite.PlanOptions{Baseline: suite.Baseline{Arm: suite.ArmOldSkill, Old: old}})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalogOf(s.Catalog.Skills(), p.Old)
	if err != nil {
		t.Fatal(err)
	}
	c := &pb.Catalog{}
	if err := proto.Unmarshal(cat.data, c); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range c.GetBaseline() {
		paths = append(paths, e.GetPath())
	}
	if len(c.GetEntries()) != 3 || len(paths) != 2 || paths[0] != ".skillfleet-baseline/greeter/SKILL.md" || paths[1] != ".skillfleet-baseline/helper/SKILL.md" {
		t.Errorf("catalog: %d entries, baseline %v", len(c.GetEntries()), paths)
	}
	plain, err := catalogOf(s.Catalog.Skills(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if plain.digest == cat.digest {
		t.Error("the old versions did not change the catalog's digest")
	}

	spec := &pb.RunSpec{Id: "r1", BundleDigest: p.SuiteDigest, Baseline: string(suite.ArmOldSkill)}
	arms2 := map[string]int{}
	for _, j := range p.Jobs {
		m, err := jobMessage(spec, p, cat, j, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		arms2[m.GetArm()]++
		if j.Arm == suite.ArmWithSkill && m.GetArm() != "" {
			t.Errorf("with_skill job %s carries arm %q", j.ID, m.GetArm())
		}
		if m.GetId() != j.ID {
			t.Errorf("job id %s, planned %s", m.GetId(), j.ID)
		}
	}
	if arms2[""] != 5 || arms2["old_skill"] != 3 {
		t.Errorf("jobs per arm %v", arms2)
	}
	planned := plannedCases(p)
	byArm := map[string]int{}
	for _, pc := range planned {
		byArm[pc.Arm]++
	}
	// greeter: 3 cases with_skill (2 prompt, 1 command) and 2 old_skill; stamp: 1 with_skill.
	if byArm["with_skill"] != 4 || byArm["old_skill"] != 2 {
		t.Errorf("planned cases per arm %v", byArm)
	}
}
