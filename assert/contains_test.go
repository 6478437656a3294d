package assert

import (
	"strings"
	"testing"
)

func TestEvaluateContains(t *testing.T) {
	tests := []struct {
		name string
		a    Assertion
		obs  Observation
		want Result
	}{
		{
			name: "output_contains ASCII, different case",
			a:    Assertion{Type: OutputContains, Value: "dev"},
			obs:  Observation{Output: "Selected the DEV environment."},
			want: Result{Passed: true, Expected: `output contains "dev" (case-insensitive)`,
				Actual:  "Selected the DEV environment.",
				Message: `output contains "dev" (case-insensitive) at line 1, column 14`},
		},
		{
			name: "output_contains missing",
			a:    Assertion{Type: OutputContains, Value: "confirm"},
			obs:  Observation{Output: "Deploying to PROD now."},
			want: Result{Passed: false, Expected: `output contains "confirm" (case-insensitive)`,
				Actual:  "Deploying to PROD now.",
				Message: `output does not contain "confirm" (case-insensitive)`},
		},
		{
			name: "output_contains on empty output",
			a:    Assertion{Type: OutputContains, Value: "DEV"},
			obs:  Observation{},
			want: Result{Passed: false, Expected: `output contains "DEV" (case-insensitive)`,
				Message: `output does not contain "DEV" (case-insensitive); the output is empty`},
		},
		{
			name: "output_contains miss on truncated output says so",
			a:    Assertion{Type: OutputContains, Value: "done"},
			obs:  Observation{Output: "working…", OutputTruncated: true},
			want: Result{Passed: false, Expected: `output contains "done" (case-insensitive)`,
				Actual:  "working…",
				Message: `output does not contain "done" (case-insensitive); the output was truncated, so the part cut off was not checked`},
		},
		{
			name: "full folding: ß matches SS",
			a:    Assertion{Type: OutputContains, Value: "STRASSE"},
			obs:  Observation{Output: "Hauptstraße 1"},
			want: Result{Passed: true, Expected: `output contains "STRASSE" (case-insensitive)`,
				Actual:  "Hauptstraße 1",
				Message: `output contains "STRASSE" (case-insensitive) at line 1, column 6`},
		},
		{
			name: "full folding: capital ẞ matches ss",
			a:    Assertion{Type: OutputContains, Value: "ẞ"},
			obs:  Observation{Output: "Strasse"},
			want: Result{Passed: true, Expected: `output contains "ẞ" (case-insensitive)`,
				Actual:  "Strasse",
				Message: `output contains "ẞ" (case-insensitive) at line 1, column 5`},
		},
		{
			name: "Greek final sigma",
			a:    Assertion{Type: OutputContains, Value: "ΟΔΟΣ"},
			obs:  Observation{Output: "η οδος"},
			want: Result{Passed: true, Expected: `output contains "ΟΔΟΣ" (case-insensitive)`,
				Actual:  "η οδος",
				Message: `output contains "ΟΔΟΣ" (case-insensitive) at line 1, column 3`},
		},
		{
			name: "Turkish dotted capital I is not plain i (language-neutral folding)",
			a:    Assertion{Type: OutputContains, Value: "istanbul"},
			obs:  Observation{Output: "İSTANBUL"},
			want: Result{Passed: false, Expected: `output contains "istanbul" (case-insensitive)`,
				Actual:  "İSTANBUL",
				Message: `output does not contain "istanbul" (case-insensitive)`},
		},
		{
			name: "Turkish dotless i is not plain i",
			a:    Assertion{Type: OutputContains, Value: "I"},
			obs:  Observation{Output: "ı"},
			want: Result{Passed: false, Expected: `output contains "I" (case-insensitive)`,
				Actual:  "ı",
				Message: `output does not contain "I" (case-insensitive)`},
		},
		{
			name: "decomposed output matches a composed needle",
			a:    Assertion{Type: OutputContains, Value: "CAFÉ"},
			obs:  Observation{Output: "un cafe\u0301 noir"},
			want: Result{Passed: true, Expected: `output contains "CAFÉ" (case-insensitive)`,
				Actual:  "un cafe\u0301 noir",
				Message: `output contains "CAFÉ" (case-insensitive) at line 1, column 4`},
		},
		{
			name: "a base letter is not found inside an accented letter",
			a:    Assertion{Type: OutputContains, Value: "cafe"},
			obs:  Observation{Output: "un cafe\u0301 noir"},
			want: Result{Passed: false, Expected: `output contains "cafe" (case-insensitive)`,
				Actual:  "un cafe\u0301 noir",
				Message: `output does not contain "cafe" (case-insensitive)`},
		},
		{
			name: "output_not_contains passes",
			a:    Assertion{Type: OutputNotContains, Value: "PROD"},
			obs:  Observation{Output: "Selected DEV."},
			want: Result{Passed: true, Expected: `output does not contain "PROD" (case-insensitive)`,
				Actual:  "Selected DEV.",
				Message: `output does not contain "PROD" (case-insensitive)`},
		},
		{
			name: "output_not_contains fails, any case, position and escaped excerpt",
			a:    Assertion{Type: OutputNotContains, Value: "error"},
			obs:  Observation{Output: "ok\n\tsome Error\x1b[0m"},
			want: Result{Passed: false, Expected: `output does not contain "error" (case-insensitive)`,
				Actual:  `ok\n\tsome Error\x1b[0m`,
				Message: `output contains "error" (case-insensitive) at line 2, column 7`},
		},
		{
			name: "output_not_contains on truncated output is errored, never passed",
			a:    Assertion{Type: OutputNotContains, Value: "PROD"},
			obs:  Observation{Output: "DEV", OutputTruncated: true},
			want: Result{Passed: false, Errored: true, Expected: `output does not contain "PROD" (case-insensitive)`,
				Actual:  "DEV",
				Message: `output does not contain "PROD" (case-insensitive); the output was truncated, so the part cut off was not checked`},
		},
		{
			name: "stdout_contains is case-sensitive and hints at the other case",
			a:    Assertion{Type: StdoutContains, Value: "Hello, World"},
			obs:  Observation{Stdout: "page 1\nhello, world\n"},
			want: Result{Passed: false, Expected: `stdout contains "Hello, World" (case-sensitive)`,
				Actual:  `page 1\nhello, world\n`,
				Message: `stdout does not contain "Hello, World" (case-sensitive); it appears with different case in stdout at line 2, column 1: "hello, world"`},
		},
		{
			name: "stdout_contains passes",
			a:    Assertion{Type: StdoutContains, Value: "Page 1"},
			obs:  Observation{Stdout: "Hello, World\nPage 1\n", Stderr: "Page 2"},
			want: Result{Passed: true, Expected: `stdout contains "Page 1" (case-sensitive)`,
				Actual:  `Hello, World\nPage 1\n`,
				Message: `stdout contains "Page 1" (case-sensitive) at line 2, column 1`},
		},
		{
			name: "stdout_contains normalises: composed and decomposed é are equal",
			a:    Assertion{Type: StdoutContains, Value: "e\u0301t\u00e9"},
			obs:  Observation{Stdout: "\u00e9te\u0301"},
			want: Result{Passed: true, Expected: "stdout contains \"e\u0301t\u00e9\" (case-sensitive)",
				Actual:  "\u00e9te\u0301",
				Message: `stdout contains "e` + "\u0301" + `t` + "\u00e9" + `" (case-sensitive) at line 1, column 1`},
		},
		{
			name: "stderr_contains looks at stderr only",
			a:    Assertion{Type: StderrContains, Value: "warning"},
			obs:  Observation{Stdout: "warning", Stderr: "fine"},
			want: Result{Passed: false, Expected: `stderr contains "warning" (case-sensitive)`,
				Actual:  "fine",
				Message: `stderr does not contain "warning" (case-sensitive)`},
		},
		{
			name: "stderr_contains on empty stderr",
			a:    Assertion{Type: StderrContains, Value: "warning"},
			obs:  Observation{Stdout: "warning"},
			want: Result{Passed: false, Expected: `stderr contains "warning" (case-sensitive)`,
				Message: `stderr does not contain "warning" (case-sensitive); stderr is empty`},
		},
		{
			name: "not_contains fails on stderr",
			a:    Assertion{Type: NotContains, Value: "Traceback"},
			obs:  Observation{Stdout: "ok\n", Stderr: "Traceback (most recent call last):\n"},
			want: Result{Passed: false, Expected: `neither stdout nor stderr contains "Traceback" (case-sensitive)`,
				Actual:  `stderr: Traceback (most recent call last):\n`,
				Message: `stderr contains "Traceback" (case-sensitive) at line 1, column 1`},
		},
		{
			name: "not_contains fails on stdout first",
			a:    Assertion{Type: NotContains, Value: "ERROR"},
			obs:  Observation{Stdout: "x ERROR", Stderr: "ERROR"},
			want: Result{Passed: false, Expected: `neither stdout nor stderr contains "ERROR" (case-sensitive)`,
				Actual:  `stdout: x ERROR`,
				Message: `stdout contains "ERROR" (case-sensitive) at line 1, column 3`},
		},
		{
			name: "not_contains passes, noting a different-case occurrence",
			a:    Assertion{Type: NotContains, Value: "ERROR"},
			obs:  Observation{Stdout: "ok", Stderr: "no errors"},
			want: Result{Passed: true, Expected: `neither stdout nor stderr contains "ERROR" (case-sensitive)`,
				Actual:  `stderr: no errors`,
				Message: `neither stdout nor stderr contains "ERROR" (case-sensitive); it appears with different case in stderr at line 1, column 4: "error"`},
		},
		{
			name: "not_contains never matches across the two streams",
			a:    Assertion{Type: NotContains, Value: "ab"},
			obs:  Observation{Stdout: "a", Stderr: "b"},
			want: Result{Passed: true, Expected: `neither stdout nor stderr contains "ab" (case-sensitive)`,
				Actual:  `stdout: a`,
				Message: `neither stdout nor stderr contains "ab" (case-sensitive)`},
		},
		{
			name: "not_contains on truncated output is errored, never passed",
			a:    Assertion{Type: NotContains, Value: "ERROR"},
			obs:  Observation{OutputTruncated: true},
			want: Result{Passed: false, Errored: true, Expected: `neither stdout nor stderr contains "ERROR" (case-sensitive)`,
				Actual:  `stdout: `,
				Message: `neither stdout nor stderr contains "ERROR" (case-sensitive); stdout and stderr are empty; the captured output was truncated, so the part cut off was not checked`},
		},
		{
			name: "invalid UTF-8 in the output is shown escaped",
			a:    Assertion{Type: StdoutContains, Value: "b"},
			obs:  Observation{Stdout: "a\xffb"},
			want: Result{Passed: true, Expected: `stdout contains "b" (case-sensitive)`,
				Actual:  `a\xffb`,
				Message: `stdout contains "b" (case-sensitive) at line 1, column 3`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Evaluate(tt.a, tt.obs)
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			tt.want.Type = tt.a.Type
			if got != tt.want {
				t.Errorf("Evaluate\n got %#v\nwant %#v", got, tt.want)
			}
			checkResult(t, got)
		})
	}
}

// TestFind pins the Unicode behaviour of the substring search itself, both modes.
func TestFind(t *testing.T) {
	tests := []struct {
		h, n       string
		fold       bool
		found      bool
		start, end int // in h, when found
	}{
		{h: "Die STRASSE", n: "straße", fold: true, found: true, start: 4, end: 11},
		{h: "Die Straße!", n: "STRASSE", fold: true, found: true, start: 4, end: 11},
		{h: "Die Straße!", n: "strasse", fold: false},
		{h: "ﬁle", n: "FILE", fold: true, found: true, start: 0, end: 5}, // ligature folds to "fi"
		{h: "Σίσυφος", n: "ΣΊΣΥΦΟΣ", fold: true, found: true, start: 0, end: 14},
		{h: "ς", n: "Σ", fold: true, found: true, start: 0, end: 2},
		{h: "ς", n: "Σ", fold: false},
		{h: "\u212a", n: "k", fold: true, found: true, start: 0, end: 3}, // Kelvin sign
		{h: "İ", n: "i", fold: true},                                     // İ folds to i + U+0307
		{h: "İ", n: "i\u0307", fold: true, found: true, start: 0, end: 2},
		{h: "ı", n: "i", fold: true},
		{h: "I", n: "ı", fold: true},
		{h: "e\u0301", n: "é", fold: false, found: true, start: 0, end: 3},
		{h: "é", n: "e\u0301", fold: true, found: true, start: 0, end: 2},
		{h: "é", n: "e", fold: false},
		{h: "e\u0301", n: "e", fold: true},
		{h: "q\u0301", n: "q", fold: false}, // no precomposed form: the mark still binds
		{h: "q\u0301 q", n: "q", fold: false, found: true, start: 4, end: 5},
		{h: "\u0301", n: "\u0301", fold: false, found: true, start: 0, end: 2},
		{h: "❤\uFE0F", n: "❤", fold: false, found: true, start: 0, end: 3},     // a variation selector is not a combining mark
		{h: "\u1100\u1161", n: "가", fold: true, found: true, start: 0, end: 6}, // jamo compose
		{h: "ΐ", n: "ΐ", fold: true, found: true, start: 0, end: 2},
		{h: "a\xffb", n: "\uFFFD", fold: false, found: true, start: 1, end: 2},
		{h: "ß", n: "s", fold: true, found: true, start: 0, end: 2},
		{h: "", n: "a", fold: true},
	}
	for _, tt := range tests {
		start, end, found := containsText(tt.h, tt.n, tt.fold)
		if found != tt.found || (found && (start != tt.start || end != tt.end)) {
			t.Errorf("find(%q in %q, fold=%v) = [%d,%d) %v, want [%d,%d) %v",
				tt.n, tt.h, tt.fold, start, end, found, tt.start, tt.end, tt.found)
		}
	}
}

func TestContainsExcerptIsAroundTheMatch(t *testing.T) {
	out := strings.Repeat("x", 1000) + "NEEDLE" + strings.Repeat("y", 1000)
	r, err := Evaluate(Assertion{Type: OutputContains, Value: "needle"}, Observation{Output: out})
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, r)
	if !strings.Contains(r.Actual, "NEEDLE") || !strings.HasPrefix(r.Actual, "…x") || !strings.HasSuffix(r.Actual, "y…") {
		t.Errorf("Actual = %q, want the match with context and … on both sides", r.Actual)
	}
	if r.Message != `output contains "needle" (case-insensitive) at line 1, column 1001` {
		t.Errorf("Message = %q", r.Message)
	}
	// Expansions before the match (ß → ss, ﬃ → ffi) must not shift the excerpt.
	out = strings.Repeat("ßﬃ", 300) + "NEEDLE" + strings.Repeat("ẞ", 300)
	r, _ = Evaluate(Assertion{Type: OutputContains, Value: "needle"}, Observation{Output: out})
	if !strings.Contains(r.Actual, "ßﬃNEEDLEẞ") {
		t.Errorf("Actual = %q, want it centred on NEEDLE", r.Actual)
	}
}
