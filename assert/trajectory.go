package assert

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Trajectory is what a prompt case's agent did, as far as the trajectory assertions look.
type Trajectory struct {
	// Activated are the skills whose SKILL.md entered the model's context, in order, once each.
	Activated []Activation
	// ToolCalls are every tool call the model asked for, in order, refused and failed ones
	// included: the model chose to make them.
	ToolCalls []ToolCall
	// Turns is how many times the agent called the model.
	Turns int
	// Tokens is the agent's prompt plus completion tokens; the judge's are not included.
	Tokens int64
	// ToolsSeen says ToolCalls is complete: the agent ran every call itself, or the model
	// gateway saw one whole conversation of an agent CLI. Without it every tool assertion is
	// errored: a partial list would pass tool_not_called without evidence.
	ToolsSeen bool
	// ActivationsSeen says Activated is complete: everything that entered the model's context
	// was scanned for the skills' bodies (the built-in agent's tool results, or an agent CLI's
	// requests at the model gateway). Without it the skill assertions are errored.
	ActivationsSeen bool
}

// Activation is one skill entering the model's context.
type Activation struct {
	Skill string
	// Turn is the model call (from 1) that first had the skill's body in its context; 0 when
	// unknown.
	Turn int
}

// ToolCall is one tool call the model asked for.
type ToolCall struct {
	Name string
	// Arguments is the call's raw JSON arguments, as the agent recorded them.
	Arguments string
}

// isTrajectory reports whether t is decided against Observation.Trajectory.
func (t Type) isTrajectory() bool {
	switch t {
	case SkillActivated, SkillNotActivated, ToolCalled, ToolNotCalled, ToolOrder, MaxTurns, MaxToolCalls, MaxTokens:
		return true
	}
	return false
}

// needsToolsSeen reports whether t reads the tool calls.
func (t Type) needsToolsSeen() bool {
	return t == ToolCalled || t == ToolNotCalled || t == ToolOrder || t == MaxToolCalls
}

// needsActivationsSeen reports whether t reads the activations.
func (t Type) needsActivationsSeen() bool {
	return t == SkillActivated || t == SkillNotActivated
}

// checkName checks a skill or tool name.
func checkName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return invalid("the name is empty")
	case len(name) > MaxNameBytes:
		return tooLarge(fmt.Sprintf("the name is %d bytes, more than %d", len(name), MaxNameBytes))
	case !utf8.ValidString(name):
		return invalid("the name %q is not valid UTF-8", name)
	case strings.TrimSpace(name) != name:
		return invalid("the name %q has leading or trailing spaces", name)
	}
	return nil
}

func compileToolCalled(a *Assertion, compilePattern patternCompiler) error {
	if err := checkName(a.Value); err != nil {
		return err
	}
	switch {
	case a.Min < 0:
		return invalid("min %d is negative", a.Min)
	case a.MaxSet && a.Max < 0:
		return invalid("max %d is negative", a.Max)
	case a.MaxSet && a.Max < int64(a.Min):
		return invalid("min %d is more than max %d: no number of calls can pass", a.Min, a.Max)
	case !a.MaxSet && a.Min == 0:
		return invalid("min 0 without a max accepts any number of calls: the assertion can never fail")
	}
	if a.ArgsMatch == "" {
		a.Regexp = nil
		return nil
	}
	if a.Regexp != nil && a.Regexp.String() == a.ArgsMatch {
		return nil // compiled already, by the planner's or the worker's Compile
	}
	re, n, err := compilePattern(a.ArgsMatch)
	if err != nil {
		return err
	}
	a.Regexp, a.insts = re, int32(n)
	return nil
}

func checkOrder(names []string) error {
	if len(names) < 2 {
		return invalid("at least two tool names are needed, got %d", len(names))
	}
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if err := checkName(n); err != nil {
			return err
		}
		if seen[n] {
			return invalid("tool %q is listed twice: only first calls are ordered", n)
		}
		seen[n] = true
	}
	return nil
}

func checkLimit(t Type, n int64) error {
	switch {
	case n < 0:
		return invalid("the limit %d is negative", n)
	case n == 0 && t == MaxTurns:
		return invalid("a limit of 0 turns can never pass: an answer takes at least one turn")
	case n == 0 && t == MaxTokens:
		return invalid("a limit of 0 tokens can never pass: an answer takes tokens")
	}
	return nil
}

// evalTrajectory decides a trajectory assertion. ctx stops a tool_called pattern between calls.
func evalTrajectory(ctx context.Context, a Assertion, obs Observation) Result {
	tr := obs.Trajectory
	if tr == nil {
		return Result{Type: a.Type, Errored: true,
			Message: fmt.Sprintf("%s was not decided: no trajectory was recorded for this job", a.Type)}
	}
	if a.Type.needsToolsSeen() && !tr.ToolsSeen {
		return Result{Type: a.Type, Errored: true,
			Message: fmt.Sprintf("%s was not decided: the agent runs its tools itself and does not report its tool calls", a.Type)}
	}
	if a.Type.needsActivationsSeen() && !tr.ActivationsSeen {
		return Result{Type: a.Type, Errored: true,
			Message: fmt.Sprintf("%s was not decided: nothing watched what entered the agent's context, so its skill activations are unknown", a.Type)}
	}
	switch a.Type {
	case SkillActivated, SkillNotActivated:
		return evalActivated(a, tr)
	case ToolCalled:
		return evalToolCalled(ctx, a, tr)
	case ToolNotCalled:
		return evalToolNotCalled(a, tr)
	case ToolOrder:
		return evalToolOrder(a, tr)
	}
	return evalLimit(a, tr)
}

func evalActivated(a Assertion, tr *Trajectory) Result {
	want := a.Type == SkillActivated
	r := Result{Type: a.Type, Expected: clip(fmt.Sprintf("skill %s is activated", quote(a.Value)), maxExcerpt),
		Actual: clip(activations(tr.Activated), maxExcerpt)}
	if !want {
		r.Expected = clip(fmt.Sprintf("skill %s is not activated", quote(a.Value)), maxExcerpt)
	}
	found := -1
	for i, act := range tr.Activated {
		if act.Skill == a.Value {
			found = i
			break
		}
	}
	r.Passed = (found >= 0) == want
	if found >= 0 {
		r.Message = fmt.Sprintf("skill %s was activated%s", quote(a.Value), atTurn(tr.Activated[found].Turn))
		return r
	}
	r.Message = fmt.Sprintf("skill %s was not activated", quote(a.Value))
	if len(tr.Activated) == 0 {
		r.Message += "; no skill was activated"
	} else {
		r.Message += "; activated: " + clip(activations(tr.Activated), maxExcerpt)
	}
	return r
}

func evalToolCalled(ctx context.Context, a Assertion, tr *Trajectory) Result {
	r := Result{Type: a.Type, Expected: clip(fmt.Sprintf("tool %s is called %s%s", quote(a.Value), bounds(a), matching(a)), maxExcerpt)}
	count, firstMatch, firstOfName := 0, -1, -1
	for i, c := range tr.ToolCalls {
		if c.Name != a.Value {
			continue
		}
		if firstOfName < 0 {
			firstOfName = i
		}
		if a.Regexp != nil {
			if i%64 == 63 && ctx.Err() != nil {
				r.Errored = true
				r.Message = fmt.Sprintf("tool_called %s was not decided: %v", quote(a.Value), ErrDeadline)
				return r
			}
			if !a.Regexp.MatchString(c.Arguments) {
				continue
			}
		}
		if firstMatch < 0 {
			firstMatch = i
		}
		count++
	}
	r.Passed = count >= a.Min && (!a.MaxSet || int64(count) <= a.Max)
	var msg strings.Builder
	fmt.Fprintf(&msg, "tool %s was called %s", quote(a.Value), times(count))
	if a.Regexp != nil {
		fmt.Fprintf(&msg, " whose arguments match /%s/", clip(a.ArgsMatch, maxQuoted))
	}
	switch {
	case firstMatch >= 0:
		fmt.Fprintf(&msg, ", first at call %d of %d", firstMatch+1, len(tr.ToolCalls))
		r.Actual = clip(tr.ToolCalls[firstMatch].Arguments, maxExcerpt)
	case firstOfName >= 0:
		// Calls of the tool whose arguments did not match: show what the first one asked.
		r.Actual = clip(tr.ToolCalls[firstOfName].Arguments, maxExcerpt)
	default:
		r.Actual = clip(callSummary(tr.ToolCalls), maxExcerpt)
	}
	if !r.Passed {
		fmt.Fprintf(&msg, "; want %s", bounds(a))
	}
	fmt.Fprintf(&msg, "; calls: %s", clip(callSummary(tr.ToolCalls), maxExcerpt))
	r.Message = msg.String()
	return r
}

func evalToolNotCalled(a Assertion, tr *Trajectory) Result {
	r := Result{Type: a.Type, Expected: clip(fmt.Sprintf("tool %s is not called", quote(a.Value)), maxExcerpt)}
	count, first := 0, -1
	for i, c := range tr.ToolCalls {
		if c.Name == a.Value {
			if first < 0 {
				first = i
			}
			count++
		}
	}
	r.Passed = count == 0
	summary := clip(callSummary(tr.ToolCalls), maxExcerpt)
	if r.Passed {
		r.Actual = summary
		r.Message = fmt.Sprintf("tool %s was not called; calls: %s", quote(a.Value), summary)
		return r
	}
	r.Actual = clip(tr.ToolCalls[first].Arguments, maxExcerpt)
	r.Message = fmt.Sprintf("tool %s was called %s, first at call %d of %d; calls: %s",
		quote(a.Value), times(count), first+1, len(tr.ToolCalls), summary)
	return r
}

func evalToolOrder(a Assertion, tr *Trajectory) Result {
	quoted := make([]string, len(a.Names))
	for i, n := range a.Names {
		quoted[i] = quote(n)
	}
	r := Result{Type: a.Type, Expected: clip("first calls in order: "+strings.Join(quoted, " before "), maxExcerpt)}
	summary := clip(callSummary(tr.ToolCalls), maxExcerpt)
	r.Actual = summary
	first := make(map[string]int, len(a.Names))
	for i, c := range tr.ToolCalls {
		if _, ok := first[c.Name]; !ok {
			first[c.Name] = i
		}
	}
	for _, n := range a.Names {
		if _, ok := first[n]; !ok {
			r.Message = fmt.Sprintf("tool %s was never called; calls: %s", quote(n), summary)
			return r
		}
	}
	at := make([]string, len(a.Names))
	for i, n := range a.Names {
		at[i] = fmt.Sprintf("%s (call %d)", quote(n), first[n]+1)
		if i > 0 && first[n] < first[a.Names[i-1]] {
			prev := a.Names[i-1]
			r.Message = fmt.Sprintf("the first call of %s (call %d) comes before the first call of %s (call %d); calls: %s",
				quote(n), first[n]+1, quote(prev), first[prev]+1, summary)
			return r
		}
	}
	r.Passed = true
	r.Message = "first calls in order: " + strings.Join(at, ", ")
	return r
}

func evalLimit(a Assertion, tr *Trajectory) Result {
	var n int64
	var unit, did string
	switch a.Type {
	case MaxTurns:
		n, unit, did = int64(tr.Turns), "turn", "took"
	case MaxToolCalls:
		n, unit, did = int64(len(tr.ToolCalls)), "tool call", "made"
	default:
		n, unit, did = tr.Tokens, "token", "used"
	}
	r := Result{Type: a.Type, Expected: fmt.Sprintf("at most %s", plural(a.Max, unit)), Actual: plural(n, unit), Passed: n <= a.Max}
	if r.Passed {
		r.Message = fmt.Sprintf("the agent %s %s, at most %d", did, plural(n, unit), a.Max)
	} else {
		r.Message = fmt.Sprintf("the agent %s %s, more than %d", did, plural(n, unit), a.Max)
	}
	if a.Type == MaxToolCalls && len(tr.ToolCalls) > 0 {
		r.Message += "; calls: " + clip(callSummary(tr.ToolCalls), maxExcerpt)
	}
	return r
}

// bounds says what tool_called's count must be, in words.
func bounds(a Assertion) string {
	switch {
	case !a.MaxSet:
		return "at least " + times(a.Min)
	case a.Max == 0:
		return "never"
	case int64(a.Min) == a.Max:
		return "exactly " + times(a.Min)
	case a.Min == 0:
		return "at most " + plural(a.Max, "time")
	}
	return fmt.Sprintf("between %d and %d times", a.Min, a.Max)
}

func matching(a Assertion) string {
	if a.ArgsMatch == "" {
		return ""
	}
	return fmt.Sprintf(" with arguments matching /%s/", clip(a.ArgsMatch, maxQuoted))
}

func times(n int) string { return plural(int64(n), "time") }

func plural(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

func atTurn(turn int) string {
	if turn <= 0 {
		return ""
	}
	return fmt.Sprintf(" at turn %d", turn)
}

// activations lists activated skills with their turns: "deploy (turn 1), lint (turn 3)".
func activations(as []Activation) string {
	if len(as) == 0 {
		return "none"
	}
	parts := make([]string, len(as))
	for i, act := range as {
		parts[i] = act.Skill
		if act.Turn > 0 {
			parts[i] += fmt.Sprintf(" (turn %d)", act.Turn)
		}
	}
	return strings.Join(parts, ", ")
}

// callSummary counts calls per tool in the order of each tool's first call:
// "read_file×3, bash×1".
func callSummary(calls []ToolCall) string {
	if len(calls) == 0 {
		return "none"
	}
	counts := map[string]int{}
	var order []string
	for _, c := range calls {
		if counts[c.Name] == 0 {
			order = append(order, c.Name)
		}
		counts[c.Name]++
	}
	parts := make([]string, len(order))
	for i, n := range order {
		parts[i] = fmt.Sprintf("%s×%d", n, counts[n])
	}
	return strings.Join(parts, ", ")
}
