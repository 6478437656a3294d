package worker

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/assert"
	"github.com/skillfleet/skillfleet/assert/assertpb"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

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
	as, err := assertpb.DecodeAll([]*pb.Assertion{
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
			Decide(tt.ctx, out, as, obs)
			if out.GetVerdict() != tt.want || !strings.Contains(out.GetReason(), tt.reason) {
				t.Fatalf("verdict %v, reason %q; want %v, %q", out.GetVerdict(), out.GetReason(), tt.want, tt.reason)
			}
		})
	}
}
