package assert

import (
	"context"
	"fmt"
	"strings"
)

// uninterruptedSteps is the matching work (output bytes times program instructions) below which
// evalMatches matches the string directly, tens of milliseconds at most: twice as fast as through
// a deadlineReader, which only a costly match needs.
const uninterruptedSteps = 1 << 25

// evalMatches decides output_matches: RE2 on the raw output, as the pattern is written. A costly
// match is fed the output through a deadlineReader, so it stops soon after ctx is done; a match
// that was stopped is errored, never passed or failed.
func evalMatches(ctx context.Context, a Assertion, obs Observation) Result {
	re := a.Regexp
	shown := "/" + clip(re.String(), maxQuoted) + "/"
	r := Result{Type: a.Type, Expected: "output matches " + shown}
	var loc []int
	in := &deadlineReader{ctx: ctx, s: strings.NewReader(obs.Output)}
	if a.insts > 0 && int64(len(obs.Output))*int64(a.insts) <= uninterruptedSteps {
		loc = re.FindStringIndex(obs.Output)
	} else {
		loc = re.FindReaderIndex(in)
	}
	if in.cut {
		r.Errored = true
		r.Message = fmt.Sprintf("output_matches %s was not decided: %v", shown, ErrDeadline)
		return r
	}
	if loc != nil {
		r.Passed = true
		r.Actual = excerpt(obs.Output, loc[0], loc[1])
		line, col := lineCol(obs.Output, loc[0])
		r.Message = fmt.Sprintf("output matches %s at line %d, column %d", shown, line, col)
		if loc[0] == loc[1] {
			r.Message += " (an empty match)"
		}
		return r
	}
	r.Actual = excerpt(obs.Output, 0, 0)
	var msg strings.Builder
	fmt.Fprintf(&msg, "output does not match %s", shown)
	if obs.Output == "" {
		msg.WriteString("; the output is empty")
	}
	if obs.OutputTruncated {
		msg.WriteString("; the output was truncated, so the part cut off was not checked")
	}
	r.Message = msg.String()
	return r
}
