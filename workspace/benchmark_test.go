package workspace

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/internal/testutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// benchResult is one job of the benchmark fixtures: n assertions of which passed pass.
func benchResult(name string, epoch int, v pb.Verdict, passed, n int, ms, tokens int64) *pb.Result {
	r := &pb.Result{
		Skill: "pdf-tools", CaseName: name, Epoch: int32(epoch), Verdict: v, Model: "model-x",
		Timings: &pb.Timings{TotalMs: ms}, Usage: &pb.Usage{PromptTokens: tokens},
	}
	for i := range n {
		r.Assertions = append(r.Assertions, &pb.AssertionResult{Type: "output_contains", Expected: "word", Passed: i < passed})
	}
	if v == pb.Verdict_VERDICT_ERRORED {
		r.Assertions, r.Reason = nil, "no agent configured"
	}
	return r
}

func benchFixture() map[string][]*pb.Result {
	return map[string][]*pb.Result{
		WithSkill: {
			benchResult("eval-2", 1, pb.Verdict_VERDICT_PASSED, 2, 2, 40000, 3800),
			benchResult("eval-2", 2, pb.Verdict_VERDICT_FAILED, 1, 2, 50000, 4200),
			benchResult("summary", 1, pb.Verdict_VERDICT_PASSED, 1, 1, 30000, 3000),
			benchResult("summary", 2, pb.Verdict_VERDICT_ERRORED, 0, 0, 100, 0),
		},
		WithoutSkill: {
			benchResult("eval-2", 1, pb.Verdict_VERDICT_FAILED, 0, 2, 30000, 2000),
			benchResult("eval-2", 2, pb.Verdict_VERDICT_FAILED, 1, 2, 35000, 2400),
			benchResult("summary", 1, pb.Verdict_VERDICT_FAILED, 0, 1, 20000, 1500),
			benchResult("summary", 2, pb.Verdict_VERDICT_PASSED, 1, 1, 25000, 1700),
		},
	}
}

func TestBenchmarkGolden(t *testing.T) {
	dir := t.TempDir()
	w, err := New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteBenchmark(BenchmarkOf("pdf-tools", benchFixture(), time.Date(2026, 1, 15, 10, 30, 0, 0, time.UTC))); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "pdf-tools", "iteration-1", "benchmark.json"))
	if err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, filepath.Join("testdata", "benchmark.golden.json"), got)
}

// TestBenchmarkFieldNames: the names skill-creator's schema (references/schemas.md) gives,
// which its viewer reads exactly.
func TestBenchmarkFieldNames(t *testing.T) {
	b, err := json.Marshal(BenchmarkOf("pdf-tools", benchFixture(), time.Unix(0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	keys := func(v any) []string {
		m, _ := v.(map[string]any)
		return slices.Sorted(func(yield func(string) bool) {
			for k := range m {
				if !yield(k) {
					return
				}
			}
		})
	}
	summary := doc["run_summary"].(map[string]any)
	run := doc["runs"].([]any)[0].(map[string]any)
	tests := []struct {
		name string
		got  []string
		want []string
	}{
		{"top level", keys(doc), []string{"metadata", "notes", "run_summary", "runs"}},
		{"metadata", keys(doc["metadata"]), []string{"analyzer_model", "evals_run", "executor_model", "runs_per_configuration", "skill_name", "skill_path", "timestamp"}},
		{"run", keys(run), []string{"configuration", "eval_id", "eval_name", "expectations", "notes", "result", "run_number"}},
		{"run result", keys(run["result"]), []string{"errors", "failed", "pass_rate", "passed", "time_seconds", "tokens", "tool_calls", "total"}},
		{"run_summary", keys(summary), []string{"delta", "with_skill", "without_skill"}},
		{"configuration summary", keys(summary["with_skill"]), []string{"decided", "errored", "pass_rate", "skipped", "time_seconds", "timed_out", "tokens"}},
		{"stat", keys(summary["with_skill"].(map[string]any)["tokens"]), []string{"max", "mean", "min", "stddev"}},
		{"delta", keys(summary["delta"]), []string{"pass_rate", "time_seconds", "tokens"}},
		{"expectation", keys(run["expectations"].([]any)[0]), []string{"evidence", "passed", "text"}},
	}
	for _, tt := range tests {
		if !slices.Equal(tt.got, tt.want) {
			t.Errorf("%s: keys %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

func TestBenchmarkFigures(t *testing.T) {
	b := BenchmarkOf("pdf-tools", benchFixture(), time.Unix(0, 0))
	with := b.RunSummary.Configurations[WithSkill]
	// The errored run is left out: three runs, pass rates 1, 0.5, 1.
	if with.PassRate == nil || *with.PassRate != (Stat{Mean: 0.8333, Stddev: 0.2887, Min: 0.5, Max: 1}) || with.Decided != 3 || with.Errored != 1 {
		t.Errorf("with_skill pass_rate %+v over %d decided runs, %d errored", with.PassRate, with.Decided, with.Errored)
	}
	if d := b.RunSummary.Delta; d["pass_rate"] != "+0.46" || d["time_seconds"] != "+12.5" || d["tokens"] != "+1767" {
		t.Errorf("delta %v", d)
	}
	if !slices.Equal(b.Metadata.EvalsRun, []int{2, 3}) || b.Metadata.RunsPerConfiguration != 2 || b.Metadata.ExecutorModel != "model-x" {
		t.Errorf("metadata %+v", b.Metadata)
	}
	if len(b.Notes) != 1 {
		t.Errorf("notes %q, want one about the errored run", b.Notes)
	}
	for _, tt := range []struct {
		x        float64
		decimals int
		want     string
	}{{0.5, 2, "+0.50"}, {-13, 1, "-13.0"}, {1700, 0, "+1700"}, {-0.001, 2, "+0.00"}, {0, 1, "+0.0"}} {
		if got := signed(tt.x, tt.decimals); got != tt.want {
			t.Errorf("signed(%v, %d) = %q, want %q", tt.x, tt.decimals, got, tt.want)
		}
	}
}

// TestBenchmarkAllErroredArm: an arm whose every epoch errored or timed out has no pass rate
// (null, not 0.0), counts what it left out, and gives no delta: before, it read as a pass rate
// of 0 and a delta that credited the skill with every errored baseline.
func TestBenchmarkAllErroredArm(t *testing.T) {
	conf := benchFixture()
	conf[WithoutSkill] = []*pb.Result{
		benchResult("eval-2", 1, pb.Verdict_VERDICT_ERRORED, 0, 0, 0, 0),
		benchResult("eval-2", 2, pb.Verdict_VERDICT_TIMED_OUT, 0, 0, 0, 0),
		benchResult("summary", 1, pb.Verdict_VERDICT_ERRORED, 0, 0, 0, 0),
	}
	b := BenchmarkOf("pdf-tools", conf, time.Unix(0, 0))
	base := b.RunSummary.Configurations[WithoutSkill]
	if base.PassRate != nil || base.Tokens != nil || base.Decided != 0 || base.Errored != 2 || base.TimedOut != 1 {
		t.Errorf("without_skill %+v, want no stats, 2 errored and 1 timed out", base)
	}
	if b.RunSummary.Delta != nil {
		t.Errorf("delta %v, want none against an arm with no decided run", b.RunSummary.Delta)
	}
	doc, err := json.Marshal(b.RunSummary)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), `"without_skill":{"pass_rate":null`) {
		t.Errorf("run_summary %s: want without_skill's pass_rate null", doc)
	}
	if !slices.ContainsFunc(b.Notes, func(n string) bool { return strings.Contains(n, "no delta") }) {
		t.Errorf("notes %q do not say why there is no delta", b.Notes)
	}
}
