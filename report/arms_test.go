package report

import (
	"bytes"
	"io"
	"path/filepath"
	"testing"

	"github.com/skillfleet/skillfleet/internal/testutil"
	skillfleetv1 "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

func inArm(arm string) func(*skillfleetv1.Result) {
	return func(r *skillfleetv1.Result) {
		r.Arm = arm
		r.JobId += "@" + arm
	}
}

// armsFixture is a run with a without_skill baseline: the skill helps on one case (with
// passes, without fails), not on the other (both pass).
func armsFixture(t *testing.T) *Builder {
	t.Helper()
	withArm := func(pc PlannedCase, arm string) PlannedCase { pc.Arm = arm; return pc }
	b := NewBuilder(testRun, []PlannedCase{
		plan("greeter", "formal", 2, 0), withArm(plan("greeter", "formal", 2, 0), "without_skill"),
		withArm(plan("greeter", "short", 1, 0), "with_skill"), withArm(plan("greeter", "short", 1, 0), "without_skill"),
	})
	for _, r := range []*skillfleetv1.Result{
		res("greeter", "formal", 1, vPassed), res("greeter", "formal", 1, vFailed, inArm("without_skill")),
		res("greeter", "formal", 2, vPassed, inArm("with_skill")), res("greeter", "formal", 2, vFailed, inArm("without_skill")),
		res("greeter", "short", 1, vPassed), res("greeter", "short", 1, vPassed, inArm("without_skill")),
	} {
		if !b.Add(r) {
			t.Fatalf("result %s refused", r.GetJobId())
		}
	}
	return b
}

func TestBuilderArms(t *testing.T) {
	b := armsFixture(t)
	if !b.Done() {
		t.Fatalf("%d of %d jobs done", b.JobsDone(), b.JobsTotal())
	}
	r := b.Report()
	if len(r.Cases) != 4 {
		t.Fatalf("%d cases, want 4 (two per arm)", len(r.Cases))
	}
	// The with_skill arm alone decides the run: its cases all passed.
	if want := (Summary{Total: 2, Passed: 2}); r.Summary != want {
		t.Errorf("summary %+v, want %+v", r.Summary, want)
	}
	if r.Baseline == nil || *r.Baseline != (Summary{Total: 2, Passed: 1, Failed: 1}) {
		t.Errorf("baseline summary %+v", r.Baseline)
	}
	if c := b.Counts(); c.GetTotal() != 2 || c.GetPassed() != 2 || c.GetFailed() != 0 {
		t.Errorf("counts %v count a baseline case", c)
	}
	formal, ok := b.Case(CaseKey{Skill: "greeter", Case: "formal", Arm: "without_skill"})
	if !ok || formal.Status != StatusFailed || formal.Arm != "without_skill" {
		t.Errorf("without_skill formal: %+v %v", formal, ok)
	}
	with, base := SplitArms(r.Cases)
	if len(with) != 2 || len(base) != 2 || with[0].Arm != "" || base[0].Arm != "without_skill" {
		t.Errorf("SplitArms: %d with (%q), %d baseline", len(with), with[0].Arm, len(base))
	}

	// A run without a baseline has no baseline summary.
	plain := NewBuilder(testRun, []PlannedCase{plan("greeter", "formal", 1, 0)})
	plain.Add(res("greeter", "formal", 1, vPassed))
	if r := plain.Report(); r.Baseline != nil || r.Cases[0].Arm != "" {
		t.Errorf("plain run: baseline %+v, arm %q", r.Baseline, r.Cases[0].Arm)
	}
}

func TestArmsGoldens(t *testing.T) {
	r := armsFixture(t).Report()
	for _, tt := range []struct {
		file  string
		write func(io.Writer) error
	}{
		{"arms.json", func(w io.Writer) error { return WriteJSON(w, r) }},
		{"arms.junit.xml", func(w io.Writer) error { return WriteJUnit(w, r) }},
		{"arms.txt", func(w io.Writer) error { return WriteText(w, r, TextOptions{}) }},
	} {
		t.Run(tt.file, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tt.write(&buf); err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, filepath.Join("testdata", tt.file), buf.Bytes())
		})
	}
}
