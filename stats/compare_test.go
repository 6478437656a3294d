package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"testing"
)

// ep builds epochs from a string of verdict letters: P passed, F failed, E errored, T timed
// out, S skipped.
func ep(verdicts string) []Epoch {
	var out []Epoch
	for _, r := range verdicts {
		v := map[rune]Verdict{'P': Passed, 'F': Failed, 'E': Errored, 'T': TimedOut, 'S': Skipped}[r]
		out = append(out, Epoch{Verdict: v, Tokens: 100, Cost: 1, Duration: 1e9})
	}
	return out
}

func TestCompareCounting(t *testing.T) {
	a := []Case{
		{Skill: "alpha", Case: "c1", Epochs: ep("P")},
		{Skill: "alpha", Case: "c2", Epochs: ep("F")},
		{Skill: "alpha", Case: "c3", Epochs: ep("EE")}, // nothing decided: unpaired
		{Skill: "alpha", Case: "c4", Epochs: ep("P")},  // only in A
		{Skill: "alpha", Case: "c6", Epochs: ep("FS")},
		{Skill: "beta", Case: "c1", Epochs: ep("T")},
	}
	b := []Case{
		{Skill: "alpha", Case: "c6", Epochs: ep("PT")},
		{Skill: "alpha", Case: "c5", Epochs: ep("F")}, // only in B
		{Skill: "alpha", Case: "c3", Epochs: ep("P")},
		{Skill: "alpha", Case: "c2", Epochs: ep("P")},
		{Skill: "alpha", Case: "c1", Epochs: ep("PE")},
		{Skill: "beta", Case: "c1", Epochs: ep("P")},
	}
	got, err := Compare(a, b, Options{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.PerSkill) != 2 || got.PerSkill[0].Skill != "alpha" || got.PerSkill[1].Skill != "beta" {
		t.Fatalf("per skill = %+v", got.PerSkill)
	}
	al := got.PerSkill[0]
	checks := []struct {
		name      string
		got, want any
	}{
		{"cases", al.Cases, 3},
		{"unpaired", al.Unpaired, 1},
		{"only A", al.OnlyA, 1},
		{"only B", al.OnlyB, 1},
		{"A left out", al.A.LeftOut, 2},
		{"B left out", al.B.LeftOut, 2},
		{"A skipped", al.A.Skipped, 1},
		{"B skipped", al.B.Skipped, 0},
		{"A epochs", al.A.Epochs, 3},
		{"B epochs", al.B.Epochs, 3},
		{"A pass rate", al.A.PassRate, 1.0 / 3},
		{"B pass rate", al.B.PassRate, 1.0},
		{"delta", al.Delta, 2.0 / 3},
		// Every paired case has one decided epoch per arm, errored ones notwithstanding.
		{"test", al.Test, TestMcNemarExact},
		{"p", al.P, McNemarExact(0, 2)},
		{"interval", al.Interval, NewcombePaired(1, 2, 0, 0)},
		{"beta tested", got.PerSkill[1].Tested, false},
		{"beta p", got.PerSkill[1].P, 1.0},
		{"beta A left out", got.PerSkill[1].A.LeftOut, 1},
		// beta is not tested, so alpha is a family of one.
		{"alpha p adjusted", al.PAdjusted, al.P},
		{"overall cases", got.Overall.Cases, 3},
		{"overall unpaired", got.Overall.Unpaired, 2},
		{"overall A left out", got.Overall.A.LeftOut, 3},
		{"case rows", len(got.Cases), 7},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if c := got.Cases[0]; c.Case != "c1" || !c.Paired || c.A.Rate() != 1 || c.B.LeftOut != 1 {
		t.Errorf("first case = %+v", c)
	}
}

func TestCompareDuplicateCase(t *testing.T) {
	twice := []Case{{Skill: "s", Case: "c", Epochs: ep("P")}, {Skill: "s", Case: "c", Epochs: ep("F")}}
	once := twice[:1]
	for name, arms := range map[string][2][]Case{"A": {twice, once}, "B": {once, twice}} {
		if _, err := Compare(arms[0], arms[1], Options{}); err == nil {
			t.Errorf("a case twice in arm %s: no error", name)
		}
	}
}

// arms builds two arms of one skill from per-case verdict strings.
func arms(skill string, pairs [][2]string) (a, b []Case) {
	for i, p := range pairs {
		name := fmt.Sprintf("c%03d", i)
		a = append(a, Case{Skill: skill, Case: name, Epochs: ep(p[0])})
		b = append(b, Case{Skill: skill, Case: name, Epochs: ep(p[1])})
	}
	return a, b
}

func repeat(n int, p [2]string) [][2]string {
	out := make([][2]string, n)
	for i := range out {
		out[i] = p
	}
	return out
}

func TestCompareChoosesTest(t *testing.T) {
	// Decided counts of 7 and 11, 13, 17, 19 and 23 epochs make a common denominator above
	// maxScale, so the exact distribution is out of reach and Monte Carlo is used.
	var awkward [][2]string
	for i, n := range []int{7, 11, 13, 17, 19, 23} {
		for j := range 5 {
			awkward = append(awkward, [2]string{
				fmt.Sprintf("%.*s%.*s", j, "PPPPPPPPPPPPPPPPPPPPPPP", n-j, "FFFFFFFFFFFFFFFFFFFFFFF"),
				fmt.Sprintf("%.*s%.*s", j+1+i%2, "PPPPPPPPPPPPPPPPPPPPPPP", n-j-1-i%2, "FFFFFFFFFFFFFFFFFFFFFFF"),
			})
		}
	}
	tests := []struct {
		name     string
		pairs    [][2]string
		test     string
		interval string
	}{
		{"once each", append(repeat(8, [2]string{"F", "P"}), [2]string{"P", "F"}), TestMcNemarExact, IntervalNewcombe},
		{"once each with errors", [][2]string{{"PE", "F"}, {"F", "TP"}}, TestMcNemarExact, IntervalNewcombe},
		{"repeated, few differ", repeat(10, [2]string{"PFF", "PPF"}), TestSignFlipExact, IntervalBootstrap},
		{"repeated, many differ", repeat(30, [2]string{"PFF", "PPF"}), TestSignFlipExact, IntervalBootstrap},
		{"one case repeated", append(repeat(3, [2]string{"F", "P"}), [2]string{"FF", "PP"}), TestSignFlipExact, IntervalBootstrap},
		{"awkward denominators", awkward, TestSignFlipMonteCarlo, IntervalBootstrap},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := arms("s", tt.pairs)
			got, err := Compare(a, b, Options{Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			s := got.PerSkill[0]
			if s.Test != tt.test || s.IntervalMethod != tt.interval {
				t.Errorf("test, interval = %s, %s; want %s, %s", s.Test, s.IntervalMethod, tt.test, tt.interval)
			}
			if (s.Draws > 0) != (tt.test == TestSignFlipMonteCarlo) {
				t.Errorf("draws = %d with test %s", s.Draws, s.Test)
			}
			if !s.Interval.Contains(s.Delta) {
				t.Errorf("interval %v does not contain the difference %v", s.Interval, s.Delta)
			}
		})
	}
}

// TestSignFlipAgreesWithMcNemar: on differences of -1, 0 and +1 the sign-flip test is the
// sign test, which is McNemar's exact test.
func TestSignFlipAgreesWithMcNemar(t *testing.T) {
	for _, bc := range [][2]int{{0, 1}, {1, 7}, {2, 9}, {5, 5}, {0, 12}, {3, 14}} {
		var d []float64
		for range bc[0] {
			d = append(d, -1)
		}
		for range bc[1] {
			d = append(d, 1, 0)
		}
		got, want := SignFlipExact(d), McNemarExact(bc[0], bc[1])
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("b, c = %v: sign flip %v, McNemar %v", bc, got, want)
		}
	}
}

// TestSignFlipMethodsAgree: the exact distribution agrees with the enumeration, and the Monte
// Carlo estimate with both within its sampling error.
func TestSignFlipMethodsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 40 {
		n := 1 + r.IntN(18)
		k := make([]int, n)
		d := make([]float64, n)
		for i := range k {
			k[i] = r.IntN(13) - 4
			d[i] = float64(k[i]) / 12
		}
		want := SignFlipExact(d)
		got, ok := signFlipIntegers(k)
		if !ok || math.Abs(got-want) > 1e-12 {
			t.Errorf("trial %d, %v: distribution %v (ok %v), enumeration %v", trial, k, got, ok, want)
		}
		// The standard error of 20,000 draws is at most 0.0035.
		mc := signFlipMonteCarlo(d, 20000, newStream(uint64(trial), "t"))
		if math.Abs(mc-want) > 0.015 {
			t.Errorf("trial %d, %v: Monte Carlo %v, exact %v", trial, k, mc, want)
		}
	}
}

func TestHolmMonotone(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 100 {
		p := make([]float64, 1+r.IntN(30))
		for i := range p {
			p[i] = r.Float64() * r.Float64()
		}
		adj := Holm(p)
		for i := range p {
			if adj[i] < p[i] || adj[i] > 1 {
				t.Fatalf("Holm(%v)[%d] = %v outside [p, 1]", p, i, adj[i])
			}
			for j := range p {
				if p[i] < p[j] && adj[i] > adj[j] {
					t.Fatalf("Holm(%v): order broken at %d, %d: %v", p, i, j, adj)
				}
			}
		}
	}
}

func TestCompareDeterministic(t *testing.T) {
	a, b := arms("s", append(repeat(15, [2]string{"PFF", "PPF"}), repeat(10, [2]string{"PPP", "PFF"})...))
	x, _ := Compare(a, b, Options{Seed: 42})
	y, _ := Compare(a, b, Options{Seed: 42})
	if !reflect.DeepEqual(x, y) {
		t.Error("the same seed gave two results")
	}
	z, _ := Compare(a, b, Options{Seed: 43})
	if z.PerSkill[0].Interval == x.PerSkill[0].Interval {
		t.Errorf("seeds 42 and 43 gave the same bootstrap interval %v", x.PerSkill[0].Interval)
	}
}

// TestCompareSkillIndependent: a skill's result does not depend on the other skills compared
// with it, bar the Holm adjustment.
func TestCompareSkillIndependent(t *testing.T) {
	a, b := arms("mid", append(repeat(25, [2]string{"PFF", "PPF"}), repeat(10, [2]string{"PPP", "PFF"})...))
	alone, _ := Compare(a, b, Options{Seed: 5})
	a1, b1 := arms("aaa", repeat(4, [2]string{"FF", "PF"}))
	a2, b2 := arms("zzz", repeat(6, [2]string{"P", "F"}))
	together, _ := Compare(append(append(a1, a...), a2...), append(append(b2, b...), b1...), Options{Seed: 5})
	x, y := alone.PerSkill[0], together.PerSkill[1]
	if y.Skill != "mid" {
		t.Fatalf("skills = %+v", together.PerSkill)
	}
	x.PAdjusted, y.PAdjusted, x.Significant, y.Significant = 0, 0, false, false
	if !reflect.DeepEqual(x, y) {
		t.Errorf("alone %+v\ntogether %+v", x, y)
	}
}

// TestBootstrapCoverage draws many synthetic comparisons with a known difference, in pass rate
// and in tokens, and counts how often the 95% intervals cover it.
func TestBootstrapCoverage(t *testing.T) {
	const trials, cases, epochs = 300, 30, 4
	const truePass, trueTokens = 0.15, 200.0
	r := rand.New(rand.NewPCG(11, 12))
	covered := [2]int{}
	for trial := range trials {
		var a, b []Case
		for i := range cases {
			pa := 0.1 + 0.6*r.Float64()
			base := 1000 + 2000*r.Float64()
			name := fmt.Sprint(i)
			a = append(a, Case{Skill: "s", Case: name, Epochs: draw(r, epochs, pa, base)})
			b = append(b, Case{Skill: "s", Case: name, Epochs: draw(r, epochs, pa+truePass, base+trueTokens)})
		}
		got, err := Compare(a, b, Options{Seed: uint64(trial), Resamples: 500})
		if err != nil {
			t.Fatal(err)
		}
		s := got.PerSkill[0]
		if s.IntervalMethod != IntervalBootstrap {
			t.Fatalf("interval method %s", s.IntervalMethod)
		}
		if !s.Interval.Contains(s.Delta) || !s.Tokens.Interval.Contains(s.Tokens.Mean) {
			t.Errorf("trial %d: an interval misses its own estimate: %+v", trial, s)
		}
		if s.Interval.Contains(truePass) {
			covered[0]++
		}
		if s.Tokens.Interval.Contains(trueTokens) {
			covered[1]++
		}
	}
	// A percentile bootstrap of 30 cases covers a little under 95%; 300 trials give a standard
	// error of about 1.3 points.
	for i, name := range []string{"pass rate", "tokens"} {
		rate := float64(covered[i]) / trials
		t.Logf("%s coverage %.3f", name, rate)
		if rate < 0.88 || rate > 0.99 {
			t.Errorf("%s: the 95%% interval covered the true difference in %.3f of trials", name, rate)
		}
	}
}

// draw returns n epochs passing with probability p, their tokens around mean.
func draw(r *rand.Rand, n int, p, mean float64) []Epoch {
	out := make([]Epoch, n)
	for i := range out {
		out[i] = Epoch{Verdict: Failed, Tokens: int64(mean + 300*r.NormFloat64())}
		if r.Float64() < p {
			out[i].Verdict = Passed
		}
	}
	return out
}

// TestQuantile checks the selection against sorting, on data with ties.
func TestQuantile(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 200 {
		x := make([]float64, 1+r.IntN(300))
		for i := range x {
			x[i] = float64(r.IntN(40))
		}
		sorted := slices.Clone(x)
		slices.Sort(sorted)
		for _, q := range []float64{0, 0.025, 0.5, 0.975, 1} {
			h := float64(len(x)-1) * q
			lo := int(h)
			want := sorted[lo]
			if lo < len(x)-1 {
				want += (h - float64(lo)) * (sorted[lo+1] - sorted[lo])
			}
			if got := quantile(slices.Clone(x), q); got != want {
				t.Errorf("trial %d: quantile(%v) = %v, want %v", trial, q, got, want)
			}
		}
	}
}

// TestCompareHolmAcrossSkills: the skills of a comparison form one family; a skill that alone
// would be significant can lose it after the adjustment.
func TestCompareHolmAcrossSkills(t *testing.T) {
	var a, b []Case
	for _, s := range []struct {
		name    string
		flipped int // cases failing in A and passing in B; one case goes the other way
	}{{"strong", 12}, {"medium", 8}, {"weak", 2}} {
		pairs := append(repeat(s.flipped, [2]string{"F", "P"}), [2]string{"P", "F"})
		sa, sb := arms(s.name, pairs)
		a, b = append(a, sa...), append(b, sb...)
	}
	got, err := Compare(a, b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var p []float64
	for _, s := range got.PerSkill {
		p = append(p, s.P)
	}
	want := Holm(p)
	for i, s := range got.PerSkill {
		if s.PAdjusted != want[i] || s.Significant != (want[i] <= Alpha) {
			t.Errorf("%s: p %v adjusted %v significant %v, want adjusted %v", s.Skill, s.P, s.PAdjusted, s.Significant, want[i])
		}
	}
	// strong: McNemar p for 1 vs 12 is 0.0034, times 3 is 0.0103: still significant. medium:
	// 1 vs 8 is 0.0352, significant alone, times 2 is 0.0703: no longer. weak: 1 vs 2 is 1.
	if s := got.PerSkill[1]; s.Skill != "strong" || !s.Significant {
		t.Errorf("strong = %+v, want significant after Holm", s)
	}
	if s := got.PerSkill[0]; s.Skill != "medium" || s.P > Alpha || s.Significant {
		t.Errorf("medium = %+v, want significant alone, not after Holm", s)
	}
}

// signFlipWhole is signFlipIntegers as it was before it kept half the distribution: the whole
// distribution, scattered step by step. The two must agree to the last bit.
func signFlipWhole(k []int) float64 {
	nz, total, obs, _ := nonZeroInts(k)
	if len(nz) == 0 {
		return 1
	}
	dist := make([]float64, 2*total+1)
	next := make([]float64, 2*total+1)
	dist[total] = 1
	reach := 0
	for _, x := range nz {
		a := abs(x)
		clear(next[total-reach-a : total+reach+a+1])
		for s := total - reach; s <= total+reach; s++ {
			if q := dist[s]; q != 0 {
				next[s-a] += q / 2
				next[s+a] += q / 2
			}
		}
		dist, next = next, dist
		reach += a
	}
	p := 0.0
	for s := abs(obs); s <= total; s++ {
		p += dist[total+s]
		if s != 0 {
			p += dist[total-s]
		}
	}
	return min(1, p)
}

// TestSignFlipHalfIsWhole: the distribution kept on one side of 0 gives the p-value of the
// whole distribution, bit for bit, on small and large groups of differences scaled as
// integerDeltas scales them (a common denominator of 3, 10 or 360 decided epochs).
func TestSignFlipHalfIsWhole(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 300 {
		n := 1 + r.IntN(40)
		scale := []int{1, 3, 10, 360}[trial%4]
		if trial%10 == 0 {
			n = 500 + r.IntN(1500)
		}
		k := make([]int, n)
		for i := range k {
			k[i] = r.IntN(2*scale+1) - scale
			if r.IntN(4) == 0 {
				k[i] = 0
			}
		}
		got, ok := signFlipIntegers(k)
		if !ok {
			continue
		}
		if want := signFlipWhole(k); got != want {
			t.Fatalf("trial %d (%d differences of scale %d): half %v, whole %v", trial, n, scale, got, want)
		}
	}
}

// TestCompareSameOnAnyCores: the groups analysed on several cores at once give the comparison
// they give one by one.
func TestCompareSameOnAnyCores(t *testing.T) {
	a, b := benchArms(3000)
	prev := runtime.GOMAXPROCS(1)
	one, err := Compare(a, b, Options{Seed: 9})
	runtime.GOMAXPROCS(max(prev, 4))
	many, err2 := Compare(a, b, Options{Seed: 9})
	runtime.GOMAXPROCS(prev)
	if err != nil || err2 != nil {
		t.Fatal(err, err2)
	}
	if !reflect.DeepEqual(one, many) {
		t.Error("the comparison on several cores differs from the one on one core")
	}
}
