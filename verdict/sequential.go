package verdict

import (
	"math"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/stats"
)

// Sequential is the case rule of `runs: auto`: Wald's sequential test (stats.SPRT) read
// over the epochs in epoch order, at most MaxRuns of them. Only passes and failures are
// evidence; an errored, timed-out or skipped epoch is passed over (it says nothing of the
// pass rate) but spends one of the MaxRuns.
//
// The verdict is the test's at the first epoch where the evidence of epochs 1 … n crosses a
// boundary: passed or failed, whatever the later epochs are, so they need not run. A case
// whose MaxRuns epochs all reported without a crossing is undecided and gets the fixed rule's
// verdict over them (Fixed{MaxRuns, ceil(Confidence × MaxRuns)}), marked undecided.
//
// Reading the epochs in their order, not in the order results arrive, makes the verdict a
// function of the epochs' outcomes alone: the same with every epoch run as with the run cut
// short, whichever worker was quicker.
type Sequential struct {
	Test       stats.SPRT
	MaxRuns    int
	Confidence float64
}

// Decide is the verdict of a case whose epochs (epochs[i] is epoch i+1's verdict,
// VERDICT_UNSPECIFIED while it has none) are as given: the verdict and, for a case that
// reached MaxRuns without a crossing, undecided. ran is how many epochs the verdict rests on
// (the crossing's, or MaxRuns). While the epochs reported in order do not settle it, the
// verdict is VERDICT_UNSPECIFIED.
func (s Sequential) Decide(epochs []pb.Verdict) (v pb.Verdict, undecided bool, ran int) {
	passes, fails := 0, 0
	var t Tally
	for n := 1; n <= s.MaxRuns; n++ {
		if n > len(epochs) || epochs[n-1] == pb.Verdict_VERDICT_UNSPECIFIED {
			return pb.Verdict_VERDICT_UNSPECIFIED, false, 0
		}
		t = t.Add(epochs[n-1])
		switch epochs[n-1] {
		case pb.Verdict_VERDICT_PASSED:
			passes++
		case pb.Verdict_VERDICT_FAILED:
			fails++
		default:
			continue
		}
		switch s.Test.Decide(passes, fails) {
		case 1:
			return pb.Verdict_VERDICT_PASSED, false, n
		case -1:
			return pb.Verdict_VERDICT_FAILED, false, n
		}
	}
	need := max(1, int(math.Ceil(s.Confidence*float64(s.MaxRuns)-1e-9)))
	return Fixed{Epochs: s.MaxRuns, Need: need}.Final(t), true, s.MaxRuns
}

// Dispatch is how many more epochs to start, with epochs as in Decide and the first started
// of them started (those without a verdict are in flight): as many as, were every one in
// flight and every new one to pass, would take the evidence to the passing boundary, and
// none once the case is settled or MaxRuns are started.
func (s Sequential) Dispatch(epochs []pb.Verdict, started int) int {
	if v, _, _ := s.Decide(epochs); v != pb.Verdict_VERDICT_UNSPECIFIED {
		return 0
	}
	hyp := make([]pb.Verdict, s.MaxRuns)
	copy(hyp, epochs)
	for i := range started {
		if hyp[i] == pb.Verdict_VERDICT_UNSPECIFIED {
			hyp[i] = pb.Verdict_VERDICT_PASSED
		}
	}
	for k := 0; started+k < s.MaxRuns; k++ {
		if v, _, _ := s.Decide(hyp[:started+k]); v != pb.Verdict_VERDICT_UNSPECIFIED {
			return k
		}
		hyp[started+k] = pb.Verdict_VERDICT_PASSED
	}
	return s.MaxRuns - started
}
