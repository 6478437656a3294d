package fleet

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/skillfleet/skillfleet/coordinator"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
	"github.com/skillfleet/skillfleet/worker"
)

// mixCase is one case of a generated suite whose epochs pass with a known probability.
type mixCase struct {
	runs       int
	confidence float64
	// pass and errored are the chances of an epoch passing and of its erroring; it fails
	// otherwise.
	pass, errored float64
	// auto writes `runs: auto` with runs as its max_runs.
	auto bool
}

// mixLine is count cases alike.
type mixLine struct {
	mixCase
	count int
}

// curtailMix is the suite of the curtailment tests and of the BENCHMARKS.md figures: mostly
// stable cases, some flaky, a few broken or erroring, under the `runs` and `confidence` teams
// write. It repeats each line count times.
var curtailMix = []mixLine{
	{mixCase{5, 0.8, 0.98, 0, false}, 10},   // stable, runs: 5 at 0.8
	{mixCase{10, 0.9, 0.97, 0, false}, 6},   // stable, runs: 10 at 0.9
	{mixCase{3, 1, 0.99, 0, false}, 6},      // stable, runs: 3, every one must pass
	{mixCase{5, 0.8, 0.75, 0, false}, 4},    // flaky near the bar
	{mixCase{10, 0.7, 0.6, 0.05, false}, 4}, // flaky, some infrastructure errors
	{mixCase{5, 0.8, 0.05, 0, false}, 3},    // broken
	{mixCase{5, 0.6, 0.3, 0.3, false}, 2},   // erroring half the time
}

// autoMix is a suite of `runs: auto` cases (confidence 0.8, the zone 0.7 to 0.9): stable,
// inside the zone, at its edges and broken, with max_runs 40.
var autoMix = []mixLine{
	{mixCase{40, 0.8, 0.98, 0, true}, 6},
	{mixCase{40, 0.8, 0.9, 0, true}, 4},
	{mixCase{40, 0.8, 0.8, 0.05, true}, 4},
	{mixCase{40, 0.8, 0.7, 0, true}, 4},
	{mixCase{40, 0.8, 0.2, 0, true}, 4},
}

// mixName encodes a case's probabilities in its name, for the scripted executor to read.
func mixName(c mixCase, i int) string {
	return fmt.Sprintf("p%03d-e%03d-%d", int(c.pass*1000+0.5), int(c.errored*1000+0.5), i)
}

// writeMix writes mix as one skill of command cases and returns its bundle.
func writeMix(t *testing.T, mix []mixLine) []byte {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "mix")
	if err := os.MkdirAll(filepath.Join(dir, "tests", "cases"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: mix\ndescription: Cases of known pass probabilities. Use when testing curtailment.\n---\n\nBody.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range mix {
		for range line.count {
			name := mixName(line.mixCase, n)
			runs := fmt.Sprintf("runs: %d", line.runs)
			if line.auto {
				runs = fmt.Sprintf("runs: auto\nmax_runs: %d", line.runs)
			}
			yaml := fmt.Sprintf("name: %s\n%s\nconfidence: %g\ninput:\n  command: \"true\"\nexpected:\n  exit-code: 0\n", name, runs, line.confidence)
			if err := os.WriteFile(filepath.Join(dir, "tests", "cases", name+".yaml"), []byte(yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	s := suite.Load([]string{root}, skill.Options{})
	if s.Diagnostics.HasErrors() {
		t.Fatalf("mix suite: %v", s.Diagnostics)
	}
	var buf bytes.Buffer
	if _, err := suite.WriteBundle(&buf, s.Graph, s.Catalog.Skills()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// oddsExecutor decides each epoch from its case's probabilities (mixName) and a hash of the
// seed, case and epoch: the same epoch has the same outcome in every run, whichever worker
// runs it, so two runs of the suite differ only in which epochs they run.
type oddsExecutor struct {
	seed  uint64
	calls atomic.Int64
}

// Execute implements worker.Executor.
func (e *oddsExecutor) Execute(_ context.Context, job *pb.Job, _ string) (*pb.Result, error) {
	e.calls.Add(1)
	var pass, errored, i int
	if _, err := fmt.Sscanf(job.GetCaseName(), "p%03d-e%03d-%d", &pass, &errored, &i); err != nil {
		return nil, err
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%d", e.seed, job.GetCaseName(), job.GetEpoch())
	u := float64(h.Sum64()>>11) / (1 << 53)
	switch {
	case u < float64(pass)/1000:
		return &pb.Result{Verdict: pb.Verdict_VERDICT_PASSED, Assertions: []*pb.AssertionResult{{Type: "exit_code", Passed: true, Message: "scripted"}}}, nil
	case u < float64(pass+errored)/1000:
		return &pb.Result{Verdict: pb.Verdict_VERDICT_ERRORED, Reason: "scripted infrastructure error",
			Assertions: []*pb.AssertionResult{{Type: "exit_code", Errored: true, Message: "scripted"}}}, nil
	default:
		return &pb.Result{Verdict: pb.Verdict_VERDICT_FAILED, Assertions: []*pb.AssertionResult{{Type: "exit_code", Message: "scripted"}}}, nil
	}
}

// mixRun runs the mix on an in-process fleet, with or without curtailment, and returns each
// case's status, its epochs run, the jobs the executor ran and the final status.
func mixRun(t *testing.T, mix []mixLine, seed uint64, keepAll bool) (map[string]string, map[string]int, int64, *pb.RunStatus) {
	t.Helper()
	exec := &oddsExecutor{seed: seed}
	f, err := StartInProcess(context.Background(), InProcessConfig{
		DataDir: t.TempDir(), Workers: 2, Slots: 2, Queue: testQueue(), Executor: exec,
		Coordinator: coordinator.Config{KeepAllEpochs: keepAll},
		Worker:      worker.Config{RetryDelay: 50 * time.Millisecond, FetchWait: 100 * time.Millisecond, DrainGrace: 5 * time.Second},
		Log:         zaptest.NewLogger(t).Named(t.Name()),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(context.Background())
	st, err := f.Coordinator.Submit(context.Background(), bytes.NewReader(writeMix(t, mix)), &pb.RunSpec{Name: "mix"})
	if err != nil {
		t.Fatal(err)
	}
	fin := wait(t, f.Coordinator, st.GetId())
	if fin.GetState() != pb.RunState_RUN_STATE_COMPLETED {
		t.Fatalf("run %v: %s", fin.GetState(), fin.GetReason())
	}
	rep, err := f.Coordinator.Report(context.Background(), st.GetId())
	if err != nil {
		t.Fatal(err)
	}
	status, run := map[string]string{}, map[string]int{}
	for _, c := range rep.Cases {
		status[c.Case], run[c.Case] = c.Status, c.EpochsRun
		if c.Undecided {
			status[c.Case] += " (undecided)"
		}
		if c.EpochsPlanned != c.Epochs || c.EpochsRun > c.EpochsPlanned {
			t.Errorf("%s: %d of %d (runs %d) epochs run", c.Case, c.EpochsRun, c.EpochsPlanned, c.Epochs)
		}
	}
	return status, run, exec.calls.Load(), fin
}

// TestCurtailmentKeepsEveryVerdict runs a suite of cases with known pass probabilities twice
// per seed, on the in-process fleet: once running every epoch, once curtailed. Every epoch has
// the same outcome in both, so every case must get the same verdict; the curtailed run must
// run fewer jobs, and its status must count them honestly.
func TestCurtailmentKeepsEveryVerdict(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		full, fullRun, fullCalls, fullSt := mixRun(t, curtailMix, seed, true)
		cut, cutRun, cutCalls, cutSt := mixRun(t, curtailMix, seed, false)
		if len(full) != len(cut) || len(full) == 0 {
			t.Fatalf("seed %d: %d cases in full, %d curtailed", seed, len(full), len(cut))
		}
		planned, ran, decided := 0, 0, map[string]int{}
		for name, v := range full {
			if cut[name] != v {
				t.Errorf("seed %d: %s is %s with every epoch, %s curtailed", seed, name, v, cut[name])
			}
			planned += fullRun[name]
			ran += cutRun[name]
			decided[v]++
		}
		if int64(planned) != fullCalls || fullSt.GetDoneJobs() != fullSt.GetTotalJobs() || int(fullSt.GetTotalJobs()) != planned || fullSt.GetCurtailed() {
			t.Errorf("seed %d: full run: %d epochs in the report, %d executed, status %d/%d, curtailed %v",
				seed, planned, fullCalls, fullSt.GetDoneJobs(), fullSt.GetTotalJobs(), fullSt.GetCurtailed())
		}
		// Jobs of a settled case already running when it settled still ran (and were cut
		// short); the report counts only the epochs whose results were taken.
		if cutCalls >= fullCalls || ran >= planned || int(cutSt.GetDoneJobs()) != ran || cutSt.GetDoneJobs() != cutSt.GetTotalJobs() ||
			int(cutSt.GetTotalJobs()+cutSt.GetWithdrawnJobs()) != planned {
			t.Errorf("seed %d: curtailed run: %d epochs in the report of %d, %d executed of %d, status %d/%d with %d withdrawn",
				seed, ran, planned, cutCalls, fullCalls, cutSt.GetDoneJobs(), cutSt.GetTotalJobs(), cutSt.GetWithdrawnJobs())
		}
		t.Logf("seed %d: verdicts %v; epochs %d of %d (%.0f%%), jobs executed %d of %d",
			seed, decided, ran, planned, 100*float64(ran)/float64(planned), cutCalls, fullCalls)
	}
}

// TestRunsAutoKeepsEveryVerdict: the same for `runs: auto` cases, whose sequential test reads
// the epochs in order: every verdict, undecided mark included, is the one all max_runs
// epochs give, in fewer jobs.
func TestRunsAutoKeepsEveryVerdict(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		full, _, fullCalls, _ := mixRun(t, autoMix, seed, true)
		cut, cutRun, cutCalls, cutSt := mixRun(t, autoMix, seed, false)
		decided := map[string]int{}
		ran := 0
		for name, v := range full {
			if cut[name] != v {
				t.Errorf("seed %d: %s is %s with every epoch, %s curtailed", seed, name, v, cut[name])
			}
			decided[v]++
			ran += cutRun[name]
		}
		if cutCalls >= fullCalls || int(cutSt.GetDoneJobs()) != ran {
			t.Errorf("seed %d: %d jobs executed curtailed, %d with every epoch; %d epochs reported, status %d done",
				seed, cutCalls, fullCalls, ran, cutSt.GetDoneJobs())
		}
		t.Logf("seed %d: verdicts %v; epochs %d of %d (%.0f%%), jobs executed %d",
			seed, decided, ran, fullCalls, 100*float64(ran)/float64(fullCalls), cutCalls)
	}
}
