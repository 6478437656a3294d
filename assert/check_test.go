package assert

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestCheckerIsCompileWithoutPrograms: what Checker.Check leaves and returns is what Compile
// leaves and returns, bar the compiled program, the first time a pattern is seen and every
// time after (from what the checker remembers).
func TestCheckerIsCompileWithoutPrograms(t *testing.T) {
	tests := []Assertion{
		{Type: OutputMatches, Value: `(?i)\bready\b`},
		{Type: OutputMatches, Value: `a(b`},
		{Type: OutputMatches, Value: ""},
		{Type: OutputMatches, Value: strings.Repeat("a", MaxPatternBytes+1)},
		{Type: OutputMatches, Value: `x{1000}y{1000}`},
		{Type: OutputMatches, Value: `\d{2,4}`},
		{Type: FileMatches, Path: "out/result.txt", Value: `^ok$`},
		{Type: FileMatches, Path: "/abs", Value: `^ok$`},
		{Type: FileMatches, Path: "out.txt", Value: `[`},
		{Type: ToolCalled, Value: "bash", Min: 1, ArgsMatch: `"command":\s*"ls`},
		{Type: ToolCalled, Value: "bash", Min: 1, ArgsMatch: `(`},
		{Type: ToolCalled, Value: "bash", Min: 1},
		{Type: OutputContains, Value: "READY"},
		{Type: OutputContains, Value: ""},
	}
	c := NewChecker()
	for round := range 2 {
		for _, tt := range tests {
			want, got := tt, tt
			wantErr := Compile(&want)
			want.Regexp = nil
			gotErr := c.Check(&got)
			if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
				t.Errorf("round %d, %s %q: Check error %v, Compile error %v", round, tt.Type, tt.Value, gotErr, wantErr)
				continue
			}
			for _, sentinel := range []error{ErrInvalid, ErrTooLarge, ErrPath} {
				if errors.Is(gotErr, sentinel) != errors.Is(wantErr, sentinel) {
					t.Errorf("round %d, %s %q: errors.Is(%v) differs from Compile's", round, tt.Type, tt.Value, sentinel)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("round %d, %s %q: Check left %+v, Compile %+v", round, tt.Type, tt.Value, got, want)
			}
		}
	}
}

// TestCheckerBound: past its bound the checker remembers no more patterns and still checks
// each one.
func TestCheckerBound(t *testing.T) {
	c := NewChecker()
	for i := range maxCheckedPatterns + 10 {
		a := Assertion{Type: OutputMatches, Value: "p" + strings.Repeat("q", i%50) + string(rune('a'+i%26)) + strings.Repeat("r", i/50)}
		if err := c.Check(&a); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.patterns) != maxCheckedPatterns {
		t.Fatalf("remembers %d patterns, want the bound %d", len(c.patterns), maxCheckedPatterns)
	}
	bad := Assertion{Type: OutputMatches, Value: `(`}
	if err := c.Check(&bad); err == nil {
		t.Fatal("a bad pattern past the bound passed")
	}
}
