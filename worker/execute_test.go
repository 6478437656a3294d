package worker

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

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

func TestEncodeResultFitsTheMessageLimit(t *testing.T) {
	w := &Worker{cfg: Config{MaxResultBytes: 1 << 20}}
	big := strings.Repeat("é", 1<<20) // 2 MiB of two-byte runes
	res := &pb.Result{JobId: "j1", Verdict: pb.Verdict_VERDICT_FAILED, Stdout: big, Stderr: "short"}
	data, err := w.encodeResult(res)
	if err != nil {
		t.Fatal(err)
	}
	got := &pb.Result{}
	if err := proto.Unmarshal(data, got); err != nil {
		t.Fatal(err)
	}
	if len(data) > 1<<20 || got.GetVerdict() != pb.Verdict_VERDICT_FAILED || !got.GetOutputTruncated() {
		t.Fatalf("%d bytes, verdict %v, truncated %v", len(data), got.GetVerdict(), got.GetOutputTruncated())
	}
	if !utf8.ValidString(got.GetStdout()) || !strings.Contains(got.GetStdout(), "left out of the stored result") || got.GetStderr() != "short" {
		t.Fatalf("stdout trimmed badly: %d bytes, valid %v", len(got.GetStdout()), utf8.ValidString(got.GetStdout()))
	}

	// A result that cannot be made to fit becomes an errored one that says why.
	w.cfg.MaxResultBytes = 1 << 10
	data, err = w.encodeResult(&pb.Result{JobId: "j2", Verdict: pb.Verdict_VERDICT_PASSED, Stdout: strings.Repeat("x", 8<<10)})
	if err != nil {
		t.Fatal(err)
	}
	got = &pb.Result{}
	_ = proto.Unmarshal(data, got)
	if got.GetVerdict() != pb.Verdict_VERDICT_ERRORED || !strings.Contains(got.GetReason(), "exceeds") || got.GetJobId() != "j2" {
		t.Fatalf("oversized result: %v %q", got.GetVerdict(), got.GetReason())
	}
}

// TestDecideWithinTheJobsTime: assertions evaluated after the job's deadline are errored, so
// the job is, with a reason; in time, the same job passes.
func TestDecideWithinTheJobsTime(t *testing.T) {
	as, err := compileAssertions([]*pb.Assertion{
		{Type: string(assert.ExitCode)},
		{Type: string(assert.StdoutContains), Value: "ok"},
	})
	if err != nil {
		t.Fatal(err)
	}
	obs := assert.Observation{Stdout: strings.Repeat("x", 64<<10) + "ok"}
	over, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name   string
		ctx    context.Context
		want   pb.Verdict
		reason string
	}{
		{"in time", context.Background(), pb.Verdict_VERDICT_PASSED, ""},
		{"time is up", over, pb.Verdict_VERDICT_ERRORED, "time ran out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := &pb.Result{}
			decide(tt.ctx, out, as, obs)
			if out.GetVerdict() != tt.want || !strings.Contains(out.GetReason(), tt.reason) {
				t.Fatalf("verdict %v, reason %q; want %v, %q", out.GetVerdict(), out.GetReason(), tt.want, tt.reason)
			}
		})
	}
}
