package report

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	skillfleetv1 "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// benchRun is 100,000 results over 1,000 cases of 100 epochs each (confidence 0.9): most
// pass, one case in ten fails in some epochs, with 8 KiB outputs the Builder must cap, and
// every hundredth result is delivered twice.
func benchRun() ([]PlannedCase, []*skillfleetv1.Result) {
	const cases, epochs = 1000, 100
	big := strings.Repeat("the agent said something long and unhelpful\n", 190) // ~8 KiB
	var planned []PlannedCase
	results := make([]*skillfleetv1.Result, 0, cases*epochs+cases*epochs/100)
	for c := range cases {
		skill, name := fmt.Sprintf("skill-%03d", c/10), fmt.Sprintf("case-%d", c)
		planned = append(planned, PlannedCase{Skill: skill, Case: name, Kind: skillfleetv1.CaseKind_CASE_KIND_PROMPT, Epochs: epochs, Confidence: 0.9, File: skill + "/test.cases", Line: c})
	}
	for e := 1; e <= epochs; e++ { // epochs interleaved across cases, as workers deliver them
		for c := range cases {
			pc := planned[c]
			r := &skillfleetv1.Result{
				JobId: fmt.Sprintf("3f9a1c2b-%016x", uint64(c)*1_000_003+uint64(e)), RunId: "r-bench",
				Skill: pc.Skill, CaseName: pc.Case, Epoch: int32(e), Verdict: vPassed, Attempt: 1,
				Kind:    skillfleetv1.CaseKind_CASE_KIND_PROMPT,
				Timings: &skillfleetv1.Timings{SandboxStartMs: 20, ExecutionMs: 1500},
				Assertions: []*skillfleetv1.AssertionResult{
					{Type: "output_contains", Passed: true, Expected: "hello", Actual: "…hello…", Message: "ok"},
					{Type: "semantic_match", Passed: true, Expected: "a greeting", Message: "judge: yes"},
				},
				Output: "hello there",
			}
			if c%10 == 0 && e%7 == 0 {
				r.Verdict = vFailed
				r.Assertions[1].Passed = false
				r.Output, r.Stderr = big, big
			}
			results = append(results, r)
			if (c+e)%100 == 0 {
				results = append(results, r) // redelivered duplicate
			}
		}
	}
	return planned, results
}

func BenchmarkBuilder100k(b *testing.B) {
	planned, results := benchRun()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		bl := NewBuilder("r-bench", planned)
		for _, r := range results {
			bl.Add(r)
		}
		if !bl.Done() || bl.JobsDone() != 100_000 {
			b.Fatalf("done=%v jobs=%d", bl.Done(), bl.JobsDone())
		}
		bl.Counts()
	}
	b.StopTimer()

	// What one Builder holds once every result is in, the results themselves aside.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	bl := NewBuilder("r-bench", planned)
	for _, r := range results {
		bl.Add(r)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc)-float64(before.HeapAlloc), "retained-heap-B")
	b.ReportMetric((float64(after.HeapAlloc)-float64(before.HeapAlloc))/100_000, "retained-B/job")
	runtime.KeepAlive(bl)
	runtime.KeepAlive(results)
}

func BenchmarkReport1kCases(b *testing.B) {
	planned, results := benchRun()
	bl := NewBuilder("r-bench", planned)
	for _, r := range results {
		bl.Add(r)
	}
	b.ReportAllocs()
	for b.Loop() {
		bl.Report()
	}
}

// BenchmarkFinalReport100kCases: what a million-job run's finish does with its Builder (100,000
// cases of 10 epochs, one epoch in twenty failed with a line of output): the report taken and
// encoded as the coordinator stores it. Its allocations are what the collector must find room
// for at the end of a run, under the coordinator's soft memory limit.
func BenchmarkFinalReport100kCases(b *testing.B) {
	const cases, epochs = 100000, 10
	var planned []PlannedCase
	for c := range cases {
		skill, name := fmt.Sprintf("skill-%03d", c/100), fmt.Sprintf("case-%d", c)
		planned = append(planned, PlannedCase{Skill: skill, Case: name, Kind: skillfleetv1.CaseKind_CASE_KIND_PROMPT, Epochs: epochs, Confidence: 1, File: skill + "/cases.yaml", Line: c})
	}
	bl := NewBuilder("r-bench", planned)
	for e := 1; e <= epochs; e++ {
		for c := range cases {
			pc := planned[c]
			r := &skillfleetv1.Result{
				JobId: fmt.Sprintf("j%016x", uint64(c)*1_000_003+uint64(e)), RunId: "r-bench",
				Skill: pc.Skill, CaseName: pc.Case, Epoch: int32(e), Verdict: vPassed, Attempt: 1,
				Kind:       skillfleetv1.CaseKind_CASE_KIND_PROMPT,
				Assertions: []*skillfleetv1.AssertionResult{{Type: "output_contains", Passed: true, Expected: "output contains READY", Actual: "READY", Message: "ok"}},
				Output:     "READY",
			}
			if (c*7+e*13)%20 == 0 {
				r.Verdict = vFailed
				r.Assertions[0].Passed = false
				r.Output, r.Stdout = "made to fail", "skillfleet fleet simulator: simulated output of a job, one line.\n"
			}
			bl.Add(r)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		rep := bl.Report()
		if _, err := json.Marshal(rep); err != nil {
			b.Fatal(err)
		}
	}
}
