package comparison

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/skillfleet/skillfleet/internal/testutil"
)

// TestNoise: an A/A comparison of 40 one-epoch cases, of which 3 pass only in a, 3 only in
// a2, 25 in both and 9 in neither, and one case errored in a2. By hand: 6 flips of 40 paired
// cases, 15%; Wilson's 95% interval (z = 1.95996) is [7.06%, 29.07%]; the mean squared
// difference is 6/40 = 0.15, so the smallest detectable difference solves
// δ·√40 = 1.95996·√(0.15 + δ) + 0.84162·√(0.15 + δ − δ²): δ = 0.28296 (28.3 points; at
// least 6/40 = 15). stats/testdata/power.py computes the same table independently.
func TestNoise(t *testing.T) {
	var a, b []Record
	for i := range 40 {
		name := fmt.Sprintf("c-%02d", i)
		va, vb := pass, pass
		switch {
		case i < 3:
			vb = fail
		case i < 6:
			va = fail
		case i < 15:
			va, vb = fail, fail
		}
		a = append(a, RecordsOf(epochs("s", name, va))...)
		b = append(b, RecordsOf(epochs("s", name, vb))...)
	}
	a = append(a, RecordsOf(epochs("s", "zz-errored", pass))...)
	b = append(b, RecordsOf(epochs("s", "zz-errored", errd))...)
	r, err := Compare(Side{Label: "a", Run: "r", Arm: "with_skill", Results: a}, Side{Label: "a2", Run: "r", Arm: "a2", Results: b}, Options{Axis: AxisArm, AA: true})
	if err != nil {
		t.Fatal(err)
	}
	n := r.Noise
	if n == nil {
		t.Fatal("no noise floor in an A/A comparison")
	}
	if n.Cases != 40 || n.Flipped != 6 || !near(n.FlipRate, 0.15) || !near(n.Interval.Lo, 0.0706, 1e-4) || !near(n.Interval.Hi, 0.2907, 1e-4) {
		t.Errorf("noise %+v", n.NoiseFloor)
	}
	if n.MinDetectable == nil || !near(*n.MinDetectable, 0.28296, 1e-4) {
		t.Errorf("min detectable %v, want 0.28296", n.MinDetectable)
	}
	agree, notPaired := 0, 0
	for _, c := range n.PerCase {
		if c.Agree {
			agree++
		}
		if !c.Paired {
			notPaired++
		}
	}
	if len(n.PerCase) != 41 || agree != 34 || notPaired != 1 {
		t.Errorf("%d cases, %d agree, %d not paired; want 41, 34, 1", len(n.PerCase), agree, notPaired)
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, filepath.Join("testdata", "noise.txt"), buf.Bytes())
	props := map[string]string{}
	for _, p := range r.Properties() {
		props[p.Name] = p.Value
	}
	if props["noise.flipped"] != "6,40" || props["noise.flip_rate"] != "0.1500" || props["noise.interval"] != "0.0706,0.2907" || props["noise.min_detectable"] != "0.2830" {
		t.Errorf("JUnit properties %v", props)
	}

	plain, err := Compare(Side{Label: "a", Results: a}, Side{Label: "a2", Arm: "a2", Results: b}, Options{Axis: AxisArm})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Noise != nil || plain.JSON().Noise != nil {
		t.Error("a comparison that is no A/A carries a noise floor")
	}
}

// near reports whether got is within tol (1e-9 unless given) of want.
func near(got, want float64, tol ...float64) bool {
	t := 1e-9
	if len(tol) > 0 {
		t = tol[0]
	}
	return got-want <= t && want-got <= t
}
