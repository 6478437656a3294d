package verdict

import (
	"testing"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/stats"
)

func mustSPRT(t *testing.T, c, d, a, b float64) stats.SPRT {
	t.Helper()
	s, err := stats.NewSPRT(c, d, a, b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSequentialWorked is worked by hand from the SPRT's log-likelihood ratio. With
// confidence 0.8 ± 0.1 and α = β = 0.05, a pass adds ln(0.9/0.7) = 0.2513, a failure
// ln(0.1/0.3) = −1.0986, and the boundaries are ±ln(19) = ±2.9444: twelve passes pass a case
// (3.016; eleven make 2.765), three failures fail it (−3.296), and an errored epoch is no
// evidence either way.
func TestSequentialWorked(t *testing.T) {
	s := Sequential{Test: mustSPRT(t, 0.8, 0.1, 0.05, 0.05), MaxRuns: 20, Confidence: 0.8}
	P, F, E := pb.Verdict_VERDICT_PASSED, pb.Verdict_VERDICT_FAILED, pb.Verdict_VERDICT_ERRORED
	rep := func(v pb.Verdict, n int) []pb.Verdict {
		out := make([]pb.Verdict, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	tests := []struct {
		name      string
		epochs    []pb.Verdict
		want      pb.Verdict
		undecided bool
		ran       int
	}{
		{"eleven passes: open", rep(P, 11), pb.Verdict_VERDICT_UNSPECIFIED, false, 0},
		{"twelve passes", rep(P, 12), pb.Verdict_VERDICT_PASSED, false, 12},
		{"an error is no evidence", append(rep(P, 6), append([]pb.Verdict{E}, rep(P, 6)...)...), pb.Verdict_VERDICT_PASSED, false, 13},
		{"three failures", rep(F, 3), pb.Verdict_VERDICT_FAILED, false, 3},
		// 1 failure and 15 passes: 15 × 0.2513 − 1.0986 = 2.671, open; the 16th pass makes 2.922,
		// still open; the 17th 3.174.
		{"one failure costs about four passes", append([]pb.Verdict{F}, rep(P, 17)...), pb.Verdict_VERDICT_PASSED, false, 18},
		{"a gap holds the verdict", append(append(rep(P, 5), pb.Verdict_VERDICT_UNSPECIFIED), rep(P, 10)...), pb.Verdict_VERDICT_UNSPECIFIED, false, 0},
		// 2 failures and 18 passes in 20: 18 × 0.2513 − 2 × 1.0986 = 2.326, never crossed
		// (nor on the way); the fixed rule over 20 needs 16: passed, undecided.
		{"undecided, fixed rule passes", append(rep(F, 2), rep(P, 18)...), pb.Verdict_VERDICT_PASSED, true, 20},
		// 20 epochs of 2 failures, 12 passes and 6 errors never cross; 12 < 16 and 6 errors:
		// errored, undecided.
		{"undecided, fixed rule errored", append(append(rep(F, 2), rep(E, 6)...), rep(P, 12)...), pb.Verdict_VERDICT_ERRORED, true, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, und, ran := s.Decide(tt.epochs)
			if v != tt.want || und != tt.undecided || ran != tt.ran {
				t.Fatalf("Decide = %v, undecided %v, %d epochs; want %v, %v, %d", v, und, ran, tt.want, tt.undecided, tt.ran)
			}
		})
	}
	if d := s.Dispatch(nil, 0); d != 12 {
		t.Errorf("Dispatch before any epoch = %d, want the 12 passes that could pass it", d)
	}
	// A first epoch failed, eleven in flight: passing now takes seventeen passes after the
	// failure, epochs 2 to 18, so six more start (13 to 18).
	if d := s.Dispatch(append([]pb.Verdict{F}, make([]pb.Verdict, 11)...), 12); d != 6 {
		t.Errorf("Dispatch after a failure with 11 in flight = %d, want 6", d)
	}
}

// TestSequentialCurtailedGivesTheFullVerdict plays every sequence of passes, failures and
// errors of up to 7 epochs (a zone wide enough for the test to cross within them) the way
// the coordinator would: epochs started as Dispatch says, results arriving oldest or newest
// first, stopping once Decide settles. The verdict must be the one of all the epochs, the
// case must never stall open, and never start more than MaxRuns epochs.
func TestSequentialCurtailedGivesTheFullVerdict(t *testing.T) {
	outcomes := []pb.Verdict{pb.Verdict_VERDICT_PASSED, pb.Verdict_VERDICT_FAILED, pb.Verdict_VERDICT_ERRORED}
	for _, s := range []Sequential{
		{Test: mustSPRT(t, 0.5, 0.3, 0.1, 0.1), MaxRuns: 7, Confidence: 0.5},
		{Test: mustSPRT(t, 0.7, 0.15, 0.1, 0.05), MaxRuns: 7, Confidence: 0.7},
	} {
		seq := make([]pb.Verdict, s.MaxRuns)
		var rec func(i int)
		rec = func(i int) {
			if i < s.MaxRuns {
				for _, v := range outcomes {
					seq[i] = v
					rec(i + 1)
				}
				return
			}
			want, wantUnd, _ := s.Decide(seq)
			for _, newestFirst := range []bool{false, true} {
				got := make([]pb.Verdict, s.MaxRuns)
				started := 0
				var inFlight []int
				for {
					v, und, _ := s.Decide(got)
					if v != pb.Verdict_VERDICT_UNSPECIFIED {
						if v != want || und != wantUnd {
							t.Fatalf("%+v %v: curtailed %v (undecided %v), all epochs %v (%v)", s, seq, v, und, want, wantUnd)
						}
						if d := s.Dispatch(got, started); d != 0 {
							t.Fatalf("%+v %v: settled, yet Dispatch = %d", s, seq, d)
						}
						break
					}
					d := s.Dispatch(got, started)
					for range d {
						inFlight = append(inFlight, started)
						started++
					}
					if len(inFlight) == 0 || started > s.MaxRuns {
						t.Fatalf("%+v %v: open after %v with %d in flight, %d started", s, seq, got, len(inFlight), started)
					}
					k := 0
					if newestFirst {
						k = len(inFlight) - 1
					}
					e := inFlight[k]
					inFlight = append(inFlight[:k], inFlight[k+1:]...)
					got[e] = seq[e]
				}
			}
		}
		rec(0)
	}
}
