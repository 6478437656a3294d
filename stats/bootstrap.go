package stats

import (
	"math/bits"
	"slices"
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
		var s measures
		for range n {
			// Lemire's multiply-shift maps 64 random bits onto [0, n) with a bias of n/2^64.
			i, _ := bits.Mul64(rng.next(), n)
			row := &rows[i]
			s[0] += row[0]
			s[1] += row[1]
			s[2] += row[2]
			s[3] += row[3]
		}
		for k := range means {
			means[k][r] = s[k] / float64(n)
		}
	}
	var out [4]Interval
	for k, m := range means {
		slices.Sort(m)
		out[k] = Interval{quantile(m, Alpha/2), quantile(m, 1-Alpha/2)}
	}
	return out
}

// quantile is the q-quantile of sorted x, interpolating linearly between order statistics
// (Hyndman & Fan's type 7, R's and NumPy's default).
func quantile(x []float64, q float64) float64 {
	h := float64(len(x)-1) * q
	lo := int(h)
	if lo >= len(x)-1 {
		return x[len(x)-1]
	}
	return x[lo] + (h-float64(lo))*(x[lo+1]-x[lo])
}
