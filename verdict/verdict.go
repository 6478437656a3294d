// Package verdict holds the job verdict rules, in one place for the worker that decides a job
// and the report that counts it: only assertions decide a pass, and when in doubt a job is
// errored, with the reason. Never a false pass.
package verdict

import (
	"fmt"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Of decides a job whose assertions were evaluated: errored if any could not be decided,
// failed if any failed, passed only if there is at least one and all passed. The reason says
// why a job is errored and is empty otherwise.
func Of(results []*pb.AssertionResult) (pb.Verdict, string) {
	failed := false
	for _, r := range results {
		if r.GetErrored() {
			return pb.Verdict_VERDICT_ERRORED, fmt.Sprintf("%s could not be decided: %s", r.GetType(), r.GetMessage())
		}
		if !r.GetPassed() {
			failed = true
		}
	}
	switch {
	case failed:
		return pb.Verdict_VERDICT_FAILED, ""
	case len(results) == 0:
		return pb.Verdict_VERDICT_ERRORED, "no assertion results"
	}
	return pb.Verdict_VERDICT_PASSED, ""
}

// Counted is the verdict a reported result counts with, and its reason. The worker's verdict
// is used, except that a pass its own assertion results do not back (see Of) is counted as
// errored, and so is a result without a known verdict: a report trusts no pass it cannot
// check.
func Counted(r *pb.Result) (pb.Verdict, string) {
	v := r.GetVerdict()
	switch v {
	case pb.Verdict_VERDICT_PASSED:
		if len(r.GetAssertions()) == 0 {
			return pb.Verdict_VERDICT_ERRORED,
				"the worker reported a pass without any assertion result; only assertions decide a pass"
		}
		for _, a := range r.GetAssertions() {
			if !a.GetPassed() || a.GetErrored() {
				return pb.Verdict_VERDICT_ERRORED,
					fmt.Sprintf("the worker reported a pass but assertion %q did not pass", a.GetType())
			}
		}
		return v, r.GetReason()
	case pb.Verdict_VERDICT_REUSED:
		// A reuse names the run it reuses and the digest it matched; the coordinator also
		// checks both against the reuse it offered the job. Assertion results would mean the
		// job ran, and a job that ran is not a reuse.
		if r.GetReusedFrom() == "" || r.GetCellDigest() == "" || len(r.GetAssertions()) > 0 {
			return pb.Verdict_VERDICT_ERRORED,
				"the worker reported a reuse without the run and cell digest it reuses, or with assertion results"
		}
		return v, r.GetReason()
	case pb.Verdict_VERDICT_FAILED, pb.Verdict_VERDICT_ERRORED,
		pb.Verdict_VERDICT_TIMED_OUT, pb.Verdict_VERDICT_SKIPPED:
		return v, r.GetReason()
	default:
		return pb.Verdict_VERDICT_ERRORED,
			fmt.Sprintf("the worker reported no usable verdict (%v)", v)
	}
}
