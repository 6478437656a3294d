package verdict

import (
	"fmt"
	"testing"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// outcomes are every job verdict an epoch can report.
var outcomes = []pb.Verdict{
	pb.Verdict_VERDICT_PASSED, pb.Verdict_VERDICT_FAILED, pb.Verdict_VERDICT_ERRORED,
	pb.Verdict_VERDICT_TIMED_OUT, pb.Verdict_VERDICT_SKIPPED, pb.Verdict_VERDICT_REUSED,
}

func tallyOf(seq []pb.Verdict) Tally {
	var t Tally
	for _, v := range seq {
		t = t.Add(v)
	}
	return t
}

// sequences calls f with every sequence of n outcomes (6^n of them); f must not keep seq.
func sequences(n int, f func(seq []pb.Verdict)) {
	seq := make([]pb.Verdict, n)
	var rec func(i int)
	rec = func(i int) {
		if i == n {
			f(seq)
			return
		}
		for _, v := range outcomes {
			seq[i] = v
			rec(i + 1)
		}
	}
	rec(0)
}

// TestSettledAgainstEveryCompletion checks Settled by brute force: for every prefix of
// reported outcomes of runs of up to 6 epochs and every threshold, the verdicts Final gives
// over every completion of the remaining epochs are enumerated; Settled must name the verdict
// when they are all the same, and be unspecified when they are not.
func TestSettledAgainstEveryCompletion(t *testing.T) {
	for n := 1; n <= 6; n++ {
		for need := 1; need <= n; need++ {
			f := Fixed{Epochs: n, Need: need}
			for k := 0; k <= n; k++ {
				sequences(k, func(prefix []pb.Verdict) {
					seen := map[pb.Verdict]bool{}
					sequences(n-k, func(rest []pb.Verdict) {
						seen[f.Final(tallyOf(append(append([]pb.Verdict{}, prefix...), rest...)))] = true
					})
					want := pb.Verdict_VERDICT_UNSPECIFIED
					if len(seen) == 1 {
						for v := range seen {
							want = v
						}
					}
					if got := f.Settled(tallyOf(prefix)); got != want {
						t.Fatalf("runs %d, need %d, reported %v: Settled = %v, every completion gives %v", n, need, prefix, got, seen)
					}
				})
			}
		}
	}
}

// TestCurtailedRunGivesTheFullVerdict plays every outcome sequence of runs of up to 6 epochs
// the way the coordinator does: epochs are started as Dispatch says, results come back in the
// order the epochs started (and, a second time, newest first), and the case stops once
// settled. The verdict must be the one all epochs give, the run must never stall while the
// case is open, and no epoch may start once the case is settled.
func TestCurtailedRunGivesTheFullVerdict(t *testing.T) {
	for n := 1; n <= 6; n++ {
		for need := 1; need <= n; need++ {
			f := Fixed{Epochs: n, Need: need}
			for _, newestFirst := range []bool{false, true} {
				sequences(n, func(seq []pb.Verdict) {
					full := f.Final(tallyOf(seq))
					var reported []pb.Verdict
					started, inFlight := 0, 0
					for f.Settled(tallyOf(reported)) == pb.Verdict_VERDICT_UNSPECIFIED {
						d := f.Dispatch(tallyOf(reported), inFlight)
						started += d
						inFlight += d
						if inFlight == 0 {
							t.Fatalf("runs %d, need %d, %v: stalled open after %v", n, need, seq, reported)
						}
						// Epoch i's outcome is seq[i]; the in-flight ones are started-inFlight … started-1.
						next := started - inFlight
						if newestFirst {
							next = started - 1
							// The newest result arrives first: swap it into the reported order.
							reported = append(reported, seq[next])
							seq = swapDown(seq, next, started-inFlight)
						} else {
							reported = append(reported, seq[next])
						}
						inFlight--
					}
					if got := f.Settled(tallyOf(reported)); got != full {
						t.Fatalf("runs %d, need %d, %v: curtailed verdict %v after %v, all epochs give %v", n, need, seq, got, reported, full)
					}
					if d := f.Dispatch(tallyOf(reported), inFlight); d != 0 {
						t.Fatalf("runs %d, need %d, %v: settled, yet Dispatch = %d", n, need, seq, d)
					}
					if started > n {
						t.Fatalf("runs %d, need %d, %v: started %d epochs", n, need, seq, started)
					}
				})
			}
		}
	}
}

// swapDown returns seq with element i moved to position j ≤ i (the others shifted up), in a
// copy, so the epochs still in flight keep their outcomes in order.
func swapDown(seq []pb.Verdict, i, j int) []pb.Verdict {
	out := append([]pb.Verdict{}, seq...)
	v := out[i]
	copy(out[j+1:i+1], out[j:i])
	out[j] = v
	return out
}

// TestDispatch is worked by hand from the rule: start epochs until every one in flight
// passing would settle the case.
func TestDispatch(t *testing.T) {
	tests := []struct {
		runs, need int
		t          Tally
		inFlight   int
		want       int
	}{
		// runs: 5, confidence: 0.8 needs 4: four first …
		{5, 4, Tally{}, 0, 4},
		// … the fifth only after one of them did not pass …
		{5, 4, Tally{Failed: 1}, 3, 1},
		{5, 4, Tally{Errored: 1}, 3, 1},
		// … and none while all four may still pass, nor once two failed.
		{5, 4, Tally{Passed: 2}, 2, 0},
		{5, 4, Tally{Failed: 2}, 2, 0},
		// runs: 1: its one epoch.
		{1, 1, Tally{}, 0, 1},
		// runs: 10, confidence: 0.5 needs 5.
		{10, 5, Tally{}, 0, 5},
		{10, 5, Tally{Passed: 3, Failed: 2}, 0, 2},
		// confidence 1.0 (the default): every epoch must pass; all of them start.
		{3, 3, Tally{}, 0, 3},
		// Passing is out of reach (1 errored, 1 failed, need 4 of 5) but one more failure
		// fails it and none errors it: all three left start, and none beyond the plan.
		{5, 4, Tally{Errored: 1, Failed: 1}, 0, 3},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d/%d %+v in flight %d", tt.runs, tt.need, tt.t, tt.inFlight), func(t *testing.T) {
			if got := (Fixed{tt.runs, tt.need}).Dispatch(tt.t, tt.inFlight); got != tt.want {
				t.Fatalf("Dispatch = %d, want %d", got, tt.want)
			}
		})
	}
}
