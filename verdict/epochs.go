package verdict

import (
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Tally counts a case's epochs by job verdict. Epochs without a result are not in it.
type Tally struct {
	Passed, Failed, Errored, TimedOut, Skipped int
	// Reused epochs were not run: a changed-only run reused a recent pass of the same digest.
	Reused int
}

// Add is t with one more epoch's verdict counted; VERDICT_UNSPECIFIED (no result yet) is not
// counted, and a verdict of no other kind counts as skipped.
func (t Tally) Add(v pb.Verdict) Tally {
	switch v {
	case pb.Verdict_VERDICT_UNSPECIFIED:
	case pb.Verdict_VERDICT_PASSED:
		t.Passed++
	case pb.Verdict_VERDICT_FAILED:
		t.Failed++
	case pb.Verdict_VERDICT_ERRORED:
		t.Errored++
	case pb.Verdict_VERDICT_TIMED_OUT:
		t.TimedOut++
	case pb.Verdict_VERDICT_REUSED:
		t.Reused++
	default:
		t.Skipped++
	}
	return t
}

// Reported is how many epochs have a result.
func (t Tally) Reported() int {
	return t.Passed + t.Failed + t.Errored + t.TimedOut + t.Skipped + t.Reused
}

// Fixed is the case rule of a fixed number of epochs: Epochs epochs, of which Need must pass
// (`runs` and ceil(confidence × runs); see report.RequiredPasses). Epochs and Need are at
// least 1 and Need ≤ Epochs.
type Fixed struct{ Epochs, Need int }

// Final is the case verdict once every epoch has a result (t.Reported() == Epochs; epochs
// without one, when the run ended early, are counted as skipped by the caller):
//
//   - reused when every epoch was reused;
//   - passed when at least Need passed;
//   - failed when more than Epochs − Need failed: even had every other epoch passed, the
//     threshold could not be met, so the assertion failures alone decide it;
//   - otherwise the epochs that errored, timed out or were skipped could have met the
//     threshold, so the case is not a plain fail: errored if any epoch errored, else
//     timed_out if any timed out, else skipped.
//
// Reused epochs that are not all of them weigh like skipped ones. It never returns passed
// unless enough epochs really passed.
func (f Fixed) Final(t Tally) pb.Verdict {
	switch {
	case t.Reused == f.Epochs:
		return pb.Verdict_VERDICT_REUSED
	case t.Passed >= f.Need:
		return pb.Verdict_VERDICT_PASSED
	case t.Failed > f.Epochs-f.Need:
		return pb.Verdict_VERDICT_FAILED
	case t.Errored > 0:
		return pb.Verdict_VERDICT_ERRORED
	case t.TimedOut > 0:
		return pb.Verdict_VERDICT_TIMED_OUT
	default:
		return pb.Verdict_VERDICT_SKIPPED
	}
}

// Settled is the verdict Final will give whatever the epochs without a result turn out to be,
// or VERDICT_UNSPECIFIED while two of their outcomes could still give different verdicts.
// Once it is settled the remaining epochs cannot change the case and need not run
// (curtailment): the verdict is exactly the one all the epochs would have given.
//
// A remaining epoch may end in any job verdict. Final reaches a verdict v for some completion
// of the r remaining epochs exactly when (each by giving all r epochs one verdict, the most
// favourable to v):
//
//   - reused: every reported epoch was reused;
//   - passed: Passed + r ≥ Need (all r pass);
//   - failed: Passed < Need and Failed + r > Epochs − Need (all r fail);
//   - errored: Passed < Need, Failed ≤ Epochs − Need and some epoch errored or can (r > 0);
//   - timed_out: as errored, but none errored, and some timed out or can;
//   - skipped: as timed_out, but none timed out, and not every epoch reused (some reported
//     epoch is not, or r > 0 lets one be skipped).
//
// It is settled when exactly one is reachable. TestSettledAgainstEveryCompletion checks this
// against Final over every completion.
func (f Fixed) Settled(t Tally) pb.Verdict {
	r := f.Epochs - t.Reported()
	if r <= 0 {
		return f.Final(t)
	}
	reachable := 0
	var last pb.Verdict
	reach := func(ok bool, v pb.Verdict) {
		if ok {
			reachable++
			last = v
		}
	}
	undecided := t.Passed < f.Need && t.Failed <= f.Epochs-f.Need
	reach(t.Reported() == t.Reused, pb.Verdict_VERDICT_REUSED)
	reach(t.Passed+r >= f.Need, pb.Verdict_VERDICT_PASSED)
	reach(t.Passed < f.Need && t.Failed+r > f.Epochs-f.Need, pb.Verdict_VERDICT_FAILED)
	reach(undecided, pb.Verdict_VERDICT_ERRORED) // r > 0: one can error
	reach(undecided && t.Errored == 0, pb.Verdict_VERDICT_TIMED_OUT)
	reach(undecided && t.Errored == 0 && t.TimedOut == 0, pb.Verdict_VERDICT_SKIPPED)
	if reachable == 1 {
		return last
	}
	return pb.Verdict_VERDICT_UNSPECIFIED
}

// Dispatch is how many more of a case's epochs to start now, with inFlight of them started
// and without a result and t reported: only as many as can still matter. Epochs are started
// until, were every one in flight to pass, the case would be settled; the next one waits for
// a result that leaves it open. So with runs: 5 and confidence: 0.8, four start at once and
// the fifth only once one of them did not pass: a case that passes costs four epochs, never
// five. None start once the case is settled, nor beyond the epochs planned.
//
// Assuming passes is the choice of a fleet whose cases mostly pass: a passing case then
// starts no epoch it does not need, and a failing one is held back by a result at worst
// once per epoch it did not pass.
func (f Fixed) Dispatch(t Tally, inFlight int) int {
	left := f.Epochs - t.Reported() - inFlight
	if left <= 0 || f.Settled(t) != pb.Verdict_VERDICT_UNSPECIFIED {
		return 0
	}
	hyp := t
	hyp.Passed += inFlight
	for k := 0; k < left; k++ {
		if f.Settled(hyp) != pb.Verdict_VERDICT_UNSPECIFIED {
			return k
		}
		hyp.Passed++
	}
	return left
}
