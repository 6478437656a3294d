package assert

import (
	"context"
	"fmt"
	"strings"
)

// evalMatches decides output_matches: RE2 on the raw output, as the pattern is written. The
// output is fed through a deadlineReader, so matching stops soon after ctx is done; a match
// that was stopped is errored, never passed or failed.
func evalMatches(ctx context.Context, a Assertion, obs Observation) Result {
	re := a.Regexp
	shown := "/" + clip(re.String(), maxQuoted) + "/"
	r := Result{Type: a.Type, Expected: "output matches " + shown}
	in := &deadlineReader{ctx: ctx, s: strings.NewReader(obs.Output)}
	loc := re.FindReaderIndex(in)
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
