package assert

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// altDotStar is an alternation of n branches that each start with .*, so that on output
// without a match every branch stays alive at every position: the costly shape.
func altDotStar(n int) string {
	b := make([]string, n)
	for i := range b {
		b[i] = fmt.Sprintf(".*b%d", i)
	}
	return "(?:" + strings.Join(b, "|") + ")"
}

// optChain is n optional runes and a rune the output lacks: 2n+3 instructions, all alive.
func optChain(n int) string { return strings.Repeat("a?", n) + "b" }

// issuePattern is the issue's 160 KB output_matches pattern.
func issuePattern() string {
	p := ""
	for n := 1; len(p) < 160_000; n *= 2 {
		p = altDotStar(n)
	}
	return p
}

func TestCompileCaps(t *testing.T) {
	tests := []struct {
		name     string
		a        Assertion
		tooLarge bool
		contains string
	}{
		{"issue's 160 KB pattern", Assertion{Type: OutputMatches, Value: issuePattern()}, true, "bytes, more than 1024"},
		{"pattern at the byte cap", Assertion{Type: OutputMatches, Value: strings.Repeat("x", MaxPatternBytes)}, true, "instructions"},
		{"pattern over the byte cap", Assertion{Type: OutputMatches, Value: strings.Repeat("x", MaxPatternBytes+1)}, true, "more than 1024"},
		{"short pattern, large program", Assertion{Type: OutputMatches, Value: `x{600}y{600}`}, true, "instructions, more than 1000"},
		{"repetition of a class", Assertion{Type: OutputMatches, Value: `[a-z]{1000}`}, true, "instructions"},
		{"program at the cap", Assertion{Type: OutputMatches, Value: optChain((MaxPatternInsts - 3) / 2)}, false, ""},
		{"real pattern", Assertion{Type: OutputMatches, Value: `(?m)^\s*1\.`}, false, ""},
		{"date pattern", Assertion{Type: OutputMatches, Value: `\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z\b`}, false, ""},
		{"substring over the cap", Assertion{Type: StdoutContains, Value: strings.Repeat("x", MaxSubstringBytes+1)}, true, "more than 16384"},
		{"folding substring over the cap", Assertion{Type: OutputNotContains, Value: strings.Repeat("x", MaxSubstringBytes+1)}, true, "more than 16384"},
		{"substring at the cap", Assertion{Type: NotContains, Value: strings.Repeat("x", MaxSubstringBytes)}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.a
			err := Compile(&a)
			if !tt.tooLarge {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.contains) {
				t.Fatalf("err = %v, want ErrTooLarge saying %q", err, tt.contains)
			}
			// The worker compiles what it evaluates, so a job built around the planner fares no better.
			r, err := Evaluate(tt.a, Observation{Output: "x", Stdout: "x"})
			if !errors.Is(err, ErrTooLarge) || !r.Errored || r.Passed {
				t.Fatalf("Evaluate: %+v, %v", r, err)
			}
		})
	}
}

// TestInstsBound checks that instsBound bounds the compiled size of the densest patterns
// without counted repetition, which Compile does not count.
func TestInstsBound(t *testing.T) {
	units := []string{"()", "(|)", "|", "a?", "(a)?", "(a*)*", "(?:|a)", `\b`, "^$", "(?i:k)", "(?s:.)",
		"[^a]", "(?U)a*?", "((a))", "(?:a+)+", "x*y*", "(x?)?", "(a|b)", "[a-zA-Z_]", `\pL`, "ǅ", "(?i)ǅ"}
	for _, u := range units {
		for _, n := range []int{1, 10, MaxPatternBytes / len(u)} {
			p := strings.Repeat(u, n)
			got, err := patternInsts(p)
			if err != nil {
				continue // not a pattern Compile would accept either
			}
			if bound := instsBound(p); got > bound {
				t.Errorf("%q: %d instructions, bound %d", p, got, bound)
			}
		}
	}
}

// stopAfter is a context that reports itself done from its n-th look on: the test stops a
// match part-way through without a clock.
type stopAfter struct {
	context.Context
	n int
}

func (s *stopAfter) Err() error {
	if s.n--; s.n < 0 {
		return context.DeadlineExceeded
	}
	return nil
}

func TestEvaluateAllContextErrorsWhenTimeRunsOut(t *testing.T) {
	out := strings.Repeat("a", 64<<10) + "DEV"
	as := []Assertion{
		// Costly enough (64 KiB times 803 instructions) to be matched through the deadline reader.
		{Type: OutputMatches, Value: strings.Repeat("a?", 400) + "DEV"},
		{Type: OutputContains, Value: "dev"},
		{Type: OutputNotContains, Value: "prod"},
	}
	for i := range as {
		if err := Compile(&as[i]); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		ctx     context.Context
		errored []bool
	}{
		{"in time", context.Background(), []bool{false, false, false}},
		// Stopped part-way through the output: the match that would have passed is errored.
		{"mid-match", &stopAfter{Context: context.Background(), n: 2}, []bool{true, true, true}},
		// Time was up before evaluation began.
		{"already over", &stopAfter{Context: context.Background()}, []bool{true, true, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			results, _ := EvaluateAllContext(tt.ctx, as, Observation{Output: out})
			for i, r := range results {
				if r.Errored != tt.errored[i] {
					t.Errorf("%s: errored %v, want %v (%s)", r.Type, r.Errored, tt.errored[i], r.Message)
				}
				if r.Errored && (r.Passed || !strings.Contains(r.Message, "time ran out")) {
					t.Errorf("%s: %+v", r.Type, r)
				}
			}
			if want := !tt.errored[0]; AllPassed(results) != want {
				t.Errorf("AllPassed = %v, want %v", !want, want)
			}
		})
	}
}

// TestMatchStopsAtDeadline runs the worst pattern the caps admit on output long enough to take
// minutes, with a deadline that has passed: the match must give up, not run to the end. The test
// bounds nothing by time; it would hang, not fail, without the deadline reader.
func TestMatchStopsAtDeadline(t *testing.T) {
	a := Assertion{Type: OutputMatches, Value: optChain((MaxPatternInsts - 3) / 2)}
	if err := Compile(&a); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	results, _ := EvaluateAllContext(ctx, []Assertion{a}, Observation{Output: strings.Repeat("a", 64<<20)})
	if !results[0].Errored || results[0].Passed {
		t.Fatalf("%+v", results[0])
	}
}

// BenchmarkOutputMatchesWorstCase measures what the caps leave: patterns at MaxPatternInsts on
// 64 KiB of output that does not match, so the engine walks all of it with every thread alive.
func BenchmarkOutputMatchesWorstCase(b *testing.B) {
	out := strings.Repeat("a", 64<<10)
	shapes := map[string]string{
		"opt-chain":     optChain((MaxPatternInsts - 3) / 2),
		"alt-dotstar":   altDotStar(1),
		"dotstar-chain": strings.Repeat(".*", min((MaxPatternInsts-3)/2, (MaxPatternBytes-1)/2)) + "b",
	}
	for n := 1; ; n++ { // the largest alternation the cap admits
		if k, _ := patternInsts(altDotStar(n + 1)); k > MaxPatternInsts {
			shapes["alt-dotstar"] = altDotStar(n)
			break
		}
	}
	for _, name := range []string{"opt-chain", "alt-dotstar", "dotstar-chain"} {
		a := Assertion{Type: OutputMatches, Value: shapes[name]}
		if err := Compile(&a); err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(out)))
			for b.Loop() {
				if r, _ := Evaluate(a, Observation{Output: out}); r.Passed || r.Errored {
					b.Fatal(r.Message)
				}
			}
		})
	}
}
