package fleet

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/history"
	"github.com/skillfleet/skillfleet/internal/testutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
	"github.com/skillfleet/skillfleet/worker"
)

// tokensPerJob is what the benchmark's executor reports each job it runs spent, as an agent
// would: what the benchmark measures is which cells run, not what a model answers.
const tokensPerJob = 1000

// tokenSpender passes every job it runs and reports tokensPerJob tokens for it.
type tokenSpender struct{ runs atomic.Int64 }

func (s *tokenSpender) Execute(context.Context, *pb.Job, string) (*pb.Result, error) {
	s.runs.Add(1)
	return &pb.Result{Verdict: pb.Verdict_VERDICT_PASSED, Assertions: []*pb.AssertionResult{{Type: "output_contains", Passed: true}},
		Usage: &pb.Usage{PromptTokens: tokensPerJob * 4 / 5, CompletionTokens: tokensPerJob / 5}}, nil
}

// dagSuite writes n skills with one prompt case each; skill i requires up to two earlier
// skills chosen by rng, and returns each skill's requirements.
func dagSuite(tb testing.TB, root string, n int, rng *rand.Rand) [][]int {
	reqs := make([][]int, n)
	for i := range n {
		if i > 0 {
			for range rng.IntN(3) {
				j := rng.IntN(i)
				if !slices.Contains(reqs[i], j) {
					reqs[i] = append(reqs[i], j)
				}
			}
		}
		var fm strings.Builder
		fmt.Fprintf(&fm, "---\nname: s%04d\ndescription: Synthetic skill %d. Use when measuring changed-only runs.\nmetadata:\n  version: \"1.0.0\"\n", i, i)
		if len(reqs[i]) > 0 {
			fm.WriteString("requires:\n")
			for _, j := range reqs[i] {
				fmt.Fprintf(&fm, "  - skill: s%04d\n    version: \"1.0.0\"\n", j)
			}
		}
		fm.WriteString("test:\n  cases: cases.yaml\n---\n\nAnswer READY. See [the notes](references/notes.md).\n")
		writeFile(tb, filepath.Join(root, fmt.Sprintf("s%04d", i), "SKILL.md"), fm.String())
		writeFile(tb, filepath.Join(root, fmt.Sprintf("s%04d", i), "references", "notes.md"), "READY is the answer.\n")
		writeFile(tb, filepath.Join(root, fmt.Sprintf("s%04d", i), "cases.yaml"),
			"cases:\n  - name: ready\n    input: \"Say READY\"\n    assertions:\n      output_contains: [\"READY\"]\n")
	}
	return reqs
}

func writeFile(tb testing.TB, path, body string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// dependents counts the skills whose requires closure holds a changed skill (the changed ones
// included), walking the requirements directly: the benchmark's own expectation, computed
// apart from the bundle's closure digests.
func dependents(reqs [][]int, changed map[int]bool) int {
	stale := make([]bool, len(reqs))
	n := 0
	for i := range reqs { // requirements are earlier skills, so one pass in order suffices
		stale[i] = changed[i]
		for _, j := range reqs[i] {
			stale[i] = stale[i] || stale[j]
		}
		if stale[i] {
			n++
		}
	}
	return n
}

// BenchmarkChangedOnlyNightly: a nightly of 1,000 skills (one prompt case each, requires drawn
// at random), a full run, then 5% of the skills edited and a changed-only run, through the
// in-process fleet with its SQLite history. It reports the tokens of both runs, their ratio,
// and the share of cells that must run, checked against the count it expects.
//
// Two edits: a reference file of each changed skill, which re-runs the changed skills and every
// skill that requires one, directly or not (the dependency graph's count); and each changed
// skill's SKILL.md, which a prompt job's sandbox holds for every skill of the catalog (its agent
// may activate any), so every prompt cell runs again (see coordinator cellKey).
func BenchmarkChangedOnlyNightly(b *testing.B) {
	b.Run("reference-edited", func(b *testing.B) {
		changedOnlyNightly(b, filepath.Join("references", "notes.md"), "READY is the answer.", "READY is the answer, tersely.", dependents)
	})
	b.Run("skill-md-edited", func(b *testing.B) {
		changedOnlyNightly(b, "SKILL.md", "Answer READY.", "Answer READY, tersely.", func(reqs [][]int, _ map[int]bool) int { return len(reqs) })
	})
}

// changedOnlyNightly runs the benchmark with file (relative to a skill's directory) of each
// changed skill edited, from replaced by to; stale is how many cells the edit must re-run.
func changedOnlyNightly(b *testing.B, file, from, to string, stale func([][]int, map[int]bool) int) {
	const skills, changedShare = 1000, 0.05
	ctx := context.Background()
	b.StopTimer()
	for range b.N {
		root := filepath.Join(b.TempDir(), "nightly")
		rng := rand.New(rand.NewPCG(7, 11))
		reqs := dagSuite(b, root, skills, rng)
		exec := &tokenSpender{}
		f, err := StartInProcess(ctx, InProcessConfig{
			DataDir: b.TempDir(), Workers: 2, Slots: 8, Executor: exec, Log: zap.NewNop(),
			Worker:  worker.Config{AgentDigests: map[string]string{"": "sha256:bench-agent"}},
			History: HistoryConfig{Target: filepath.Join(b.TempDir(), "history.db"), Writer: history.WriterConfig{FlushEvery: 50 * time.Millisecond}},
		})
		if err != nil {
			b.Fatal(err)
		}
		runOnce := func(changedOnly bool) (tokens int64, ran int64) {
			s := suite.Load([]string{root}, skill.Options{})
			var bundle bytes.Buffer
			if _, err := suite.WriteBundle(&bundle, s.Graph, s.Catalog.Skills()); err != nil {
				b.Fatal(err)
			}
			before := exec.runs.Load()
			st, err := f.Coordinator.Submit(ctx, bytes.NewReader(bundle.Bytes()), &pb.RunSpec{Name: "nightly", Priority: pb.Priority_PRIORITY_SCHEDULED, ChangedOnly: changedOnly})
			if err != nil {
				b.Fatal(err)
			}
			testutil.Eventually(b, 10*time.Minute, 10*time.Millisecond, func() bool {
				cur, _ := f.Coordinator.Status(ctx, st.GetId())
				return cur.GetState() != pb.RunState_RUN_STATE_RUNNING && cur.GetState() != pb.RunState_RUN_STATE_PENDING
			}, "run %s still running", st.GetId())
			rep, err := f.Coordinator.Report(ctx, st.GetId())
			if err != nil {
				b.Fatal(err)
			}
			if rep.Summary.Passed+rep.Summary.Reused != skills {
				b.Fatalf("summary %+v: want every case passed or reused", rep.Summary)
			}
			return rep.Usage.PromptTokens + rep.Usage.CompletionTokens, exec.runs.Load() - before
		}
		full, fullRan := runOnce(false)
		changed := map[int]bool{}
		for len(changed) < int(changedShare*skills) {
			i := rng.IntN(skills)
			if !changed[i] {
				changed[i] = true
				p := filepath.Join(root, fmt.Sprintf("s%04d", i), file)
				data, err := os.ReadFile(p)
				if err != nil {
					b.Fatal(err)
				}
				edited := strings.Replace(string(data), from, to, 1)
				if edited == string(data) {
					b.Fatalf("%s does not hold %q", p, from)
				}
				writeFile(b, p, edited)
			}
		}
		b.StartTimer()
		start := time.Now()
		co, coRan := runOnce(true)
		b.StopTimer()
		elapsed := time.Since(start)
		want := stale(reqs, changed)
		if coRan != int64(want) {
			b.Errorf("the changed-only run ran %d cells, want %d", coRan, want)
		}
		b.ReportMetric(float64(full), "tokens-full")
		b.ReportMetric(float64(co), "tokens-changed-only")
		b.ReportMetric(float64(co)/float64(full), "token-ratio")
		b.ReportMetric(float64(want)/skills, "stale-share")
		b.ReportMetric(float64(fullRan), "cells-run-full")
		b.ReportMetric(float64(coRan), "cells-run-changed-only")
		b.ReportMetric(elapsed.Seconds(), "s-changed-only-run")
		if err := f.Close(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
