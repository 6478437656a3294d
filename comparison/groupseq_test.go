package comparison

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/stats"
)

// TestCompareSequential: a skill whose group-sequential comparison stopped at epoch 10 is
// compared over its epochs up to 10 only (the with_skill epochs that ran on for their
// verdicts, and a withdrawn baseline job that ran all the same, left out), with its
// sequential p-value, and the text, JSON and JUnit renderings say where and why it stopped.
func TestCompareSequential(t *testing.T) {
	var a, b []*pb.Result
	for i := range 10 {
		name := fmt.Sprintf("c%02d", i)
		for e := 1; e <= 12; e++ {
			b = append(b, result("s", name, e, pass))
		}
		for e := 1; e <= 10; e++ {
			a = append(a, result("s", name, e, fail))
		}
		// Ran though withdrawn: after the stop.
		a = append(a, result("s", name, 11, pass))
	}
	g, err := stats.NewGroupSequential(0.05, 20, 4, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	seq := g.Result([]float64{0.00195, 0.00195}, stats.StopSignificant)
	seq.Skill = "s"
	sideA := Side{Label: "without_skill", Arm: "without_skill", Results: RecordsOf(a)}
	sideB := Side{Label: "with_skill", Arm: "with_skill", Results: RecordsOf(b)}
	rep, err := Compare(sideA, sideB, Options{Axis: AxisArm, Sequential: []stats.SequentialResult{seq}})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Comparison.PerSkill[0]
	if s.A.Epochs != 100 || s.B.Epochs != 100 || s.Delta != 1 {
		t.Errorf("epochs compared A %d, B %d, delta %v; want 100, 100 (up to the look), 1", s.A.Epochs, s.B.Epochs, s.Delta)
	}
	if s.Test != stats.TestGroupSequential || s.P != seq.P || !s.Significant || s.Sequential == nil {
		t.Errorf("test %s, p %v, significant %v; want %s, %v, significant", s.Test, s.P, s.Significant, stats.TestGroupSequential, seq.P)
	}
	var txt, js, xml bytes.Buffer
	if err := rep.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJUnit(&xml); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct{ doc, want string }{
		{txt.String(), "group-sequential s: stopped at look 2 of 4 (10 of 20 epochs per case and arm): significant; p over the looks 0.0175 before Holm (looks at epochs 5, 10, 15, 20; obrien-fleming (lan-demets), bonferroni across looks)"},
		{js.String(), `"stopped_at_look": 2`},
		{xml.String(), `<property name="compare.s.sequential.reason" value="significant"></property>`},
	} {
		if !strings.Contains(w.doc, w.want) {
			t.Errorf("rendering lacks %q:\n%s", w.want, w.doc)
		}
	}
}
