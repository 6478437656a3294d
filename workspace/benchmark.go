package workspace

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// The configurations of skill-creator's benchmark.json; its viewer groups runs by these exact
// strings.
const (
	WithoutSkill = "without_skill"
	OldSkill     = "old_skill"
)

// Benchmark is skill-creator's benchmark.json for one skill (references/schemas.md in
// anthropics/skills' skill-creator); its viewer reads these field names exactly.
type Benchmark struct {
	Metadata   BenchmarkMetadata `json:"metadata"`
	Runs       []BenchmarkRun    `json:"runs"`
	RunSummary RunSummary        `json:"run_summary"`
	Notes      []string          `json:"notes"`
}

// BenchmarkMetadata is benchmark.json's metadata.
type BenchmarkMetadata struct {
	SkillName     string `json:"skill_name"`
	SkillPath     string `json:"skill_path"`
	ExecutorModel string `json:"executor_model"`
	AnalyzerModel string `json:"analyzer_model"`
	Timestamp     string `json:"timestamp"`
	// EvalsRun lists the eval ids, as runs[].eval_id has them.
	EvalsRun             []int `json:"evals_run"`
	RunsPerConfiguration int   `json:"runs_per_configuration"`
}

// BenchmarkRun is one job: one eval in one configuration, one epoch.
type BenchmarkRun struct {
	// EvalID is the number of an evals.json case ("eval-3": 3), else the case's place in
	// name order from 1; EvalName is the case name.
	EvalID        int           `json:"eval_id"`
	EvalName      string        `json:"eval_name"`
	Configuration string        `json:"configuration"`
	RunNumber     int           `json:"run_number"`
	Result        RunResult     `json:"result"`
	Expectations  []Expectation `json:"expectations"`
	Notes         []string      `json:"notes"`
}

// RunResult is a run's result: its assertions' pass rate, time and tokens.
type RunResult struct {
	PassRate    float64 `json:"pass_rate"`
	Passed      int     `json:"passed"`
	Failed      int     `json:"failed"`
	Total       int     `json:"total"`
	TimeSeconds float64 `json:"time_seconds"`
	Tokens      int64   `json:"tokens"`
	ToolCalls   int     `json:"tool_calls"`
	// Errors is 1 for a job that errored or timed out (its assertions decided nothing), plus
	// the assertions that could not be decided.
	Errors int `json:"errors"`
}

// Stat is a measure over the runs of a configuration.
type Stat struct {
	Mean   float64 `json:"mean"`
	Stddev float64 `json:"stddev"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// ConfigurationSummary is run_summary's entry for one configuration. The stats are over its
// decided runs (passed or failed); errored, timed-out and skipped runs are counted apart, as
// the comparison counts them, and a configuration without a decided run has no stats (null):
// an arm whose every epoch errored has no pass rate, not one of 0.
type ConfigurationSummary struct {
	PassRate    *Stat `json:"pass_rate"`
	TimeSeconds *Stat `json:"time_seconds"`
	Tokens      *Stat `json:"tokens"`
	// Decided counts the runs the stats are over; Errored, TimedOut and Skipped those left out.
	Decided  int `json:"decided"`
	Errored  int `json:"errored"`
	TimedOut int `json:"timed_out"`
	Skipped  int `json:"skipped"`
}

// RunSummary is run_summary: one entry per configuration, and "delta" (with_skill minus the
// baseline, as strings like "+0.50") when there is a baseline.
type RunSummary struct {
	Configurations map[string]ConfigurationSummary
	Delta          map[string]string
}

// MarshalJSON writes the configurations and "delta" side by side, as the schema has them.
func (s RunSummary) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(s.Configurations)+1)
	for k, v := range s.Configurations {
		m[k] = v
	}
	if s.Delta != nil {
		m["delta"] = s.Delta
	}
	return json.Marshal(m)
}

// BenchmarkOf makes one skill's benchmark.json from its results per configuration
// (configuration → the results its report counts). Errored and timed-out jobs are listed in
// runs with their errors but left out of run_summary, which says so in notes: an errored job
// is neither a pass nor a fail. now is the benchmark's timestamp.
func BenchmarkOf(skill string, configurations map[string][]*pb.Result, now time.Time) Benchmark {
	b := Benchmark{
		Metadata:   BenchmarkMetadata{SkillName: skill, Timestamp: now.UTC().Format(time.RFC3339), EvalsRun: []int{}},
		Runs:       []BenchmarkRun{},
		RunSummary: RunSummary{Configurations: map[string]ConfigurationSummary{}},
		Notes:      []string{},
	}
	ids := evalIDs(configurations)
	models := map[string]bool{}
	for _, conf := range slices.Sorted(maps.Keys(configurations)) {
		var rates, secs, tokens []float64
		left := 0
		var sum ConfigurationSummary
		for _, r := range configurations[conf] {
			run := runOf(r, conf, ids[r.GetCaseName()])
			b.Runs = append(b.Runs, run)
			b.Metadata.RunsPerConfiguration = max(b.Metadata.RunsPerConfiguration, int(r.GetEpoch()))
			if m := r.GetModel(); m != "" {
				models[m] = true
			}
			switch r.GetVerdict() {
			case pb.Verdict_VERDICT_PASSED, pb.Verdict_VERDICT_FAILED:
				rates = append(rates, run.Result.PassRate)
				secs = append(secs, run.Result.TimeSeconds)
				tokens = append(tokens, float64(run.Result.Tokens))
			case pb.Verdict_VERDICT_ERRORED:
				sum.Errored++
				left++
			case pb.Verdict_VERDICT_TIMED_OUT:
				sum.TimedOut++
				left++
			default:
				sum.Skipped++
				left++
			}
		}
		sum.Decided = len(rates)
		sum.PassRate, sum.TimeSeconds, sum.Tokens = statOf(rates), statOf(secs), statOf(tokens)
		b.RunSummary.Configurations[conf] = sum
		if left > 0 {
			b.Notes = append(b.Notes, fmt.Sprintf("%s: %d errored, timed-out or skipped runs left out of run_summary", conf, left))
		}
	}
	slices.SortFunc(b.Runs, func(x, y BenchmarkRun) int {
		return cmp.Or(cmp.Compare(x.EvalID, y.EvalID), cmp.Compare(x.Configuration, y.Configuration), cmp.Compare(x.RunNumber, y.RunNumber))
	})
	for _, id := range ids {
		b.Metadata.EvalsRun = append(b.Metadata.EvalsRun, id)
	}
	slices.Sort(b.Metadata.EvalsRun)
	b.Metadata.ExecutorModel = strings.Join(slices.Sorted(maps.Keys(models)), ", ")
	with, ok := b.RunSummary.Configurations[WithSkill]
	base, hasBase := b.RunSummary.Configurations[WithoutSkill]
	if !hasBase {
		base, hasBase = b.RunSummary.Configurations[OldSkill]
	}
	switch {
	case ok && hasBase && (with.Decided == 0 || base.Decided == 0):
		b.Notes = append(b.Notes, "no delta: a configuration has no decided run (every one errored, timed out or was skipped)")
	case ok && hasBase:
		b.RunSummary.Delta = map[string]string{
			"pass_rate":    signed(with.PassRate.Mean-base.PassRate.Mean, 2),
			"time_seconds": signed(with.TimeSeconds.Mean-base.TimeSeconds.Mean, 1),
			"tokens":       signed(with.Tokens.Mean-base.Tokens.Mean, 0),
		}
	}
	return b
}

// WriteBenchmark writes a skill's benchmark.json into its directory of this export:
// DIR/<skill>/iteration-<N>/benchmark.json, beside the eval directories Add writes.
func (w *Writer) WriteBenchmark(b Benchmark) error {
	it, err := w.iterationDir(b.Metadata.SkillName)
	if err != nil {
		return err
	}
	return writeJSON(filepath.Join(it, "benchmark.json"), b)
}

// runOf is one result as a benchmark run.
func runOf(r *pb.Result, conf string, id int) BenchmarkRun {
	g := gradingOf(r)
	run := BenchmarkRun{
		EvalID: id, EvalName: r.GetCaseName(), Configuration: conf, RunNumber: int(r.GetEpoch()),
		Expectations: g.Expectations, Notes: []string{},
		Result: RunResult{
			PassRate: g.Summary.PassRate, Passed: g.Summary.Passed, Failed: g.Summary.Failed, Total: g.Summary.Total,
			TimeSeconds: timingOf(r).TotalDurationSeconds, Tokens: timingOf(r).TotalTokens,
			ToolCalls: len(r.GetTranscript().GetToolCalls()),
		},
	}
	for _, a := range r.GetAssertions() {
		if a.GetErrored() {
			run.Result.Errors++
		}
	}
	if v := r.GetVerdict(); v == pb.Verdict_VERDICT_ERRORED || v == pb.Verdict_VERDICT_TIMED_OUT {
		run.Result.Errors++
		run.Notes = append(run.Notes, g.Verdict+": "+r.GetReason())
	}
	return run
}

// evalIDs numbers the cases: an evals.json case by its id ("eval-3": 3), the others after the
// largest such id, in name order.
func evalIDs(configurations map[string][]*pb.Result) map[string]int {
	ids := map[string]int{}
	var others []string
	top := 0
	for _, rs := range configurations {
		for _, r := range rs {
			name := r.GetCaseName()
			if _, ok := ids[name]; ok {
				continue
			}
			if n, err := strconv.Atoi(strings.TrimPrefix(name, "eval-")); err == nil && strings.HasPrefix(name, "eval-") && n > 0 {
				ids[name] = n
				top = max(top, n)
				continue
			}
			ids[name] = 0
			others = append(others, name)
		}
	}
	slices.Sort(others)
	for i, name := range others {
		ids[name] = top + i + 1
	}
	return ids
}

// statOf is the mean, sample standard deviation (0 for fewer than two values), min and max.
func statOf(xs []float64) *Stat {
	if len(xs) == 0 {
		return nil
	}
	s := Stat{Min: xs[0], Max: xs[0]}
	for _, x := range xs {
		s.Mean += x
		s.Min, s.Max = min(s.Min, x), max(s.Max, x)
	}
	s.Mean /= float64(len(xs))
	if len(xs) > 1 {
		var ss float64
		for _, x := range xs {
			ss += (x - s.Mean) * (x - s.Mean)
		}
		s.Stddev = math.Sqrt(ss / float64(len(xs)-1))
	}
	s.Mean, s.Stddev = round4(s.Mean), round4(s.Stddev)
	return &s
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// signed renders a difference as the schema's delta strings do: "+0.50", "-13.0", "+1700".
func signed(x float64, decimals int) string {
	s := strconv.FormatFloat(x, 'f', decimals, 64)
	if !strings.HasPrefix(s, "-") {
		s = "+" + s
	}
	if strings.Trim(s, "+-0.") == "" {
		s = "+" + strings.TrimLeft(s, "+-")
	}
	return s
}
