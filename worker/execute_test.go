package worker

import (
	"testing"

	"github.com/skillfleet/skillfleet/assert"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

func TestVerdictOf(t *testing.T) {
	pass := assert.Result{Passed: true}
	fail := assert.Result{Passed: false}
	errd := assert.Result{Errored: true}
	tests := []struct {
		name string
		in   []assert.Result
		want pb.Verdict
	}{
		{"all passed", []assert.Result{pass, pass}, pb.Verdict_VERDICT_PASSED},
		{"one failed", []assert.Result{pass, fail}, pb.Verdict_VERDICT_FAILED},
		{"errored beats failed", []assert.Result{fail, errd}, pb.Verdict_VERDICT_ERRORED},
		{"no assertions is never a pass", nil, pb.Verdict_VERDICT_ERRORED},
		{"passed but errored is errored", []assert.Result{{Passed: true, Errored: true}}, pb.Verdict_VERDICT_ERRORED},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := verdictOf(tt.in); got != tt.want {
				t.Fatalf("verdictOf = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCompileAssertionsFromTheWire(t *testing.T) {
	got, err := compileAssertions([]*pb.Assertion{
		{Type: "exit_code", ExitCode: 2},
		{Type: "output_matches", Value: `^\d+$`},
		{Type: "stdout_json", Json: []byte(`{"n": 10000000000000000001, "a": [1, null]}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].ExitCode != 2 || got[1].Regexp == nil {
		t.Fatalf("decoded %+v", got)
	}
	// Big integers survive the wire without losing precision.
	r, _ := assert.Evaluate(got[2], assert.Observation{Stdout: `{"n": 10000000000000000001, "a": [1, null], "x": 1}`})
	if !r.Passed {
		t.Fatalf("stdout_json after the wire: %+v", r)
	}
	r, _ = assert.Evaluate(got[2], assert.Observation{Stdout: `{"n": 10000000000000000000, "a": [1, null]}`})
	if r.Passed {
		t.Fatal("a big integer off by one matched")
	}

	for _, bad := range [][]*pb.Assertion{
		nil,
		{{Type: "output_matches", Value: "("}},
		{{Type: "stdout_json", Json: []byte("{not json")}},
		{{Type: "no_such_type", Value: "x"}},
	} {
		if _, err := compileAssertions(bad); err == nil {
			t.Errorf("compileAssertions(%v) accepted a bad job", bad)
		}
	}
}
