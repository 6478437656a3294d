package stats

import "slices"

// Holm adjusts a family of p-values by Holm's step-down method: the i-th smallest of m is
// multiplied by m-i (i from 0), capped at 1, and made non-decreasing in that order, so a
// hypothesis is rejected at level α exactly when its adjusted p-value is at most α. It controls
// the family-wise error rate without assuming independence. The result is in the input's order.
func Holm(p []float64) []float64 {
	m := len(p)
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case p[a] < p[b]:
			return -1
		case p[a] > p[b]:
			return 1
		}
		return 0
	})
	adj := make([]float64, m)
	running := 0.0
	for i, idx := range order {
		running = max(running, min(1, float64(m-i)*p[idx]))
		adj[idx] = running
	}
	return adj
}
