package assert

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestEvaluateSemanticMatchNeedsTheJudge(t *testing.T) {
	got, err := Evaluate(Assertion{Type: SemanticMatch, Value: "Asks for confirmation"}, Observation{Output: "Confirm?"})
	if !errors.Is(err, ErrNeedsJudge) {
		t.Fatalf("err = %v, want ErrNeedsJudge", err)
	}
	want := Result{Type: SemanticMatch, Expected: "Asks for confirmation", Message: "semantic_match is evaluated by the judge", Errored: true}
	if got != want {
		t.Errorf("got %#v\nwant %#v", got, want)
	}
}

func TestEvaluateInvalidAssertion(t *testing.T) {
	for _, a := range []Assertion{
		{Type: OutputContains},
		{Type: "output_equals", Value: "x"},
		{Type: StdoutJSON},
		{Type: ExitCode, ExitCode: 300},
	} {
		got, err := Evaluate(a, Observation{Output: "x", Stdout: "null", ExitCode: 300})
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: err = %v, want ErrInvalid", a, err)
		}
		if got.Passed || !got.Errored || got.Message == "" {
			t.Errorf("%+v: result %+v, want errored with a message", a, got)
		}
	}
	got, _ := Evaluate(Assertion{Type: OutputContains}, Observation{})
	if want := "invalid output_contains assertion: the substring is empty"; got.Message != want {
		t.Errorf("Message = %q, want %q", got.Message, want)
	}
}

func TestEvaluateAll(t *testing.T) {
	as := []Assertion{
		{Type: OutputContains, Value: "DEV"},
		{Type: SemanticMatch, Value: "Selects DEV"},
		{Type: OutputNotContains, Value: "PROD"},
		{Type: OutputMatches, Value: ""},
		{Type: SemanticMatch, Value: "Is polite"},
	}
	results, pending := EvaluateAll(as, Observation{Output: "Selected dev."})
	if len(results) != len(as) {
		t.Fatalf("%d results for %d assertions", len(results), len(as))
	}
	if len(pending) != 2 || pending[0] != 1 || pending[1] != 4 {
		t.Fatalf("pending = %v, want [1 4]", pending)
	}
	for i, r := range results {
		if r.Type != as[i].Type {
			t.Errorf("results[%d].Type = %s, want %s", i, r.Type, as[i].Type)
		}
	}
	if !results[0].Passed || !results[2].Passed || results[3].Passed || !results[3].Errored {
		t.Errorf("results = %+v", results)
	}
	if !results[1].Errored || results[1].Passed {
		t.Errorf("the semantic_match placeholder is %+v, want errored", results[1])
	}
	if AllPassed(results) {
		t.Error("AllPassed with placeholders and an invalid assertion")
	}
	// The judge's verdicts replace the placeholders; the invalid assertion still fails the case.
	results[1] = Result{Type: SemanticMatch, Passed: true}
	results[4] = Result{Type: SemanticMatch, Passed: true}
	if AllPassed(results) {
		t.Error("AllPassed with an invalid assertion")
	}
	results[3] = Result{Type: OutputMatches, Passed: true}
	if !AllPassed(results) {
		t.Error("AllPassed = false when every result passed")
	}
}

func TestAllPassed(t *testing.T) {
	tests := []struct {
		results []Result
		want    bool
	}{
		{nil, false},
		{[]Result{{Passed: true}}, true},
		{[]Result{{Passed: true}, {Passed: false}}, false},
		{[]Result{{Passed: true, Errored: true}}, false},
	}
	for _, tt := range tests {
		if got := AllPassed(tt.results); got != tt.want {
			t.Errorf("AllPassed(%+v) = %v, want %v", tt.results, got, tt.want)
		}
	}
}

func TestResultJSON(t *testing.T) {
	b, err := json.Marshal(Result{Type: StdoutJSON, Expected: "e", Actual: "a", Message: "m", Path: "$.a"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"stdout_json","passed":false,"expected":"e","actual":"a","message":"m","path":"$.a"}`
	if string(b) != want {
		t.Errorf("JSON = %s, want %s", b, want)
	}
}
