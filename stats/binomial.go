package stats

import "math"

// z95 is the standard normal quantile of a two-sided 95% interval.
const z95 = 1.959963984540054

// Wilson is the 95% Wilson score interval of a pass rate of passed out of n. It stays inside
// [0, 1] and is sensible at 0 and n passes, where the textbook normal interval collapses. With
// n = 0 nothing is known and the interval is [0, 1].
func Wilson(passed, n int) Interval {
	if n <= 0 {
		return Interval{0, 1}
	}
	nf := float64(n)
	p := float64(passed) / nf
	z2 := z95 * z95
	den := 1 + z2/nf
	center := (p + z2/(2*nf)) / den
	half := z95 * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf)) / den
	return Interval{max(0, center-half), min(1, center+half)}
}

// McNemarExact is the two-sided p-value of McNemar's exact test: with b pairs where only the
// first arm passed and c where only the second did, it is twice the smaller tail of
// Binomial(b+c, 1/2), capped at 1. No discordant pair gives 1.
func McNemarExact(b, c int) float64 {
	m := b + c
	k := min(b, c)
	if m == 0 || 2*k == m {
		return 1
	}
	// The terms C(m, i) / 2^m grow with i up to k < m/2, so they are summed from the largest
	// down, relative to it, and the largest is taken in log space: no overflow at any m.
	sum, r := 1.0, 1.0
	for i := k; i > 0; i-- {
		r *= float64(i) / float64(m-i+1)
		sum += r
		if r < sum*1e-17 {
			break
		}
	}
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	logTop := lg(m) - lg(k) - lg(m-k) - float64(m)*math.Ln2
	return min(1, 2*math.Exp(logTop)*sum)
}

// NewcombePaired is the 95% interval of the difference p1 - p2 of two paired proportions by
// Newcombe's square-and-add method (Newcombe 1998, Stat Med 17:2635-2650, method 10), from the
// four cells of the paired table: both (both passed), onlyFirst, onlySecond, neither; p1 is
// (both+onlyFirst)/n and p2 is (both+onlySecond)/n. The marginal Wilson limits are combined
// through the estimated correlation φ, whose numerator (both·neither - onlyFirst·onlySecond) is
// moved towards zero by n/2 when positive, as Newcombe specifies.
func NewcombePaired(both, onlyFirst, onlySecond, neither int) Interval {
	n := both + onlyFirst + onlySecond + neither
	if n == 0 {
		return Interval{-1, 1}
	}
	nf := float64(n)
	r1, r2 := both+onlyFirst, both+onlySecond // marginal passes
	p1, p2 := float64(r1)/nf, float64(r2)/nf
	w1, w2 := Wilson(r1, n), Wilson(r2, n)
	phi := 0.0
	if r1 > 0 && r1 < n && r2 > 0 && r2 < n {
		num := float64(both)*float64(neither) - float64(onlyFirst)*float64(onlySecond)
		switch {
		case num > nf/2:
			num -= nf / 2
		case num >= 0:
			num = 0
		}
		phi = num / math.Sqrt(float64(r1)*float64(n-r1)*float64(r2)*float64(n-r2))
	}
	d := p1 - p2
	dl1, du1 := p1-w1.Lo, w1.Hi-p1
	dl2, du2 := p2-w2.Lo, w2.Hi-p2
	lo := d - math.Sqrt(max(0, dl1*dl1-2*phi*dl1*du2+du2*du2))
	hi := d + math.Sqrt(max(0, du1*du1-2*phi*du1*dl2+dl2*dl2))
	return Interval{max(-1, lo), min(1, hi)}
}
