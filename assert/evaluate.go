package assert

import (
	"context"
	"errors"
	"fmt"
)

// Observation is what a job produced.
type Observation struct {
	// Output is a prompt case's final agent output.
	Output string
	// Stdout, Stderr and ExitCode are what a command case's command produced.
	Stdout   string
	Stderr   string
	ExitCode int
	// OutputTruncated says the worker capped the output: a passing *_not_contains, and every
	// failing text assertion, say in their message that the part cut off was not checked.
	OutputTruncated bool
	// Trajectory is what a prompt case's agent did, for the trajectory assertions; nil when
	// nothing was recorded, which errors them.
	Trajectory *Trajectory
	// Files is the state of the files the case's file assertions name, keyed by their cleaned
	// Path; nil when the worker gathered none, which errors those assertions.
	Files map[string]File
}

// Result is the outcome of one assertion; it maps onto proto AssertionResult field for field.
type Result struct {
	Type   Type `json:"type"`
	Passed bool `json:"passed"`
	// Expected is what was asked, in words.
	Expected string `json:"expected"`
	// Actual is an excerpt of the actual value around the decisive spot (the match, the first
	// difference, or the start when nothing was found): at most 240 displayed runes, valid UTF-8,
	// control characters escaped, "…" where text was left out.
	Actual string `json:"actual"`
	// Message is a sentence a person understands.
	Message string `json:"message"`
	// Path is, for stdout_json, the JSON path of the first difference.
	Path string `json:"path,omitempty"`
	// Errored says the assertion was not decided (it does not compile, or it awaits the
	// judge). An errored Result never counts as passed.
	Errored bool `json:"errored,omitempty"`
}

// judgePending is the Message of a semantic_match placeholder.
const judgePending = "semantic_match is evaluated by the judge"

// Evaluate decides one deterministic assertion against obs. For semantic_match it returns
// ErrNeedsJudge and an errored placeholder Result: callers route it to the judge. For an
// assertion that does not compile (Evaluate compiles a copy when the caller has not) it returns
// an error wrapping ErrInvalid and an errored Result saying why. A nil error means the Result is
// a verdict.
func Evaluate(a Assertion, obs Observation) (Result, error) {
	return evaluate(context.Background(), a, obs, newTexts())
}

// evaluate is Evaluate within ctx, with the prepared streams shared among a case's assertions.
// Once ctx is done it decides nothing more: the Result is errored and the error wraps
// ErrDeadline.
func evaluate(ctx context.Context, a Assertion, obs Observation, ts *texts) (Result, error) {
	if a.Type == SemanticMatch {
		return Result{Type: a.Type, Expected: clip(a.Value, maxExcerpt), Message: judgePending, Errored: true}, ErrNeedsJudge
	}
	if ctx.Err() != nil {
		return Result{Type: a.Type, Message: fmt.Sprintf("%s was not decided: %v", a.Type, ErrDeadline), Errored: true}, ErrDeadline
	}
	// An output_matches compiled already is not compiled again: plans carry many.
	if a.Type != OutputMatches || a.Regexp == nil {
		if err := Compile(&a); err != nil {
			return Result{Type: a.Type, Message: "invalid " + clip(string(a.Type), 40) + " assertion: " + err.Error(), Errored: true}, err
		}
	}
	switch a.Type {
	case OutputContains, OutputNotContains, StdoutContains, StderrContains, NotContains:
		return evalContains(a, obs, ts), nil
	case OutputMatches:
		r := evalMatches(ctx, a, obs)
		if r.Errored {
			return r, ErrDeadline
		}
		return r, nil
	case ExitCode:
		return evalExitCode(a, obs), nil
	case StdoutJSON:
		return evalJSON(a, obs), nil
	}
	if a.Type.isFile() {
		r := evalFile(ctx, a, obs)
		if r.Errored && ctx.Err() != nil {
			return r, ErrDeadline
		}
		return r, nil
	}
	if a.Type.isTrajectory() {
		r := evalTrajectory(ctx, a, obs)
		if r.Errored && ctx.Err() != nil {
			return r, ErrDeadline
		}
		return r, nil
	}
	// Compile rejects unknown types; this keeps a new type from passing by omission.
	err := invalid("unknown assertion type %q", string(a.Type))
	return Result{Type: a.Type, Message: err.Error(), Errored: true}, err
}

// EvaluateAll decides every deterministic assertion of a case. results[i] belongs to as[i].
// pending lists the indexes of the semantic_match assertions: their results are errored
// placeholders until the caller puts the judge's result in their place, so forgetting to do that
// can never make a case pass. An assertion that does not compile gets an errored Result.
func EvaluateAll(as []Assertion, obs Observation) (results []Result, pending []int) {
	return EvaluateAllContext(context.Background(), as, obs)
}

// EvaluateAllContext is EvaluateAll within ctx, whose deadline is the job's: an assertion not
// decided when ctx is done (output_matches stops mid-match) gets an errored Result saying so.
// The substring and JSON assertions cost time linear in the output and are not interrupted.
func EvaluateAllContext(ctx context.Context, as []Assertion, obs Observation) (results []Result, pending []int) {
	results = make([]Result, len(as))
	ts := newTexts()
	for i, a := range as {
		r, err := evaluate(ctx, a, obs, ts)
		results[i] = r
		if errors.Is(err, ErrNeedsJudge) {
			pending = append(pending, i)
		}
	}
	return results, pending
}

// AllPassed reports whether results make a passing case: at least one result, every one passed
// and none errored.
func AllPassed(results []Result) bool {
	for _, r := range results {
		if !r.Passed || r.Errored {
			return false
		}
	}
	return len(results) > 0
}
