package stats

import "math"

// exactDistributionBudget bounds the work of the exact sign-flip distribution computed over
// integer sums (cases × range of the sum); past it a test is Monte Carlo.
const exactDistributionBudget = 20_000_000

// monteCarloBudget bounds the work of the Monte Carlo sign flips of one group (draws × cases):
// a group too large for DefaultDraws within it gets fewer draws, never fewer than
// minMonteCarloDraws.
const (
	monteCarloBudget   = 50_000_000
	minMonteCarloDraws = 1000
)

// tolerance is how far below the observed |sum| a resampled |sum| may fall and still count as
// at least as extreme: sums of the same values in another order differ in the last bits.
func tolerance(d []float64) float64 {
	s := 0.0
	for _, x := range d {
		s += math.Abs(x)
	}
	return 1e-9 * max(1, s)
}

// nonZero returns the differences that are not zero: a zero difference is the same under
// either sign and only dilutes the count of patterns.
func nonZero(d []float64) []float64 {
	var out []float64
	for _, x := range d {
		if x != 0 {
			out = append(out, x)
		}
	}
	return out
}

// SignFlipExact is the two-sided p-value of the paired sign-flip test of the differences d,
// over all 2^n patterns of signs of its non-zero entries: the share of patterns whose |sum| is
// at least the observed |sum|. It is meant for at most ExactSignFlipMax non-zero entries; it
// splits them in two halves and pairs the halves' sums, so each sum is made of at most ten
// additions.
func SignFlipExact(d []float64) float64 {
	nz := nonZero(d)
	if len(nz) == 0 {
		return 1
	}
	obs := 0.0
	for _, x := range nz {
		obs += x
	}
	limit := math.Abs(obs) - tolerance(nz)
	h := len(nz) / 2
	left, right := subsetSums(nz[:h]), subsetSums(nz[h:])
	count := 0
	for _, l := range left {
		for _, r := range right {
			if math.Abs(l+r) >= limit {
				count++
			}
		}
	}
	return float64(count) / float64(len(left)*len(right))
}

// subsetSums returns the sum of d under each of its 2^len(d) sign patterns.
func subsetSums(d []float64) []float64 {
	out := make([]float64, 1<<len(d))
	for mask := range out {
		s := 0.0
		for i, x := range d {
			if mask&(1<<i) != 0 {
				s -= x
			} else {
				s += x
			}
		}
		out[mask] = s
	}
	return out
}

// signFlipIntegers is the exact two-sided sign-flip p-value of integer differences k, from the
// distribution of Σ±k computed step by step: the probabilities of each reachable sum after
// each case. ok is false when that would exceed exactDistributionBudget.
//
// The distribution is symmetric about 0 after every step, so only the sums s ≥ 0 are kept,
// and each step gathers next[s] = dist[s-a]/2 + dist[s+a]/2 (dist[-t] being dist[t]): half the
// work of the whole distribution, and no branch in the loop. The additions are the ones the
// whole distribution makes, in the same order, so the p-value is the same to the last bit.
func signFlipIntegers(k []int) (p float64, ok bool) {
	nz, total, obs, widest := nonZeroInts(k)
	if len(nz) == 0 {
		return 1, true
	}
	if len(nz)*(2*total+1) > exactDistributionBudget {
		return 0, false
	}
	// dist[s] is the probability that the partial sum is s, and that it is -s; past the sums
	// reached it is 0, up to widest beyond total, where a step reads.
	dist := make([]float64, total+widest+1)
	next := make([]float64, total+widest+1)
	dist[0] = 1
	reach := 0 // partial sums lie in [-reach, reach]
	for _, x := range nz {
		a := abs(x)
		top := reach + a
		// Below a, s-a is negative: its probability is that of a-s.
		for s := range min(a, top+1) {
			next[s] = dist[a-s]*0.5 + dist[s+a]*0.5
		}
		for s := a; s <= top; s++ {
			next[s] = dist[s-a]*0.5 + dist[s+a]*0.5
		}
		dist, next = next, dist
		reach = top
	}
	for s := abs(obs); s <= total; s++ {
		p += dist[s]
		if s != 0 {
			p += dist[s]
		}
	}
	return min(1, p), true
}

// nonZeroInts returns the non-zero entries of k, the sum of their magnitudes, their sum and the
// largest magnitude.
func nonZeroInts(k []int) (nz []int, total, sum, widest int) {
	for _, x := range k {
		if x != 0 {
			nz = append(nz, x)
			total += abs(x)
			sum += x
			widest = max(widest, abs(x))
		}
	}
	return nz, total, sum, widest
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// signFlipMonteCarlo is the two-sided sign-flip p-value of d estimated from draws random sign
// patterns: (1 + k) / (1 + draws), k the draws at least as extreme as the observed sum, so it is
// never 0 and never below what an exact test could give.
func signFlipMonteCarlo(d []float64, draws int, rng *splitMix) float64 {
	nz := nonZero(d)
	if len(nz) == 0 {
		return 1
	}
	obs := 0.0
	bits := make([]uint64, len(nz))
	for i, x := range nz {
		obs += x
		bits[i] = math.Float64bits(x)
	}
	limit := math.Abs(obs) - tolerance(nz)
	count := 0
	for range draws {
		s := 0.0
		// One random word gives 64 signs; a sign flips the value's sign bit.
		var word uint64
		for i, b := range bits {
			if i&63 == 0 {
				word = rng.next()
			}
			s += math.Float64frombits(b ^ (word << 63))
			word >>= 1
		}
		if math.Abs(s) >= limit {
			count++
		}
	}
	return float64(1+count) / float64(1+draws)
}
