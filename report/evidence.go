package report

import (
	"fmt"
	"strings"

	"github.com/skillfleet/skillfleet/internal/text"
	skillfleetv1 "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Caps on what a Builder keeps per case, so its memory stays bounded whatever workers send.
const (
	// maxExcerpt caps output, stdout and stderr (the worker caps them too, more generously).
	maxExcerpt = 2048
	// maxField caps each assertion field and reasons.
	maxField = 1024
	// maxAssertions caps the assertion results kept from one epoch.
	maxAssertions = 64
)

// evidence is what a case keeps of one epoch's result.
type evidence struct {
	epoch      int32
	verdict    skillfleetv1.Verdict
	assertions []Assertion
	reason     string
	output     string
	stdout     string
	stderr     string
	truncated  bool
}

// newEvidence copies (never aliases, so the Result can be collected) the capped parts of r.
// Passing epochs keep their assertions only: a report over thousands of passing cases stays
// small, and output is what one reads when a case did not pass.
func newEvidence(r *skillfleetv1.Result, v skillfleetv1.Verdict, reason string) *evidence {
	e := &evidence{epoch: r.GetEpoch(), verdict: v, assertions: assertionsOf(r.GetAssertions())}
	e.reason, _ = excerpt(reason, maxField)
	if v == skillfleetv1.Verdict_VERDICT_PASSED {
		return e
	}
	var t1, t2, t3 bool
	e.output, t1 = excerpt(r.GetOutput(), maxExcerpt)
	e.stdout, t2 = excerpt(r.GetStdout(), maxExcerpt)
	e.stderr, t3 = excerpt(r.GetStderr(), maxExcerpt)
	e.truncated = r.GetOutputTruncated() || t1 || t2 || t3
	return e
}

// assertionsOf converts and caps assertion results. When there are too many, the ones that
// did not pass are kept first: they are the ones a reader needs.
func assertionsOf(in []*skillfleetv1.AssertionResult) []Assertion {
	out := make([]Assertion, 0, min(len(in), maxAssertions))
	add := func(wantPassed bool) {
		for _, a := range in {
			ok := a.GetPassed() && !a.GetErrored()
			if len(out) == maxAssertions || (len(in) > maxAssertions && ok != wantPassed) {
				continue
			}
			out = append(out, Assertion{
				Type:     clip(a.GetType()),
				Passed:   ok,
				Expected: clip(a.GetExpected()),
				Actual:   clip(a.GetActual()),
				Message:  clip(a.GetMessage()),
				Path:     clip(a.GetPath()),
				Errored:  a.GetErrored(),
			})
		}
	}
	if len(in) <= maxAssertions {
		add(true) // every one fits, in order
		return out
	}
	add(false)
	add(true)
	return out
}

func clip(s string) string {
	out, _ := excerpt(s, maxField)
	return out
}

// excerpt returns a copy of s of about at most limit bytes: when s is longer, its head and
// tail (where a command's error usually is) around a marker saying how much was left out.
// Cuts fall on rune boundaries. It reports whether anything was left out. The copy keeps a
// report from holding on to a large result's buffer.
func excerpt(s string, limit int) (string, bool) {
	out, cut := text.HeadTail(s, limit, func(omitted int) string {
		return fmt.Sprintf("\n…[%d bytes omitted]…\n", omitted)
	})
	if !cut {
		out = strings.Clone(s)
	}
	return out, cut
}

// jobDurationMS is the time a job spent on a worker: sandbox start plus execution, so the
// time it waited in the queue does not count against the case. Results that only fill in
// total_ms fall back to it.
func jobDurationMS(t *skillfleetv1.Timings) int64 {
	if d := t.GetSandboxStartMs() + t.GetExecutionMs(); d > 0 {
		return d
	}
	return max(t.GetTotalMs(), 0)
}
