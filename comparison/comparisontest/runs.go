// Package comparisontest generates the results of large runs for comparison benchmarks.
package comparisontest

import (
	"fmt"
	"math/rand/v2"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Runs builds two runs of n cases over n/100 skills, three epochs each, with a few
// errored epochs, as a nightly comparison of a large fleet would look.
func Runs(n int) (a, b []*pb.Result) { return RunsOf(n, 3) }

// RunsOf is Runs with epochs epochs per case.
func RunsOf(n, epochs int) (a, b []*pb.Result) {
	r := rand.New(rand.NewPCG(1, 1))
	verdict := func(p float64) pb.Verdict {
		switch x := r.Float64(); {
		case x < 0.02:
			return pb.Verdict_VERDICT_ERRORED
		case x < p:
			return pb.Verdict_VERDICT_PASSED
		}
		return pb.Verdict_VERDICT_FAILED
	}
	res := func(skill, name string, epoch int, v pb.Verdict, tokens int64) *pb.Result {
		return &pb.Result{
			Skill: skill, CaseName: name, Epoch: int32(epoch), Verdict: v, Agent: "default",
			Usage: &pb.Usage{PromptTokens: tokens, CompletionTokens: 100, Cost: 0.01}, Timings: &pb.Timings{TotalMs: r.Int64N(60000)},
			Model: "model-x", JudgeModel: "judge-y", JudgePrompt: "prompt/1", CaseDigest: "sha256:" + name,
		}
	}
	for i := range n {
		skill := fmt.Sprintf("skill-%04d", i%(n/100))
		name := fmt.Sprintf("case-%06d", i)
		p := r.Float64()
		for e := 1; e <= epochs; e++ {
			a = append(a, res(skill, name, e, verdict(p), 1000+r.Int64N(2000)))
			b = append(b, res(skill, name, e, verdict(p+0.05), 1200+r.Int64N(2000)))
		}
	}
	return a, b
}
