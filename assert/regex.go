package assert

import (
	"fmt"
	"strings"
)

// evalMatches decides output_matches: RE2 on the raw output, as the pattern is written.
func evalMatches(a Assertion, obs Observation) Result {
	re := a.Regexp
	shown := "/" + clip(re.String(), maxQuoted) + "/"
	r := Result{Type: a.Type, Expected: "output matches " + shown}
	loc := re.FindStringIndex(obs.Output)
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
