package suite

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/bundle"
	"github.com/skillfleet/skillfleet/internal/testutil"
	"github.com/skillfleet/skillfleet/skill"
)

var (
	armsCurrent = filepath.Join("testdata", "arms", "current")
	armsOld     = filepath.Join("testdata", "arms", "old")
)

// armsPlanText renders a plan's jobs one per line, with each job's arm and the plan's
// warnings, for the arms goldens.
func armsPlanText(p *Plan) []byte {
	var b strings.Builder
	for _, j := range p.Jobs {
		b.WriteString(j.ID + " " + string(j.Arm) + " " + j.Case.Skill.Name + "/" + j.Case.Name + " #" + strconv.Itoa(j.Epoch))
		if j.Agent != "" {
			b.WriteString(" @" + j.Agent)
		}
		b.WriteString("\n")
	}
	for _, o := range p.Old {
		b.WriteString("old " + o.Name + "\n")
	}
	b.Write(diagText(armsCurrent, p.Diagnostics))
	return []byte(b.String())
}

func TestPlanArms(t *testing.T) {
	s := Load([]string{armsCurrent}, skill.Options{})
	if s.Diagnostics.HasErrors() {
		t.Fatalf("fixture has errors:\n%s", diagText(armsCurrent, s.Diagnostics))
	}
	old := LoadOld([]string{armsOld}, skill.Options{})
	tests := []struct {
		name   string
		opts   PlanOptions
		golden string
		// jobs per arm
		with, baseline int
	}{
		{name: "none", opts: PlanOptions{}, golden: "arms-none.txt", with: 5},
		{name: "without", opts: PlanOptions{Baseline: Baseline{Arm: ArmWithoutSkill}}, golden: "arms-without.txt", with: 5, baseline: 4},
		// Two agents: the arms of each (case, agent, epoch) stay adjacent.
		{name: "without two agents", opts: PlanOptions{Agents: []string{"a", "b"}, Baseline: Baseline{Arm: ArmWithoutSkill}}, golden: "arms-without-agents.txt", with: 9, baseline: 8},
		// The old root has greeter (and its helper) but no stamp: stamp gets no old_skill job
		// and a warning.
		{name: "old", opts: PlanOptions{Baseline: Baseline{Arm: ArmOldSkill, Old: old}}, golden: "arms-old.txt", with: 5, baseline: 3},
		// A/A: every case, command cases too, runs again in a2.
		{name: "aa", opts: PlanOptions{Baseline: Baseline{Arm: ArmA2}}, golden: "arms-aa.txt", with: 5, baseline: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := s.Plan(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, filepath.Join("testdata", "golden", tt.golden), armsPlanText(p))
			if got := p.JobsOf(ArmWithSkill); got != tt.with {
				t.Errorf("with_skill jobs = %d, want %d", got, tt.with)
			}
			if tt.opts.Baseline.Arm != "" {
				if got := p.JobsOf(tt.opts.Baseline.Arm); got != tt.baseline {
					t.Errorf("%s jobs = %d, want %d", tt.opts.Baseline.Arm, got, tt.baseline)
				}
			}
			for i, j := range p.Jobs {
				if j.Arm != ArmWithSkill && j.Arm != ArmA2 && j.Case.Kind != KindPrompt {
					t.Errorf("job %s: a %s case in arm %s", j.ID, j.Case.Kind, j.Arm)
				}
				// Interleaved: a baseline job follows the with_skill job of its case, epoch and agent.
				if j.Arm != ArmWithSkill {
					prev := p.Jobs[i-1]
					if prev.Arm != ArmWithSkill || prev.Case != j.Case || prev.Epoch != j.Epoch || prev.Agent != j.Agent {
						t.Errorf("job %s (%s) does not follow its with_skill job", j.ID, j.Arm)
					}
				}
			}
		})
	}
}

// TestPlanArmsKeepIDs: a baseline adds jobs, it does not rename those of the with_skill arm.
func TestPlanArmsKeepIDs(t *testing.T) {
	s := Load([]string{armsCurrent}, skill.Options{})
	plain, err := s.Plan(PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	armed, err := s.Plan(PlanOptions{Baseline: Baseline{Arm: ArmWithoutSkill}})
	if err != nil {
		t.Fatal(err)
	}
	var with []string
	ids := map[string]bool{}
	for _, j := range armed.Jobs {
		if ids[j.ID] {
			t.Errorf("id %s twice", j.ID)
		}
		ids[j.ID] = true
		if j.Arm == ArmWithSkill {
			with = append(with, j.ID)
		}
	}
	var want []string
	for _, j := range plain.Jobs {
		want = append(want, j.ID)
	}
	if !slices.Equal(with, want) {
		t.Errorf("with_skill ids changed:\n got %v\nwant %v", with, want)
	}
	// A without_skill run bundles exactly what a plain run does.
	if armed.SuiteDigest != plain.SuiteDigest {
		t.Errorf("without_skill changed the bundle: %s vs %s", armed.SuiteDigest, plain.SuiteDigest)
	}
	if got := JobID("s", "c", KindPrompt, 1, "a"); got != ArmJobID("s", "c", KindPrompt, 1, "a", ArmWithSkill) {
		t.Errorf("JobID %s differs from the with_skill ArmJobID", got)
	}
}

// TestBaselineBundle: an old_skill bundle holds the old versions under bundle.BaselineDir,
// the plan's skills are the current ones only, and loading the bundle's tree again neither
// finds the old versions as skills nor loses them.
func TestBaselineBundle(t *testing.T) {
	s := Load([]string{armsCurrent}, skill.Options{})
	old := LoadOld([]string{armsOld}, skill.Options{})
	p, err := s.Plan(PlanOptions{Baseline: Baseline{Arm: ArmOldSkill, Old: old}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	b, err := WriteBundleWith(&buf, s.Graph, s.Select(Filter{}), old)
	if err != nil {
		t.Fatal(err)
	}
	if b.Digest != p.SuiteDigest {
		t.Fatalf("bundle %s, plan %s", b.Digest, p.SuiteDigest)
	}
	var names []string
	tr := tar.NewReader(bytes.NewReader(buf.Bytes()))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	for _, want := range []string{".skillfleet-baseline/greeter/SKILL.md", ".skillfleet-baseline/helper/SKILL.md", "greeter/SKILL.md", "stamp/SKILL.md"} {
		if !slices.Contains(names, want) {
			t.Errorf("bundle lacks %s: %v", want, names)
		}
	}
	for _, sd := range p.Skills {
		if strings.HasPrefix(sd.Name, bundle.BaselineDir) {
			t.Errorf("plan skill %s is an old version", sd.Name)
		}
	}

	tree := t.TempDir()
	if err := bundle.ExtractBundle(bytes.NewReader(buf.Bytes()), tree); err != nil {
		t.Fatal(err)
	}
	again := Load([]string{tree}, skill.Options{})
	if again.Diagnostics.HasErrors() || len(again.Catalog.Skills()) != 3 {
		t.Fatalf("the extracted bundle loads %d skills:\n%s", len(again.Catalog.Skills()), diagText(tree, again.Diagnostics))
	}
	oldAgain := LoadOld([]string{filepath.Join(tree, bundle.BaselineDir)}, skill.Options{})
	p2, err := again.Plan(PlanOptions{Baseline: Baseline{Arm: ArmOldSkill, Old: oldAgain}})
	if err != nil {
		t.Fatal(err)
	}
	if p2.SuiteDigest != p.SuiteDigest || len(p2.Jobs) != len(p.Jobs) {
		t.Errorf("planned again from the bundle: %s/%d jobs, first %s/%d", p2.SuiteDigest, len(p2.Jobs), p.SuiteDigest, len(p.Jobs))
	}
}

func TestPlanBaselineErrors(t *testing.T) {
	s := Load([]string{armsCurrent}, skill.Options{})
	for _, opts := range []PlanOptions{
		{Baseline: Baseline{Arm: "sideways"}},
		{Baseline: Baseline{Arm: ArmOldSkill}}, // no old skills
	} {
		if _, err := s.Plan(opts); err == nil {
			t.Errorf("%+v: planned", opts.Baseline)
		}
	}
	for name, ok := range map[string]bool{"": true, "without_skill": true, "old_skill": true, "with_skill": false, "x": false} {
		if _, err := ParseArm(name); (err == nil) != ok {
			t.Errorf("ParseArm(%q) = %v", name, err)
		}
	}
}
