package coordinator

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/skillfleet/skillfleet/comparison"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// TestRunRecordsKeepWhatWorkersSend: the records a run keeps and stores are the results'
// values exactly, the ones that do not fit a column (a verdict this coordinator does not know,
// negative or huge counts) included; a job without a counted result has none; and a case whose
// epochs ran on two models is two groups of its epochs.
func TestRunRecordsKeepWhatWorkersSend(t *testing.T) {
	r := planRun(t, 100, 2, 1) // one skill of 100 cases, two epochs each
	tests := []struct {
		name string
		res  *pb.Result
	}{
		{"ordinary", &pb.Result{Verdict: pb.Verdict_VERDICT_PASSED, Usage: &pb.Usage{PromptTokens: 900, CompletionTokens: 100, Cost: 0.25}, Timings: &pb.Timings{TotalMs: 1500}}},
		{"a verdict of a later version", &pb.Result{Verdict: pb.Verdict(300)}},
		{"a negative verdict", &pb.Result{Verdict: pb.Verdict(-2)}},
		{"tokens past 32 bits", &pb.Result{Verdict: pb.Verdict_VERDICT_FAILED, Usage: &pb.Usage{PromptTokens: math.MaxUint32, CompletionTokens: 1}}},
		{"negative tokens", &pb.Result{Verdict: pb.Verdict_VERDICT_FAILED, Usage: &pb.Usage{PromptTokens: -5}}},
		{"a duration past 32 bits", &pb.Result{Verdict: pb.Verdict_VERDICT_ERRORED, Timings: &pb.Timings{TotalMs: math.MaxInt64}}},
		{"a negative duration", &pb.Result{Verdict: pb.Verdict_VERDICT_TIMED_OUT, Timings: &pb.Timings{TotalMs: -1}}},
		{"an infinite cost", &pb.Result{Verdict: pb.Verdict_VERDICT_PASSED, Usage: &pb.Usage{Cost: math.Inf(1)}}},
	}
	var want []comparison.Record
	for i, tt := range tests {
		// The first epoch of case i; the second epoch of case 0 on another model.
		j := r.plan.Jobs[2*i]
		tt.res.Model, tt.res.JudgeModel, tt.res.JudgePrompt, tt.res.CaseDigest = "model-x", "judge-y", "prompt/1", "sha256:"+j.Case.Name
		r.records.add(r.plan, r.catalog, 2*i, tt.res)
		want = append(want, recordOf(j.Case.Skill.Name, j.Case.Name, j.Epoch, tt.res))
	}
	other := &pb.Result{Verdict: pb.Verdict_VERDICT_PASSED, Model: "model-z", JudgeModel: "judge-y", JudgePrompt: "prompt/1", CaseDigest: "sha256:" + r.plan.Jobs[1].Case.Name}
	r.records.add(r.plan, r.catalog, 1, other)
	want = slices.Insert(want, 1, recordOf(r.plan.Jobs[1].Case.Skill.Name, r.plan.Jobs[1].Case.Name, 2, other))

	var buf bytes.Buffer
	if err := r.records.encode(&buf, r.plan); err != nil {
		t.Fatal(err)
	}
	got, err := comparison.ReadRecords(&buf, "", comparison.ReadLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got, want, comparison.Same) {
		t.Fatalf("records\n%s\nwant\n%s", show(got), show(want))
	}
	if got[0].RecordKey == got[1].RecordKey {
		t.Error("case 0's epochs on two models share one key")
	}
}

func recordOf(skill, caseName string, epoch int, res *pb.Result) comparison.Record {
	return comparison.Record{
		RecordKey: &comparison.RecordKey{Skill: skill, Case: caseName, Agent: "agent-0", Model: res.GetModel(), JudgeModel: res.GetJudgeModel(),
			JudgePrompt: res.GetJudgePrompt(), CaseDigest: res.GetCaseDigest()},
		Epoch: int32(epoch), Verdict: res.GetVerdict(), Tokens: res.GetUsage().GetPromptTokens() + res.GetUsage().GetCompletionTokens(),
		Cost: res.GetUsage().GetCost(), DurationMS: res.GetTimings().GetTotalMs(),
	}
}

func show(rs []comparison.Record) string {
	var b bytes.Buffer
	for _, r := range rs {
		fmt.Fprintf(&b, "  %+v %+v\n", *r.RecordKey, r)
	}
	return b.String()
}
