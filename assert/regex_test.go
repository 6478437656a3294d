package assert

import "testing"

func TestEvaluateMatches(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		obs     Observation
		want    Result
	}{
		{
			name: "simple match", pattern: `DEV|UAT`,
			obs: Observation{Output: "I picked UAT."},
			want: Result{Passed: true, Expected: "output matches /DEV|UAT/", Actual: "I picked UAT.",
				Message: "output matches /DEV|UAT/ at line 1, column 10"},
		},
		{
			name: "case-sensitive unless (?i)", pattern: `dev`,
			obs: Observation{Output: "DEV"},
			want: Result{Expected: "output matches /dev/", Actual: "DEV",
				Message: "output does not match /dev/"},
		},
		{
			name: "(?i) ignores case", pattern: `(?i)dev`,
			obs: Observation{Output: "DEV"},
			want: Result{Passed: true, Expected: "output matches /(?i)dev/", Actual: "DEV",
				Message: "output matches /(?i)dev/ at line 1, column 1"},
		},
		{
			name: "^ anchors the whole output without (?m)", pattern: `^DEV$`,
			obs: Observation{Output: "env:\nDEV\n"},
			want: Result{Expected: "output matches /^DEV$/", Actual: `env:\nDEV\n`,
				Message: "output does not match /^DEV$/"},
		},
		{
			name: "(?m) anchors lines", pattern: `(?m)^DEV$`,
			obs: Observation{Output: "env:\nDEV\n"},
			want: Result{Passed: true, Expected: "output matches /(?m)^DEV$/", Actual: `env:\nDEV\n`,
				Message: "output matches /(?m)^DEV$/ at line 2, column 1"},
		},
		{
			name: ". does not cross lines without (?s)", pattern: `a.b`,
			obs: Observation{Output: "a\nb"},
			want: Result{Expected: "output matches /a.b/", Actual: `a\nb`,
				Message: "output does not match /a.b/"},
		},
		{
			name: "empty output", pattern: `\d+`,
			obs: Observation{},
			want: Result{Expected: `output matches /\d+/`,
				Message: `output does not match /\d+/; the output is empty`},
		},
		{
			name: "a pattern matching the empty string passes on empty output", pattern: `x*`,
			obs: Observation{},
			want: Result{Passed: true, Expected: "output matches /x*/",
				Message: "output matches /x*/ at line 1, column 1 (an empty match)"},
		},
		{
			name: "miss on truncated output says so", pattern: `done$`,
			obs: Observation{Output: "step 1", OutputTruncated: true},
			want: Result{Expected: "output matches /done$/", Actual: "step 1",
				Message: "output does not match /done$/; the output was truncated, so the part cut off was not checked"},
		},
		{
			name: "Unicode classes", pattern: `\p{Greek}+`,
			obs: Observation{Output: "abc ΟΔΟΣ"},
			want: Result{Passed: true, Expected: `output matches /\p{Greek}+/`, Actual: "abc ΟΔΟΣ",
				Message: `output matches /\p{Greek}+/ at line 1, column 5`},
		},
		{
			name: "control characters in the pattern are shown escaped", pattern: "a\tb",
			obs: Observation{Output: "a\tb"},
			want: Result{Passed: true, Expected: `output matches /a\tb/`, Actual: `a\tb`,
				Message: `output matches /a\tb/ at line 1, column 1`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Assertion{Type: OutputMatches, Value: tt.pattern}
			if err := Compile(&a); err != nil {
				t.Fatalf("Compile: %v", err)
			}
			got, err := Evaluate(a, tt.obs)
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			tt.want.Type = OutputMatches
			if got != tt.want {
				t.Errorf("Evaluate\n got %#v\nwant %#v", got, tt.want)
			}
			checkResult(t, got)
		})
	}
}

func TestEvaluateMatchesCompilesWhenTheCallerDidNot(t *testing.T) {
	got, err := Evaluate(Assertion{Type: OutputMatches, Value: `b+`}, Observation{Output: "abbbc"})
	if err != nil || !got.Passed || got.Actual != "abbbc" {
		t.Fatalf("Evaluate = %+v, %v", got, err)
	}
	got, err = Evaluate(Assertion{Type: OutputMatches, Value: `(`}, Observation{Output: "("})
	if err == nil || got.Passed || !got.Errored {
		t.Fatalf("a bad pattern: Evaluate = %+v, %v; want an errored result and an error", got, err)
	}
}
