package stats

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// groupSeqWorked is testdata/groupseq.json: the spending function and the plans' looks and
// levels, computed independently of this package (see testdata/groupseq.md).
type groupSeqWorked struct {
	Spent []struct {
		Alpha, T, Spent float64
	}
	Plans []struct {
		Alpha                float64
		Epochs, Looks, Cases int
		At                   []int
		Levels               []float64
	}
}

func TestWorkedGroupSequential(t *testing.T) {
	b, err := os.ReadFile("testdata/groupseq.json")
	if err != nil {
		t.Fatal(err)
	}
	var w groupSeqWorked
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	if len(w.Spent) == 0 || len(w.Plans) == 0 {
		t.Fatal("groupseq.json lacks a table")
	}
	for _, s := range w.Spent {
		if got := OBrienFlemingSpent(s.Alpha, s.T); !near(got, s.Spent, 1e-9) || math.Abs(got-s.Spent) > 1e-9*s.Spent+1e-15 {
			t.Errorf("OBrienFlemingSpent(%g, %g) = %.15g, want %.15g", s.Alpha, s.T, got, s.Spent)
		}
	}
	for _, p := range w.Plans {
		g, err := NewGroupSequential(p.Alpha, p.Epochs, p.Looks, p.Cases, 1)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(g.Looks) != fmt.Sprint(p.At) || len(g.Levels) != len(p.Levels) {
			t.Errorf("plan %+v: looks %v levels %v, want %v %v", p, g.Looks, g.Levels, p.At, p.Levels)
			continue
		}
		sum := 0.0
		for j := range g.Levels {
			sum += g.Levels[j]
			if math.Abs(g.Levels[j]-p.Levels[j]) > 1e-9*p.Levels[j]+1e-15 {
				t.Errorf("plan %+v: level of look %d = %.15g, want %.15g", p, j+1, g.Levels[j], p.Levels[j])
			}
		}
		if math.Abs(sum-p.Alpha) > 1e-12 {
			t.Errorf("plan %+v: levels sum to %v, want alpha", p, sum)
		}
	}
}

func TestNewGroupSequentialRefuses(t *testing.T) {
	for _, c := range []struct {
		alpha                        float64
		epochs, looks, cases, skills int
	}{
		{0, 20, 4, 10, 1}, {1, 20, 4, 10, 1}, {0.05, 1, 4, 10, 1}, {0.05, 20, 1, 10, 1}, {0.05, 20, 4, 0, 1}, {0.05, 20, 4, 10, 0},
	} {
		if _, err := NewGroupSequential(c.alpha, c.epochs, c.looks, c.cases, c.skills); err == nil {
			t.Errorf("NewGroupSequential%+v: no error", c)
		}
	}
}

// armCases makes one arm's cases of skill "s" from per-case (passed, failed) counts.
func armCases(counts [][2]int) []Case {
	out := make([]Case, len(counts))
	for i, c := range counts {
		out[i] = Case{Skill: "s", Case: fmt.Sprintf("c%02d", i), Epochs: epochs(c[0], c[1])}
	}
	return out
}

func TestGroupSequentialDecide(t *testing.T) {
	g, err := NewGroupSequential(0.05, 20, 4, 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	g3, err := NewGroupSequential(0.05, 20, 4, 8, 3)
	if err != nil {
		t.Fatal(err)
	}
	same := func(n, pass int) [][2]int {
		out := make([][2]int, n)
		for i := range out {
			out[i] = [2]int{pass, 5 - pass}
		}
		return out
	}
	// Eight cases that passed all 15 epochs in both arms.
	locked := [][2]int{{15, 0}, {15, 0}, {15, 0}, {15, 0}, {15, 0}, {15, 0}, {15, 0}, {15, 0}}
	for _, c := range []struct {
		name string
		g    GroupSequential
		ps   []float64
		a, b [][2]int
		want string
	}{
		// Eight cases cannot reach the first two looks' levels (2^-7 = 0.0078): look 3 has them.
		{"below the level: significant", g, []float64{0.5, 0.001, 0.01}, same(8, 2), same(8, 2), StopSignificant},
		{"a look that spends nothing", g, []float64{0.5, 0.001}, same(8, 2), same(8, 2), ""},
		{"below the level but not its share among three skills", g3, []float64{0.5, 0.5, 0.01}, same(8, 2), same(8, 2), ""},
		{"the last look", g, []float64{0.5, 0.5, 0.5, 0.5}, same(8, 2), same(8, 2), StopMax},
		{"every case can still move", g, []float64{1}, same(8, 2), same(8, 2), ""},
		// At look 3 (15 of 20 epochs), a case whose both arms passed every epoch can still end
		// up to 5/20 apart either way: eight cases can reach 2^-7 at look 4.
		{"eight cases at look 3", g, []float64{1, 1, 1}, locked, locked, ""},
		{"p-value already below alpha goes on", g3, []float64{1, 1, 0.01}, g3Locked(), g3Locked(), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := armCases(c.a), armCases(c.b)
			got, err := c.g.Decide(c.ps, a, b, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("Decide = %q, want %q", got, c.want)
			}
		})
	}
	// Five cases: 2^(1-5) = 0.0625 is above every level (all of alpha is the last look's), so
	// no outcome can make it significant, from the first look on. Six could reach 0.031.
	for n, want := range map[int]string{5: StopFutile, 6: ""} {
		gn, err := NewGroupSequential(0.05, 20, 4, n, 1)
		if err != nil {
			t.Fatal(err)
		}
		a := armCases(same(n, 2))
		if got, err := gn.Decide([]float64{1}, a, a, Options{}); err != nil || got != want {
			t.Errorf("%d cases at look 1: Decide = %q, %v, want %q", n, got, err, want)
		}
	}
	if _, err := g.Decide(nil, nil, nil, Options{}); err == nil {
		t.Error("Decide before any look: no error")
	}
}

// TestLowestPIsALowerBound checks the futility bound against every outcome of the epochs
// left, for small skills: no completion gives a p-value below it.
// g3Locked is eight cases that passed and failed some of 15 epochs: every one can still move
// both ways.
func g3Locked() [][2]int {
	out := make([][2]int, 8)
	for i := range out {
		out[i] = [2]int{10, 5}
	}
	return out
}

func TestLowestPIsALowerBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	checked := 0
	for trial := 0; trial < 60; trial++ {
		n := 2 + rng.IntN(4)    // cases
		done := 1 + rng.IntN(3) // epochs so far
		r := 1 + rng.IntN(2)    // epochs to come
		counts := func() [][2]int {
			out := make([][2]int, n)
			for i := range out {
				p := rng.IntN(done + 1)
				out[i] = [2]int{p, done - p}
			}
			return out
		}
		ca, cb := counts(), counts()
		diffs, err := pairCases(armCases(ca), armCases(cb))
		if err != nil {
			t.Fatal(err)
		}
		bound := lowestP(diffs, r, DefaultDraws)
		// Every completion: each case and arm gains k of r passes (order does not matter to
		// the test), 2n digits base r+1.
		total := 1
		for range 2 * n {
			total *= r + 1
		}
		for code := 0; code < total; code++ {
			x := code
			fa, fb := make([][2]int, n), make([][2]int, n)
			for i := range n {
				k := x % (r + 1)
				x /= r + 1
				fa[i] = [2]int{ca[i][0] + k, ca[i][1] + r - k}
				k = x % (r + 1)
				x /= r + 1
				fb[i] = [2]int{cb[i][0] + k, cb[i][1] + r - k}
			}
			p, _, err := LookP(armCases(fa), armCases(fb), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if p < bound*(1-1e-12) {
				t.Fatalf("A %v B %v + %d epochs: completion A %v B %v has p %v below the bound %v", ca, cb, r, fa, fb, p, bound)
			}
			checked++
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d completions checked", checked)
	}
}

func TestSequentialP(t *testing.T) {
	g, err := NewGroupSequential(0.05, 20, 4, 20, 1)
	if err != nil {
		t.Fatal(err)
	}
	// p·α/Δα at each look; the smallest wins, capped at 1.
	want := min(1, 0.01*0.05/g.Levels[1], 0.02*0.05/g.Levels[2])
	if got := g.P([]float64{0.5, 0.01, 0.02}); math.Abs(got-want) > 1e-15 {
		t.Errorf("P = %v, want %v", got, want)
	}
	if got := g.P([]float64{0.9}); got != 1 {
		t.Errorf("P of one look at 0.9 = %v, want 1", got)
	}
	r := g.Result([]float64{0.5, 0.001}, StopSignificant)
	if r.StoppedAtLook != 2 || r.EpochsRun != 10 || r.Reason != StopSignificant || r.P != g.P([]float64{0.5, 0.001}) {
		t.Errorf("Result = %+v", r)
	}
}

// simFigures are what a simulation of group-sequential comparisons measured.
type simFigures struct {
	skills int
	// rejected counts the skills found significant (sequential p-value ≤ alpha); naive those
	// a rule testing every look at alpha would have; fixed those the test of all epochs finds.
	rejected, naive, fixed int
	// stopped counts the skills stopped before the last look, by reason.
	significant, futile int
	// epochs are the comparison's epochs (both arms) run and planned; withSkill the with_skill
	// arm's epochs when its rows go on after a stop until their SPRT decides.
	epochsRun, epochsPlanned, withSkillRun int
}

// simulateGroupSequential plays skills skills, each of a few cases whose per-case pass
// probabilities are drawn by draw (the same case in arm A and B), epochs by epoch through the
// planned looks.
func simulateGroupSequential(t testing.TB, skills, epochs int, seed uint64, draw func(*rand.Rand) (pa, pb float64)) simFigures {
	rng := rand.New(rand.NewPCG(seed, 1))
	sizes := []int{6, 8, 10, 15, 30}
	sprt, err := NewSPRT(0.8, 0.1, 0.05, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	var f simFigures
	f.skills = skills
	for s := range skills {
		n := sizes[s%len(sizes)]
		g, err := NewGroupSequential(Alpha, epochs, DefaultLooks, n, 1)
		if err != nil {
			t.Fatal(err)
		}
		outA, outB := make([][]bool, n), make([][]bool, n)
		for i := range n {
			pa, pb := draw(rng)
			outA[i], outB[i] = make([]bool, epochs), make([]bool, epochs)
			for e := range epochs {
				outA[i][e] = rng.Float64() < pa
				outB[i][e] = rng.Float64() < pb
			}
		}
		casesAt := func(out [][]bool, e int) []Case {
			cs := make([]Case, n)
			for i := range n {
				ep := make([]Epoch, e)
				for k := range e {
					ep[k].Verdict = Failed
					if out[i][k] {
						ep[k].Verdict = Passed
					}
				}
				cs[i] = Case{Skill: "s", Case: fmt.Sprintf("c%02d", i), Epochs: ep}
			}
			return cs
		}
		var ps []float64
		reason := ""
		naive := false
		for j, e := range g.Looks {
			a, b := casesAt(outA, e), casesAt(outB, e)
			p, _, err := LookP(a, b, Options{})
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, p)
			naive = naive || p <= Alpha
			if reason == "" {
				if reason, err = g.Decide(ps, a, b, Options{}); err != nil {
					t.Fatal(err)
				}
				if reason != "" {
					stop := e
					f.epochsRun += 2 * n * stop
					if g.P(ps) <= Alpha {
						f.rejected++
					}
					switch reason {
					case StopSignificant:
						if j < len(g.Looks)-1 {
							f.significant++
						}
					case StopFutile:
						f.futile++
					}
					// The with_skill arm (B) goes on after the stop until each case's SPRT
					// decides, as in a run without a baseline.
					for i := range n {
						f.withSkillRun += max(stop, sprtEpochs(sprt, outB[i]))
					}
				}
			}
		}
		if naive {
			f.naive++
		}
		full, _, err := LookP(casesAt(outA, epochs), casesAt(outB, epochs), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if full <= Alpha {
			f.fixed++
		}
		f.epochsPlanned += 2 * n * epochs
	}
	return f
}

// sprtEpochs is how many of a case's epochs its SPRT reads before deciding (all of them when
// it does not).
func sprtEpochs(s SPRT, out []bool) int {
	pass, fail := 0, 0
	for e, ok := range out {
		if ok {
			pass++
		} else {
			fail++
		}
		if s.Decide(pass, fail) != 0 {
			return e + 1
		}
	}
	return len(out)
}

// TestGroupSequentialSimulation plays 10,000 skills under H0 (both arms alike, per-case pass
// probabilities drawn uniformly) and 10,000 under an alternative (B passes 25 points more
// often), 20 epochs planned, four looks. Under H0 the share found significant must stay within
// alpha (plus three standard errors of the simulation); the rule that tests every look at
// alpha, which the simulation must be able to tell from it, must not. Under the alternative
// the comparison must save epochs. The figures are logged (go test -run
// TestGroupSequentialSimulation -v ./stats) and recorded in BENCHMARKS.md.
func TestGroupSequentialSimulation(t *testing.T) {
	const skills, epochs = 10_000, 20
	se := 3 * math.Sqrt(Alpha*(1-Alpha)/skills)
	h0 := simulateGroupSequential(t, skills, epochs, 1, func(r *rand.Rand) (float64, float64) {
		p := r.Float64()
		return p, p
	})
	h1 := simulateGroupSequential(t, skills, epochs, 2, func(r *rand.Rand) (float64, float64) {
		p := 0.1 + 0.6*r.Float64()
		return p, p + 0.25
	})
	rate := func(k int) float64 { return float64(k) / skills }
	for _, c := range []struct {
		name string
		f    simFigures
	}{{"H0", h0}, {"H1 (+25 points)", h1}} {
		f := c.f
		t.Logf("%s: %d skills; significant %.4f (every look at alpha: %.4f; all epochs, one test: %.4f); stopped early: %.4f significant, %.4f futile; comparison epochs %.3f of planned; both arms with the with_skill SPRT going on: %.3f",
			c.name, f.skills, rate(f.rejected), rate(f.naive), rate(f.fixed), rate(f.significant), rate(f.futile),
			float64(f.epochsRun)/float64(f.epochsPlanned), float64(f.epochsRun/2+f.withSkillRun)/float64(f.epochsPlanned))
	}
	if rate(h0.rejected) > Alpha+se {
		t.Errorf("type I error %.4f above alpha %.2f + %.4f", rate(h0.rejected), Alpha, se)
	}
	if rate(h0.naive) <= Alpha+se {
		t.Errorf("the naive rule's type I error %.4f is not above alpha: the simulation cannot tell a rule that inflates it", rate(h0.naive))
	}
	if rate(h0.fixed) > Alpha+se {
		t.Errorf("the fixed design's type I error %.4f above alpha", rate(h0.fixed))
	}
	if h1.epochsRun >= h1.epochsPlanned*9/10 {
		t.Errorf("under the alternative the comparison ran %d of %d epochs: it does not stop early", h1.epochsRun, h1.epochsPlanned)
	}
	if rate(h1.rejected) < rate(h1.fixed)-0.1 {
		t.Errorf("power %.4f, more than 10 points below the fixed design's %.4f", rate(h1.rejected), rate(h1.fixed))
	}
}

// TestCompareSequential checks that a group-sequentially compared skill enters Holm's
// adjustment with its sequential p-value, not the p-value of the epochs it ran.
func TestCompareSequential(t *testing.T) {
	var a, b []Case
	for _, skill := range []string{"seq", "fixed"} {
		for i := range 10 {
			name := fmt.Sprintf("c%02d", i)
			a = append(a, Case{Skill: skill, Case: name, Epochs: epochs(1, 4)})
			b = append(b, Case{Skill: skill, Case: name, Epochs: epochs(4, 1)})
		}
	}
	g, err := NewGroupSequential(0.05, 20, 4, 10, 2)
	if err != nil {
		t.Fatal(err)
	}
	res := g.Result([]float64{0.00195}, StopSignificant)
	plain, err := Compare(a, b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Compare(a, b, Options{Sequential: map[string]SequentialResult{"seq": res}})
	if err != nil {
		t.Fatal(err)
	}
	seq, fixed := got.PerSkill[1], got.PerSkill[0]
	if seq.Skill != "seq" || seq.Test != TestGroupSequential || seq.P != res.P || seq.Sequential == nil || seq.Sequential.Reason != StopSignificant {
		t.Fatalf("seq: %+v", seq)
	}
	if fixed.Sequential != nil || fixed.P != plain.PerSkill[0].P {
		t.Errorf("fixed: %+v, want its own p %v", fixed, plain.PerSkill[0].P)
	}
	want := Holm([]float64{fixed.P, seq.P})
	if fixed.PAdjusted != want[0] || seq.PAdjusted != want[1] {
		t.Errorf("adjusted %v, %v, want %v", fixed.PAdjusted, seq.PAdjusted, want)
	}
}
