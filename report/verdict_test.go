package report

import (
	"math"
	"testing"

	skillfleetv1 "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

const (
	vPending  = skillfleetv1.Verdict_VERDICT_UNSPECIFIED
	vPassed   = skillfleetv1.Verdict_VERDICT_PASSED
	vFailed   = skillfleetv1.Verdict_VERDICT_FAILED
	vErrored  = skillfleetv1.Verdict_VERDICT_ERRORED
	vTimedOut = skillfleetv1.Verdict_VERDICT_TIMED_OUT
	vSkipped  = skillfleetv1.Verdict_VERDICT_SKIPPED
)

func TestDecide(t *testing.T) {
	tests := []struct {
		name   string
		epochs int
		conf   float64
		tally  Tally
		final  bool
		want   skillfleetv1.Verdict
	}{
		// One epoch, default confidence: the job verdict is the case verdict.
		{"1 run passed", 1, 0, Tally{Passed: 1}, false, vPassed},
		{"1 run failed", 1, 0, Tally{Failed: 1}, false, vFailed},
		{"1 run errored", 1, 0, Tally{Errored: 1}, false, vErrored},
		{"1 run timed out", 1, 0, Tally{TimedOut: 1}, false, vTimedOut},
		{"1 run skipped by the worker", 1, 0, Tally{Skipped: 1}, false, vSkipped},
		{"1 run, no result yet", 1, 0, Tally{}, false, vPending},
		{"1 run, never ran (cancelled)", 1, 0, Tally{}, true, vSkipped},

		// Changed-only runs: reused epochs are never passes.
		{"1 run reused", 1, 0, Tally{Reused: 1}, false, skillfleetv1.Verdict_VERDICT_REUSED},
		{"3 runs all reused", 3, 0, Tally{Reused: 3}, false, skillfleetv1.Verdict_VERDICT_REUSED},
		{"2 reused 1 passed: the pass alone is not enough", 3, 0, Tally{Reused: 2, Passed: 1}, false, vSkipped},
		{"2 reused 1 failed", 3, 0, Tally{Reused: 2, Failed: 1}, false, vFailed},
		{"1 reused, 1 still running", 2, 0, Tally{Reused: 1}, false, vPending},
		{"2 reused 8 passed, 8 needed", 10, 0.8, Tally{Reused: 2, Passed: 8}, false, vPassed},

		// The brief's examples: runs 10, confidence 0.9, so 9 passes needed.
		{"9 passed 1 failed", 10, 0.9, Tally{Passed: 9, Failed: 1}, false, vPassed},
		{"8 passed 2 failed", 10, 0.9, Tally{Passed: 8, Failed: 2}, false, vFailed},
		{"8 passed 1 failed 1 errored: the errored one could have been the 9th", 10, 0.9, Tally{Passed: 8, Failed: 1, Errored: 1}, false, vErrored},
		{"7 passed 2 failed 1 errored: 8 at best", 10, 0.9, Tally{Passed: 7, Failed: 2, Errored: 1}, false, vFailed},
		{"9 passed 1 errored: threshold met by real passes", 10, 0.9, Tally{Passed: 9, Errored: 1}, false, vPassed},
		{"8 passed 1 failed 1 timed out", 10, 0.9, Tally{Passed: 8, Failed: 1, TimedOut: 1}, false, vTimedOut},
		{"errored outranks timed out", 10, 0.9, Tally{Passed: 7, Errored: 1, TimedOut: 2}, false, vErrored},
		{"timed out outranks skipped", 10, 0.9, Tally{Passed: 7, TimedOut: 1, Skipped: 2}, false, vTimedOut},
		{"8 passed 2 errored", 10, 0.9, Tally{Passed: 8, Errored: 2}, false, vErrored},
		{"0 passed 10 errored", 10, 0.9, Tally{Errored: 10}, false, vErrored},
		{"seed 004: 8 of 10 below 0.9", 10, 0.9, Tally{Passed: 8, Failed: 2}, false, vFailed},

		// Verdicts that are certain before every epoch is in.
		{"9 of 10 passed, 1 pending: already passed", 10, 0.9, Tally{Passed: 9}, false, vPassed},
		{"2 of 10 failed, 8 pending: already failed", 10, 0.9, Tally{Failed: 2}, false, vFailed},
		{"1 of 10 failed, 9 pending: still open", 10, 0.9, Tally{Failed: 1}, false, vPending},
		{"8 passed 1 failed, 1 pending", 10, 0.9, Tally{Passed: 8, Failed: 1}, false, vPending},
		{"8 passed 1 failed, 1 never ran", 10, 0.9, Tally{Passed: 8, Failed: 1}, true, vSkipped},
		{"8 passed 1 errored, 1 never ran", 10, 0.9, Tally{Passed: 8, Errored: 1}, true, vErrored},
		{"nothing ran at all", 10, 0.9, Tally{}, true, vSkipped},
		{"3 failed of 10 never passes at the end either", 10, 0.9, Tally{Passed: 5, Failed: 3}, true, vFailed},

		// Thresholds computed exactly.
		{"0.7 x 10: 7 passed", 10, 0.7, Tally{Passed: 7, Failed: 3}, false, vPassed},
		{"0.7 x 10: 6 passed", 10, 0.7, Tally{Passed: 6, Failed: 4}, false, vFailed},
		{"0.95 x 20: 19 passed", 20, 0.95, Tally{Passed: 19, Failed: 1}, false, vPassed},
		{"0.95 x 20: 18 passed", 20, 0.95, Tally{Passed: 18, Failed: 2}, false, vFailed},
		{"1/3 x 3: 1 passed", 3, 1.0 / 3, Tally{Passed: 1, Failed: 2}, false, vPassed},
		{"0.5 x 2: 1 passed", 2, 0.5, Tally{Passed: 1, Failed: 1}, false, vPassed},
		{"0.5 x 2: 0 passed 1 failed 1 errored", 2, 0.5, Tally{Failed: 1, Errored: 1}, false, vErrored},
		{"0.5 x 2: 2 failed", 2, 0.5, Tally{Failed: 2}, false, vFailed},
		{"0.5 x 3: 2 needed", 3, 0.5, Tally{Passed: 1, Failed: 2}, false, vFailed},

		// Defaults and odd values never loosen the bar.
		{"confidence unset means 1.0", 3, 0, Tally{Passed: 2, Failed: 1}, false, vFailed},
		{"confidence 1.0, all passed", 3, 1, Tally{Passed: 3}, false, vPassed},
		{"confidence above 1 is 1", 2, 1.5, Tally{Passed: 1, Failed: 1}, false, vFailed},
		{"negative confidence is 1", 2, -0.5, Tally{Passed: 1, Failed: 1}, false, vFailed},
		{"NaN confidence is 1", 2, math.NaN(), Tally{Passed: 1, Failed: 1}, false, vFailed},
		{"tiny confidence still needs one pass", 10, 0.01, Tally{Failed: 10}, false, vFailed},
		{"tiny confidence, one pass", 10, 0.01, Tally{Passed: 1, Failed: 9}, false, vPassed},
		{"runs 0 means 1", 0, 0, Tally{Passed: 1}, false, vPassed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Decide(tt.epochs, tt.conf, tt.tally, tt.final); got != tt.want {
				t.Errorf("Decide(%d, %v, %+v, final=%v) = %v, want %v", tt.epochs, tt.conf, tt.tally, tt.final, got, tt.want)
			}
		})
	}
}

func TestRequiredPasses(t *testing.T) {
	tests := []struct {
		epochs int
		conf   float64
		want   int
	}{
		{10, 0.9, 9}, {10, 0.7, 7}, {10, 0.75, 8}, {20, 0.95, 19}, {3, 1.0 / 3, 1}, {3, 2.0 / 3, 2},
		{100, 0.99, 99}, {7, 0.5, 4}, {5, 0.9, 5}, {1, 0, 1}, {10, 0, 10}, {10, 0.01, 1}, {0, 0.9, 1},
		{1_000_000, 0.999999, 999_999}, {10, 0.1, 1}, {10, 0.3, 3}, {10, 0.6, 6},
	}
	for _, tt := range tests {
		if got := RequiredPasses(tt.epochs, tt.conf); got != tt.want {
			t.Errorf("RequiredPasses(%d, %v) = %d, want %d", tt.epochs, tt.conf, got, tt.want)
		}
	}
}

// TestRequiredPassesExact checks the threshold against exact rational arithmetic for every
// confidence with three decimals and every runs up to 1000.
func TestRequiredPassesExact(t *testing.T) {
	for k := 1; k <= 1000; k++ {
		c := float64(k) / 1000
		for n := 1; n <= 1000; n++ {
			// smallest p with p/n >= k/1000, i.e. 1000p >= kn, and at least 1
			want := max((k*n+999)/1000, 1)
			if got := RequiredPasses(n, c); got != want {
				t.Fatalf("RequiredPasses(%d, %v) = %d, want %d", n, c, got, want)
			}
		}
	}
}

func TestWilson(t *testing.T) {
	tests := []struct {
		passed, n int
		want      [2]float64
	}{
		{8, 10, [2]float64{0.4902, 0.9433}},
		{9, 10, [2]float64{0.5958, 0.9821}},
		{10, 10, [2]float64{0.7225, 1}},
		{0, 10, [2]float64{0, 0.2775}},
		{1, 2, [2]float64{0.0945, 0.9055}},
		{50, 100, [2]float64{0.4038, 0.5962}},
	}
	for _, tt := range tests {
		if got := Wilson(tt.passed, tt.n); got != tt.want {
			t.Errorf("Wilson(%d, %d) = %v, want %v", tt.passed, tt.n, got, tt.want)
		}
	}
}
