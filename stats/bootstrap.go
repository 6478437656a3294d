package stats

import "math/bits"

// bootstrapBudget bounds the work of one group's bootstrap (resamples × cases): a group too
// large for the requested resamples within it gets fewer, never fewer than minResamples. At a
// hundred thousand cases the default of a thousand still fits.
const (
	bootstrapBudget = 100_000_000
	minResamples    = 200
)

// measures is what a paired case contributes to a bootstrap, B minus A: pass rate, tokens,
// cost and seconds. Kept together so a resampled case is one memory access.
type measures [4]float64

// bootstrap returns the 95% percentile intervals of the means of each measure, from resamples
// resamples of the cases with replacement (the epochs of a case stay together, so the
// interval accounts for cases being the unit that varies).
func bootstrap(rows []measures, resamples int, rng *splitMix) [4]Interval {
	n := uint64(len(rows))
	var means [4][]float64
	for k := range means {
		means[k] = make([]float64, resamples)
	}
	for r := range resamples {
		// Four scalar sums rather than an array: they stay in registers.
		var s0, s1, s2, s3 float64
		for range n {
			// Lemire's multiply-shift maps 64 random bits onto [0, n) with a bias of n/2^64.
			i, _ := bits.Mul64(rng.next(), n)
			row := &rows[i]
			s0 += row[0]
			s1 += row[1]
			s2 += row[2]
			s3 += row[3]
		}
		nf := float64(n)
		means[0][r], means[1][r], means[2][r], means[3][r] = s0/nf, s1/nf, s2/nf, s3/nf
	}
	var out [4]Interval
	for k, m := range means {
		out[k] = Interval{quantile(m, Alpha/2), quantile(m, 1-Alpha/2)}
	}
	return out
}

// quantile is the q-quantile of x, interpolating linearly between order statistics (Hyndman &
// Fan's type 7, R's and NumPy's default). It reorders x: the two order statistics it needs are
// selected, not sorted for, since a comparison of a thousand skills needs eight thousand of them.
func quantile(x []float64, q float64) float64 {
	h := float64(len(x)-1) * q
	lo := int(h)
	v := selectNth(x, lo)
	if lo >= len(x)-1 {
		return v
	}
	// After the selection, everything past lo is at least x[lo]; the next order statistic is
	// their minimum.
	next := x[lo+1]
	for _, y := range x[lo+2:] {
		next = min(next, y)
	}
	return v + (h-float64(lo))*(next-v)
}

// selectNth reorders x so that x[k] is its k-th smallest value (from 0), everything before it
// no larger and everything after it no smaller, and returns x[k]: Hoare's quickselect with a
// median-of-three pivot, O(len(x)) on average.
func selectNth(x []float64, k int) float64 {
	lo, hi := 0, len(x)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		// Order x[lo], x[mid], x[hi] so the pivot x[mid] is their median.
		if x[mid] < x[lo] {
			x[mid], x[lo] = x[lo], x[mid]
		}
		if x[hi] < x[lo] {
			x[hi], x[lo] = x[lo], x[hi]
		}
		if x[hi] < x[mid] {
			x[hi], x[mid] = x[mid], x[hi]
		}
		pivot := x[mid]
		i, j := lo, hi
		for i <= j {
			for x[i] < pivot {
				i++
			}
			for x[j] > pivot {
				j--
			}
			if i <= j {
				x[i], x[j] = x[j], x[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return x[k]
		}
	}
	return x[k]
}
