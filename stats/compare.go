package stats

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// overallStream names the random stream of the whole-run group; no skill name holds a NUL.
const overallStream = "\x00overall"

// maxScale bounds the common denominator under which per-case differences are taken as
// integers for the exact sign-flip distribution.
const maxScale = 1 << 16

type caseKey struct{ skill, name string }

// Compare compares arm b against arm a (b minus a), pairing cases on Skill and Case: per case,
// per skill with Holm's adjustment across skills, and over the whole run. A case given twice in
// one arm is an error: the caller decides how epochs of the same case are grouped.
func Compare(a, b []Case, opt Options) (Comparison, error) {
	if opt.Resamples <= 0 {
		opt.Resamples = DefaultResamples
	}
	if opt.Draws <= 0 {
		opt.Draws = DefaultDraws
	}
	diffs, err := pairCases(a, b)
	if err != nil {
		return Comparison{}, err
	}

	out := Comparison{Cases: diffs, Seed: opt.Seed}
	var skills [][2]int // each skill's cases, diffs[start:end]
	for start := 0; start < len(diffs); {
		end := start + 1
		for end < len(diffs) && diffs[end].Skill == diffs[start].Skill {
			end++
		}
		skills = append(skills, [2]int{start, end})
		start = end
	}
	// Each group draws from its own random stream and reads the cases only: analysed on every
	// core at once, the groups come out as they would one by one. The whole run, the largest,
	// goes first.
	if len(skills) > 0 {
		out.PerSkill = make([]SkillComparison, len(skills))
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(skills)+1) {
		wg.Go(func() {
			for {
				switch i := int(next.Add(1)) - 1; {
				case i == 0:
					out.Overall = analyze("", overallStream, diffs, opt)
				case i <= len(skills):
					g := skills[i-1]
					skill := diffs[g[0]].Skill
					out.PerSkill[i-1] = analyze(skill, skill, diffs[g[0]:g[1]], opt)
				default:
					return
				}
			}
		})
	}
	wg.Wait()
	out.Overall.PAdjusted = out.Overall.P
	out.Overall.Significant = out.Overall.Tested && out.Overall.P <= Alpha

	for i := range out.PerSkill {
		s := &out.PerSkill[i]
		if res, ok := opt.Sequential[s.Skill]; ok && s.Tested {
			// The looks' test, combined over the looks taken: the p-value the stop was
			// decided on, and the one Holm's adjustment must see.
			s.P, s.Test, s.Draws, s.Sequential = res.P, TestGroupSequential, 0, &res
		}
	}
	var family []float64
	for _, s := range out.PerSkill {
		if s.Tested {
			family = append(family, s.P)
		}
	}
	adjusted := Holm(family)
	for i, j := 0, 0; i < len(out.PerSkill); i++ {
		s := &out.PerSkill[i]
		if !s.Tested {
			continue
		}
		s.PAdjusted = adjusted[j]
		s.Significant = s.PAdjusted <= Alpha
		j++
	}
	return out, nil
}

// pairCases pairs the cases of arms a and b on Skill and Case, sorted by skill and case; a
// case given twice in one arm is an error.
func pairCases(a, b []Case) ([]CaseDiff, error) {
	index := make(map[caseKey]int, max(len(a), len(b)))
	diffs := make([]CaseDiff, 0, max(len(a), len(b)))
	for _, c := range a {
		k := caseKey{c.Skill, c.Case}
		if _, dup := index[k]; dup {
			return nil, fmt.Errorf("arm A has case %q of skill %q twice", c.Case, c.Skill)
		}
		index[k] = len(diffs)
		diffs = append(diffs, CaseDiff{Skill: c.Skill, Case: c.Case, A: summarize(c.Epochs)})
	}
	for _, c := range b {
		k := caseKey{c.Skill, c.Case}
		i, ok := index[k]
		if !ok {
			index[k] = len(diffs)
			diffs = append(diffs, CaseDiff{Skill: c.Skill, Case: c.Case, B: summarize(c.Epochs)})
			continue
		}
		if diffs[i].B.Present {
			return nil, fmt.Errorf("arm B has case %q of skill %q twice", c.Case, c.Skill)
		}
		diffs[i].B = summarize(c.Epochs)
	}
	slices.SortFunc(diffs, func(x, y CaseDiff) int {
		return cmp.Or(cmp.Compare(x.Skill, y.Skill), cmp.Compare(x.Case, y.Case))
	})
	for i := range diffs {
		d := &diffs[i]
		d.Paired = d.A.Decided > 0 && d.B.Decided > 0
		if d.Paired {
			d.Delta = d.B.Rate() - d.A.Rate()
		}
	}
	return diffs, nil
}

// summarize counts one case's epochs in one arm.
func summarize(epochs []Epoch) CaseArm {
	c := CaseArm{Present: true}
	var tokens, cost, seconds float64
	for _, e := range epochs {
		switch e.Verdict {
		case Passed, Failed:
			if e.Verdict == Passed {
				c.Passed++
			}
			c.Decided++
			tokens += float64(e.Tokens)
			cost += e.Cost
			seconds += e.Duration.Seconds()
		case Skipped:
			c.Skipped++
		default:
			// Errored, timed out, or a verdict this package does not know: never a pass or a
			// fail, only counted.
			c.LeftOut++
		}
	}
	if c.Decided > 0 {
		n := float64(c.Decided)
		c.Tokens, c.Cost, c.Seconds = tokens/n, cost/n, seconds/n
	}
	return c
}

// analyze compares the cases of one group; stream names its random stream. PAdjusted and
// Significant are left for the caller, who knows the family.
func analyze(name, stream string, cases []CaseDiff, opt Options) SkillComparison {
	sc := SkillComparison{Skill: name}
	var rows []measures
	var sumA, sumB measures
	single := true
	var both, onlyA, onlyB, neither int
	for _, c := range cases {
		sc.A.LeftOut += c.A.LeftOut
		sc.A.Skipped += c.A.Skipped
		sc.B.LeftOut += c.B.LeftOut
		sc.B.Skipped += c.B.Skipped
		switch {
		case !c.A.Present:
			sc.OnlyB++
			continue
		case !c.B.Present:
			sc.OnlyA++
			continue
		case !c.Paired:
			sc.Unpaired++
			continue
		}
		sc.A.Epochs += c.A.Decided
		sc.B.Epochs += c.B.Decided
		armA := measures{c.A.Rate(), c.A.Tokens, c.A.Cost, c.A.Seconds}
		armB := measures{c.B.Rate(), c.B.Tokens, c.B.Cost, c.B.Seconds}
		var row measures
		for k := range row {
			sumA[k] += armA[k]
			sumB[k] += armB[k]
			row[k] = armB[k] - armA[k]
		}
		row[0] = c.Delta
		rows = append(rows, row)
		if c.A.Decided != 1 || c.B.Decided != 1 {
			single = false
			continue
		}
		switch pa, pb := c.A.Passed == 1, c.B.Passed == 1; {
		case pa && pb:
			both++
		case pa:
			onlyA++
		case pb:
			onlyB++
		default:
			neither++
		}
	}
	sc.Cases = len(rows)
	if sc.Cases == 0 {
		sc.Test, sc.IntervalMethod = TestNone, IntervalNone
		sc.P, sc.PAdjusted = 1, 1
		sc.power(nil, opt.MinEffect)
		return sc
	}
	sc.Tested = true
	n := float64(sc.Cases)
	var mean measures
	for _, r := range rows {
		for k := range mean {
			mean[k] += r[k]
		}
	}
	for k := range mean {
		mean[k] /= n
	}
	sc.A.PassRate, sc.B.PassRate, sc.Delta = sumA[0]/n, sumB[0]/n, mean[0]

	rng := newStream(opt.Seed, stream)
	sc.Resamples = min(opt.Resamples, max(minResamples, bootstrapBudget/sc.Cases))
	ivs := bootstrap(rows, sc.Resamples, rng)
	sc.Tokens = Delta{A: sumA[1] / n, B: sumB[1] / n, Mean: mean[1], Interval: ivs[1]}
	sc.Cost = Delta{A: sumA[2] / n, B: sumB[2] / n, Mean: mean[2], Interval: ivs[2]}
	sc.Seconds = Delta{A: sumA[3] / n, B: sumB[3] / n, Mean: mean[3], Interval: ivs[3]}

	d := make([]float64, len(rows))
	for i, r := range rows {
		d[i] = r[0]
	}
	sc.power(d, opt.MinEffect)
	if single {
		sc.IntervalMethod = IntervalNewcombe
		sc.Interval = NewcombePaired(both, onlyB, onlyA, neither)
	} else {
		sc.IntervalMethod, sc.Interval = IntervalBootstrap, ivs[0]
	}
	sc.Test, sc.P, sc.Draws = pairedTest(cases, d, single, onlyA, onlyB, opt, rng)
	return sc
}

// pairedTest is the paired test of a group whose paired cases' differences in pass rate are
// d: McNemar's exact test when every paired case has one decided epoch in each arm (single,
// with onlyA and onlyB the discordant pairs), else the sign-flip test, exact when it can be,
// else Monte Carlo with draws drawn from rng.
func pairedTest(cases []CaseDiff, d []float64, single bool, onlyA, onlyB int, opt Options, rng *splitMix) (test string, p float64, draws int) {
	if single {
		return TestMcNemarExact, McNemarExact(onlyA, onlyB), 0
	}
	nz := len(nonZero(d))
	if nz <= ExactSignFlipMax {
		return TestSignFlipExact, SignFlipExact(d), 0
	}
	if k, ok := integerDeltas(cases); ok {
		if p, ok := signFlipIntegers(k); ok {
			return TestSignFlipExact, p, 0
		}
	}
	draws = min(opt.Draws, max(minMonteCarloDraws, monteCarloBudget/nz))
	return TestSignFlipMonteCarlo, signFlipMonteCarlo(d, draws, rng), draws
}

// integerDeltas returns the paired cases' differences in pass rate scaled by a common
// denominator of all their decided counts, so that they are exact integers; ok is false when
// that denominator would exceed maxScale.
func integerDeltas(cases []CaseDiff) (k []int, ok bool) {
	scale := 1
	for _, c := range cases {
		if !c.Paired {
			continue
		}
		for _, n := range [2]int{c.A.Decided, c.B.Decided} {
			scale = scale / gcd(scale, n) * n
			if scale > maxScale {
				return nil, false
			}
		}
	}
	for _, c := range cases {
		if c.Paired {
			k = append(k, c.B.Passed*(scale/c.B.Decided)-c.A.Passed*(scale/c.A.Decided))
		}
	}
	return k, true
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// power estimates the group's design from its per-case differences d: the smallest
// difference it detects (MinDetectable, at the variance of d around its mean) and whether
// that is more than minEffect (DefaultMinEffect when not positive). The variance is the
// comparison's own: it includes whatever the effect did to it, which is what a repeat of the
// same design would see.
func (sc *SkillComparison) power(d []float64, minEffect float64) {
	if minEffect <= 0 {
		minEffect = DefaultMinEffect
	}
	sc.MinEffect = minEffect
	sc.PowerMethod = PowerMethod
	mde, ok := MinDetectable(len(d), sampleVariance(d))
	if ok {
		sc.MinDetectable = &mde
	}
	sc.Underpowered = !ok || mde > minEffect
}
