package assert

import (
	"encoding/json"
	"errors"
	"math"
	"regexp/syntax"
	"testing"
	"time"
)

func TestCompile(t *testing.T) {
	tests := []struct {
		name string
		a    Assertion
		err  string // "" for success
	}{
		{name: "substring", a: Assertion{Type: OutputContains, Value: "DEV"}},
		{name: "whitespace substring is allowed", a: Assertion{Type: NotContains, Value: " "}},
		{name: "empty output_contains", a: Assertion{Type: OutputContains}, err: "the substring is empty"},
		{name: "empty output_not_contains", a: Assertion{Type: OutputNotContains}, err: "the substring is empty"},
		{name: "empty stdout_contains", a: Assertion{Type: StdoutContains}, err: "the substring is empty"},
		{name: "empty stderr_contains", a: Assertion{Type: StderrContains}, err: "the substring is empty"},
		{name: "empty not_contains", a: Assertion{Type: NotContains}, err: "the substring is empty"},
		{name: "invalid UTF-8 substring", a: Assertion{Type: StdoutContains, Value: "a\xff"},
			err: `the substring "a\xff" is not valid UTF-8`},
		{name: "pattern", a: Assertion{Type: OutputMatches, Value: `(?m)^\d+$`}},
		{name: "empty pattern", a: Assertion{Type: OutputMatches}, err: "the pattern is empty"},
		{name: "bad pattern", a: Assertion{Type: OutputMatches, Value: `a(b`},
			err: "error parsing regexp: missing closing ): `a(b`"},
		{name: "Perl lookahead is not RE2", a: Assertion{Type: OutputMatches, Value: `a(?=b)`},
			err: "error parsing regexp: invalid or unsupported Perl syntax: `(?=`"},
		{name: "criterion", a: Assertion{Type: SemanticMatch, Value: "Asks for confirmation"}},
		{name: "empty criterion", a: Assertion{Type: SemanticMatch, Value: " \n"}, err: "the criterion is empty"},
		{name: "exit code", a: Assertion{Type: ExitCode, ExitCode: 255}},
		{name: "negative exit code", a: Assertion{Type: ExitCode, ExitCode: -1},
			err: "exit code -1 is outside 0..255 and can never be observed"},
		{name: "exit code too large", a: Assertion{Type: ExitCode, ExitCode: 256},
			err: "exit code 256 is outside 0..255 and can never be observed"},
		{name: "json", a: Assertion{Type: StdoutJSON, JSON: map[string]any{"a": []any{1, "x", nil}}}},
		{name: "json scalar", a: Assertion{Type: StdoutJSON, JSON: "x"}},
		{name: "json missing", a: Assertion{Type: StdoutJSON}, err: "the expected JSON document is missing (null)"},
		{name: "json NaN", a: Assertion{Type: StdoutJSON, JSON: map[string]any{"x": math.NaN()}},
			err: "the number at $.x is NaN, which JSON cannot represent"},
		{name: "json timestamp from YAML", a: Assertion{Type: StdoutJSON, JSON: map[string]any{"d": time.Unix(0, 0)}},
			err: "the value at $.d is a timestamp, not JSON; quote it in YAML to compare it as a string"},
		{name: "json non-string key", a: Assertion{Type: StdoutJSON, JSON: map[any]any{1: "a"}},
			err: "the object key 1 at $ is a int, not a string; quote it"},
		{name: "json foreign type", a: Assertion{Type: StdoutJSON, JSON: []any{struct{}{}}},
			err: "the value at $[0] has type struct {}, which is not JSON"},
		{name: "json bad number", a: Assertion{Type: StdoutJSON, JSON: []any{map[string]any{"n": json.Number("1.")}}},
			err: `"1." at $[0].n is not a JSON number`},
		{name: "no type", a: Assertion{Value: "x"}, err: "the assertion has no type"},
		{name: "unknown type", a: Assertion{Type: "output_equals", Value: "x"}, err: `unknown assertion type "output_equals"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.a
			err := Compile(&a)
			if tt.err == "" {
				if err != nil {
					t.Fatalf("Compile: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tt.err {
				t.Fatalf("Compile error = %v, want %q", err, tt.err)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not match ErrInvalid", err)
			}
		})
	}
}

func TestCompileFillsRegexp(t *testing.T) {
	a := Assertion{Type: OutputMatches, Value: `x+`}
	if err := Compile(&a); err != nil || a.Regexp == nil || a.Regexp.String() != `x+` {
		t.Fatalf("Compile: %v, Regexp %v", err, a.Regexp)
	}
	bad := Assertion{Type: OutputMatches, Value: `[`}
	var se *syntax.Error
	if err := Compile(&bad); !errors.As(err, &se) {
		t.Errorf("a bad pattern's error %v does not carry the *syntax.Error", err)
	}
}

func TestTypes(t *testing.T) {
	for _, typ := range Types() {
		if !typ.Valid() {
			t.Errorf("%s is not Valid", typ)
		}
	}
	if Type("output_equals").Valid() || Type("").Valid() {
		t.Error("unknown types are Valid")
	}
	if len(Types()) != 22 {
		t.Errorf("Types() has %d entries, want 22", len(Types()))
	}
	for _, typ := range PromptTypes() {
		if !typ.Valid() {
			t.Errorf("prompt type %s is not Valid", typ)
		}
	}
}
