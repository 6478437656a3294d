package fleet

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"
	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/testutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
	"github.com/skillfleet/skillfleet/report"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
	"github.com/skillfleet/skillfleet/worker"
)

const examples = "../examples/skills"

// scripted is an executor whose verdicts come from the test: passed unless fail says
// otherwise. It records concurrency per skill and can block jobs until released.
type scripted struct {
	mu       sync.Mutex
	running  map[string]int
	maxPer   map[string]int
	calls    atomic.Int32
	delay    time.Duration
	fail     func(*pb.Job) bool
	infraErr func(*pb.Job, int32) error
}

func newScripted() *scripted {
	return &scripted{running: map[string]int{}, maxPer: map[string]int{}}
}

func (s *scripted) Execute(ctx context.Context, job *pb.Job, bundleDir string) (*pb.Result, error) {
	n := s.calls.Add(1)
	if s.infraErr != nil {
		if err := s.infraErr(job, n); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	s.running[job.GetSkill()]++
	s.maxPer[job.GetSkill()] = max(s.maxPer[job.GetSkill()], s.running[job.GetSkill()])
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.running[job.GetSkill()]--
		s.mu.Unlock()
	}()
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	passed := s.fail == nil || !s.fail(job)
	v := pb.Verdict_VERDICT_PASSED
	if !passed {
		v = pb.Verdict_VERDICT_FAILED
	}
	return &pb.Result{Verdict: v, Assertions: []*pb.AssertionResult{{Type: "exit_code", Passed: passed, Message: "scripted"}}}, nil
}

func testQueue() queue.Config {
	q := queue.DefaultConfig()
	q.AckWait = time.Second
	q.MaxDeliver = 3
	return q
}

func startFleet(t *testing.T, exec worker.Executor, workers int, reg prometheus.Registerer) *InProcess {
	t.Helper()
	f, err := StartInProcess(context.Background(), InProcessConfig{
		DataDir: t.TempDir(), Workers: workers, Slots: 2, Queue: testQueue(), Executor: exec,
		Worker:   worker.Config{RetryDelay: 50 * time.Millisecond, FetchWait: 100 * time.Millisecond, DrainGrace: 5 * time.Second},
		Log:      zaptest.NewLogger(t).Named(t.Name()),
		Registry: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close(context.Background()) })
	return f
}

func exampleBundle(t *testing.T) []byte {
	t.Helper()
	s := suite.Load([]string{examples}, skill.Options{})
	var buf bytes.Buffer
	if _, err := suite.WriteBundle(&buf, s.Graph, s.Catalog.Skills()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// waitBound is how long wait gives a run. Runs through real sandboxes take most of a minute
// on a 2-core machine doing nothing else (examples/hostile's 38 jobs on two slots: 45-55 s),
// and CI runs them beside the e2e package's image builds: 60 s failed a run that was still
// making progress (31 of 38 jobs done). Only a run that is stuck waits this long.
const waitBound = 4 * time.Minute

// wait blocks until the run is in a final state, failing t after waitBound.
func wait(t *testing.T, c *coordinator.Coordinator, id string) *pb.RunStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	ch, stop, err := c.Subscribe(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { stop() }() // the latest subscription, after any resubscribe
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				st, err := c.Status(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if isFinal(st) {
					return st
				}
				// Dropped as a slow subscriber: subscribe again.
				ch, stop, err = c.Subscribe(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
			}
		case <-ctx.Done():
			st, _ := c.Status(context.Background(), id)
			t.Fatalf("run %s did not finish: %v", id, st)
		}
	}
}

func isFinal(st *pb.RunStatus) bool {
	switch st.GetState() {
	case pb.RunState_RUN_STATE_COMPLETED, pb.RunState_RUN_STATE_CANCELLED, pb.RunState_RUN_STATE_DEADLINE_EXCEEDED, pb.RunState_RUN_STATE_FAILED:
		return true
	}
	return false
}

func submit(t *testing.T, c *coordinator.Coordinator, spec *pb.RunSpec) *pb.RunStatus {
	t.Helper()
	st, err := c.Submit(context.Background(), bytes.NewReader(exampleBundle(t)), spec)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestRunCompletesAndSerialSkillsRunAlone(t *testing.T) {
	exec := newScripted()
	exec.delay = 20 * time.Millisecond
	exec.fail = func(j *pb.Job) bool { return j.GetCaseName() == "usage-error" }
	reg := prometheus.NewRegistry()
	f := startFleet(t, exec, 3, reg)
	st := submit(t, f.Coordinator, &pb.RunSpec{})
	final := wait(t, f.Coordinator, st.GetId())
	if final.GetState() != pb.RunState_RUN_STATE_COMPLETED {
		t.Fatalf("state %v (%s)", final.GetState(), final.GetReason())
	}
	if final.GetDoneJobs() != final.GetTotalJobs() || final.GetTotalJobs() == 0 {
		t.Fatalf("done %d of %d jobs", final.GetDoneJobs(), final.GetTotalJobs())
	}
	rep, err := f.Coordinator.Report(context.Background(), st.GetId())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Summary.Failed != 1 || rep.Summary.Passed != rep.Summary.Total-1 {
		t.Fatalf("summary %+v: want exactly usage-error failed", rep.Summary)
	}
	// deploy-checklist is parallel: false: never two of its jobs at once, fleet-wide.
	if m := exec.maxPer["deploy-checklist"]; m != 1 {
		t.Fatalf("deploy-checklist ran %d jobs at once, want 1", m)
	}
	if m := exec.maxPer["env-selector"]; m < 2 {
		t.Logf("env-selector peaked at %d concurrent jobs (parallel skills may overlap)", m)
	}
	if got := metricSum(t, reg, "skillfleet_coordinator_runs_total"); got != 1 {
		t.Fatalf("runs_total = %v, want 1", got)
	}
	// A worker counts a job once the server has acked its result, which can come after the
	// coordinator has read that result and finished the run.
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool {
		return metricSum(t, reg, "skillfleet_worker_jobs_total") == float64(final.GetTotalJobs())
	}, "worker jobs_total = %v, want %d", metricSum(t, reg, "skillfleet_worker_jobs_total"), final.GetTotalJobs())
}

// metricSum adds up every series of a metric family.
func metricSum(t *testing.T, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// TestKilledWorkerJobIsRedeliveredOnce: a worker takes a job and dies without acking (and, in
// the second variant, after publishing its result). The job comes back after AckWait, runs
// again, and the report has exactly one result for it.
func TestKilledWorkerJobIsRedeliveredOnce(t *testing.T) {
	for _, publishedFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("published_before_death=%v", publishedFirst), func(t *testing.T) {
			exec := newScripted()
			f := startFleet(t, exec, 0, nil)
			// No workers yet: take one job by hand, as a worker that then dies would.
			st := submit(t, f.Coordinator, &pb.RunSpec{SkillGlobs: []string{"logging-standards"}})
			ctx := context.Background()
			var msg *queue.Delivery
			deadline := time.Now().Add(10 * time.Second)
			for msg == nil && time.Now().Before(deadline) {
				ds, err := f.Topology.LaneConsumers()[0].Fetch(1, 200*time.Millisecond)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range ds {
					msg = m
				}
			}
			if msg == nil {
				t.Fatal("no job was published")
			}
			job := &pb.Job{}
			if err := proto.Unmarshal(msg.Data(), job); err != nil {
				t.Fatal(err)
			}
			if publishedFirst {
				r := &pb.Result{JobId: job.GetId(), RunId: job.GetRunId(), Skill: job.GetSkill(), CaseName: job.GetCaseName(), Epoch: job.GetEpoch(),
					Verdict: pb.Verdict_VERDICT_PASSED, Attempt: 1, Assertions: []*pb.AssertionResult{{Type: "exit_code", Passed: true}},
					Secret: job.GetSecret()} // the dead worker was the one that received it
				data, _ := proto.Marshal(r)
				if err := f.Topology.PublishResult(ctx, job.GetRunId(), job.GetResultKey(), job.GetId(), 1, data); err != nil {
					t.Fatal(err)
				}
			}
			// The "dead" worker never acks. A live worker picks the job up after AckWait.
			if err := f.startWorker(exec); err != nil {
				t.Fatal(err)
			}
			final := wait(t, f.Coordinator, st.GetId())
			if final.GetState() != pb.RunState_RUN_STATE_COMPLETED || final.GetDoneJobs() != 1 {
				t.Fatalf("state %v done %d", final.GetState(), final.GetDoneJobs())
			}
			rep, _ := f.Coordinator.Report(ctx, st.GetId())
			if len(rep.Cases) != 1 || rep.Cases[0].Epochs != 1 || rep.Summary.Passed != 1 {
				t.Fatalf("report %+v", rep.Summary)
			}
			if !publishedFirst && exec.calls.Load() != 1 {
				t.Fatalf("executor ran %d times, want 1 (the redelivery)", exec.calls.Load())
			}
		})
	}
}

// restartCoordinator closes the fleet's coordinator and starts a new one on the same
// JetStream, as a restarted process would.
func restartCoordinator(t *testing.T, f *InProcess) {
	t.Helper()
	if err := f.Coordinator.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	c, err := coordinator.New(coordinator.Config{DataDir: t.TempDir(), MaxAttempts: f.cfg.Queue.MaxDeliver},
		coordinator.Deps{Queue: f.Topology, Runs: f.Topology.Runs(), Bundles: f.Topology, Log: f.log.Named("coordinator2")})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.Coordinator = c
}

// TestCoordinatorRestartMidRun: the same suite with the same verdicts gives the same report
// whether or not the coordinator restarted in the middle.
func TestCoordinatorRestartMidRun(t *testing.T) {
	failing := func(j *pb.Job) bool {
		return j.GetCaseName() == "usage-error" || (j.GetCaseName() == "default_is_dev" && j.GetEpoch() == 2)
	}
	run := func(restart bool) report.Report {
		exec := newScripted()
		exec.delay = 30 * time.Millisecond
		exec.fail = failing
		f := startFleet(t, exec, 1, nil)
		st := submit(t, f.Coordinator, &pb.RunSpec{})
		if restart {
			testutil.Eventually(t, time.Minute, 10*time.Millisecond, func() bool { return exec.calls.Load() >= 5 },
				"fewer than 5 jobs started")
			restartCoordinator(t, f)
		}
		final := wait(t, f.Coordinator, st.GetId())
		if final.GetState() != pb.RunState_RUN_STATE_COMPLETED {
			t.Fatalf("restart=%v: state %v (%s)", restart, final.GetState(), final.GetReason())
		}
		rep, err := f.Coordinator.Report(context.Background(), st.GetId())
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	want, got := run(false), run(true)
	if want.Summary != got.Summary || len(want.Cases) != len(got.Cases) {
		t.Fatalf("summary with restart %+v, without %+v", got.Summary, want.Summary)
	}
	for i := range want.Cases {
		w, g := want.Cases[i], got.Cases[i]
		if w.Skill != g.Skill || w.Case != g.Case || w.Status != g.Status || w.PassedEpochs != g.PassedEpochs || w.Epochs != g.Epochs {
			t.Fatalf("case %d differs: %+v vs %+v", i, g, w)
		}
	}
}

// TestReportRebuiltAfterRestart: a finished run's report survives a coordinator restart (it is
// rebuilt from the results stream).
func TestReportRebuiltAfterRestart(t *testing.T) {
	f := startFleet(t, newScripted(), 1, nil)
	st := submit(t, f.Coordinator, &pb.RunSpec{SkillGlobs: []string{"env-selector"}})
	wait(t, f.Coordinator, st.GetId())
	want, _ := f.Coordinator.Report(context.Background(), st.GetId())
	restartCoordinator(t, f)
	got, err := f.Coordinator.Report(context.Background(), st.GetId())
	if err != nil {
		t.Fatal(err)
	}
	if got.Summary != want.Summary || got.Summary.Total == 0 {
		t.Fatalf("rebuilt summary %+v, want %+v", got.Summary, want.Summary)
	}
}

func TestMalformedJobMessageIsDroppedAndCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := startFleet(t, newScripted(), 1, reg)
	queuetest.Publish(t, f.Server, queue.JobSubject(queue.LaneOnDemand, "rgarbage"), []byte("\xff\x00 not a protobuf job"))
	st := submit(t, f.Coordinator, &pb.RunSpec{SkillGlobs: []string{"logging-standards"}})
	if final := wait(t, f.Coordinator, st.GetId()); final.GetState() != pb.RunState_RUN_STATE_COMPLETED {
		t.Fatalf("state %v", final.GetState())
	}
	testutil.Eventually(t, time.Minute, 20*time.Millisecond, func() bool {
		return metricSum(t, reg, "skillfleet_worker_malformed_jobs_total") >= 1
	}, "the malformed job was never counted")
	// Terminated, not left to circle: the work queue empties (the termination is a message of
	// its own, so it may land just after the metric moved).
	testutil.Eventually(t, 10*time.Second, 20*time.Millisecond, func() bool {
		return queuetest.StreamMsgs(t, f.Server, queue.JobsStream) == 0
	}, "messages left in the jobs stream")
}

// TestBundleDigestMismatchIsErrored: a job whose bundle does not hash to its digest is retried
// and then errored with the reason; nothing passes and the executor never runs.
func TestBundleDigestMismatchIsErrored(t *testing.T) {
	exec := newScripted()
	f := startFleet(t, exec, 0, nil)
	ctx := context.Background()
	st := submit(t, f.Coordinator, &pb.RunSpec{SkillGlobs: []string{"logging-standards"}})
	// Planned and published; now the stored bundle is tampered with before any worker fetches it.
	queuetest.ReplaceBundle(t, f.Server, st.GetSpec().GetBundleDigest(), []byte("tampered bundle bytes"))
	if err := f.startWorker(exec); err != nil {
		t.Fatal(err)
	}
	final := wait(t, f.Coordinator, st.GetId())
	if final.GetState() != pb.RunState_RUN_STATE_COMPLETED || final.GetCases().GetErrored() != 1 {
		t.Fatalf("state %v cases %+v", final.GetState(), final.GetCases())
	}
	rep, _ := f.Coordinator.Report(ctx, st.GetId())
	if reason := rep.Cases[0].Reason; !strings.Contains(reason, "digest mismatch") || !strings.Contains(reason, "after 3 attempts") {
		t.Fatalf("reason %q does not explain the digest mismatch", reason)
	}
	if exec.calls.Load() != 0 {
		t.Fatal("the executor ran a job whose bundle failed verification")
	}
}

// TestConnectionDropMidRun: every client connection is cut while jobs run; clients reconnect
// and the run completes with every job counted once.
func TestConnectionDropMidRun(t *testing.T) {
	exec := newScripted()
	exec.delay = 50 * time.Millisecond
	f := startFleet(t, exec, 2, nil)
	st := submit(t, f.Coordinator, &pb.RunSpec{})
	testutil.Eventually(t, time.Minute, 5*time.Millisecond, func() bool { return exec.calls.Load() >= 3 }, "fewer than 3 jobs started")
	if n, err := f.Server.DropClients(); err != nil || n == 0 {
		t.Fatalf("dropped %d clients: %v", n, err)
	}
	final := wait(t, f.Coordinator, st.GetId())
	if final.GetState() != pb.RunState_RUN_STATE_COMPLETED || final.GetDoneJobs() != final.GetTotalJobs() {
		t.Fatalf("state %v, %d of %d jobs", final.GetState(), final.GetDoneJobs(), final.GetTotalJobs())
	}
	if final.GetCases().GetPassed() != final.GetCases().GetTotal() {
		t.Fatalf("cases %+v: all should pass", final.GetCases())
	}
}

// TestInfrastructureFailuresAreRetriedThenErrored: a job whose infrastructure fails twice
// passes on the third attempt; one that always fails is errored, never passed.
func TestInfrastructureFailuresAreRetriedThenErrored(t *testing.T) {
	exec := newScripted()
	var flaky, broken atomic.Int32
	exec.infraErr = func(j *pb.Job, _ int32) error {
		switch j.GetCaseName() {
		case "logline-shape":
			if flaky.Add(1) <= 2 {
				return fmt.Errorf("sandbox would not start")
			}
		case "dev-list":
			broken.Add(1)
			return fmt.Errorf("docker is down")
		}
		return nil
	}
	f := startFleet(t, exec, 1, nil)
	st := submit(t, f.Coordinator, &pb.RunSpec{CaseGlobs: []string{"logline-shape", "dev-list"}})
	wait(t, f.Coordinator, st.GetId())
	rep, _ := f.Coordinator.Report(context.Background(), st.GetId())
	status := map[string]string{}
	for _, c := range rep.Cases {
		status[c.Case] = c.Status + ": " + c.Reason
	}
	if !strings.HasPrefix(status["logline-shape"], "passed") {
		t.Errorf("flaky infrastructure: %s, want passed on the third attempt", status["logline-shape"])
	}
	if !strings.HasPrefix(status["dev-list"], "errored") || !strings.Contains(status["dev-list"], "docker is down") {
		t.Errorf("broken infrastructure: %s, want errored with the reason", status["dev-list"])
	}
	if broken.Load() != 3 {
		t.Errorf("broken job tried %d times, want 3 (MaxDeliver)", broken.Load())
	}
}

func TestCancelAndDeadline(t *testing.T) {
	exec := newScripted()
	exec.delay = 200 * time.Millisecond
	f := startFleet(t, exec, 1, nil)
	ctx := context.Background()
	st := submit(t, f.Coordinator, &pb.RunSpec{})
	testutil.Eventually(t, time.Minute, 5*time.Millisecond, func() bool { return exec.calls.Load() >= 1 }, "no job started")
	got, err := f.Coordinator.Cancel(ctx, st.GetId())
	if err != nil {
		t.Fatal(err)
	}
	if got.GetState() != pb.RunState_RUN_STATE_CANCELLED {
		t.Fatalf("state after cancel %v", got.GetState())
	}
	rep, _ := f.Coordinator.Report(ctx, st.GetId())
	if rep.Summary.Skipped == 0 || rep.Summary.Passed == rep.Summary.Total {
		t.Fatalf("cancelled report %+v: unfinished cases must be skipped", rep.Summary)
	}
	// Cancelling again changes nothing.
	again, err := f.Coordinator.Cancel(ctx, st.GetId())
	if err != nil || again.GetState() != pb.RunState_RUN_STATE_CANCELLED {
		t.Fatalf("second cancel: %v %v", again.GetState(), err)
	}

	st2 := submit(t, f.Coordinator, &pb.RunSpec{DeadlineMs: 300})
	final := wait(t, f.Coordinator, st2.GetId())
	if final.GetState() != pb.RunState_RUN_STATE_DEADLINE_EXCEEDED || !strings.Contains(final.GetReason(), "deadline") {
		t.Fatalf("state %v reason %q", final.GetState(), final.GetReason())
	}
	if _, err := f.Coordinator.Status(ctx, "rnope"); err != coordinator.ErrNotFound {
		t.Fatalf("unknown run: %v", err)
	}
}

// TestJobWhoseWorkersAllDieIsErrored: every delivery of a job is taken by a worker that dies.
// After MaxDeliver the coordinator records it errored (not lost, not passed) and the run ends.
func TestJobWhoseWorkersAllDieIsErrored(t *testing.T) {
	f := startFleet(t, newScripted(), 0, nil)
	st := submit(t, f.Coordinator, &pb.RunSpec{SkillGlobs: []string{"logging-standards"}})
	done := make(chan *pb.RunStatus, 1)
	go func() { done <- wait(t, f.Coordinator, st.GetId()) }()
	// Each fetch is a worker that takes the job and dies; fetching also gives the server the
	// pull request on which it reports the exhausted job.
	for {
		select {
		case final := <-done:
			if final.GetState() != pb.RunState_RUN_STATE_COMPLETED || final.GetCases().GetErrored() != 1 {
				t.Fatalf("state %v cases %+v", final.GetState(), final.GetCases())
			}
			rep, _ := f.Coordinator.Report(context.Background(), st.GetId())
			if !strings.Contains(rep.Cases[0].Reason, "no result after 3 deliveries") {
				t.Fatalf("reason %q", rep.Cases[0].Reason)
			}
			return
		default:
		}
		if _, err := f.Topology.LaneConsumers()[0].Fetch(1, 200*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAgentsAreSeparateReportRows: a prompt case run against two agents is two rows, each with
// its own verdict; command cases run once.
func TestAgentsAreSeparateReportRows(t *testing.T) {
	exec := newScripted()
	exec.fail = func(j *pb.Job) bool { return j.GetAgent() == "b" }
	f := startFleet(t, exec, 2, nil)
	st := submit(t, f.Coordinator, &pb.RunSpec{SkillGlobs: []string{"env-selector"}, CaseGlobs: []string{"select_dev", "selects-dev"}, Agents: []string{"a", "b"}})
	final := wait(t, f.Coordinator, st.GetId())
	if final.GetState() != pb.RunState_RUN_STATE_COMPLETED || final.GetTotalJobs() != 3 {
		t.Fatalf("state %v, %d jobs (want 3: two agents for the prompt case, one command case)", final.GetState(), final.GetTotalJobs())
	}
	rep, _ := f.Coordinator.Report(context.Background(), st.GetId())
	got := map[string]string{}
	for _, c := range rep.Cases {
		got[c.Case+"/"+c.Agent] = c.Status
	}
	want := map[string]string{"select_dev/a": "passed", "select_dev/b": "failed", "selects-dev/": "passed"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
}

// TestRunTokenBudget: once the results show the run's token budget spent, the run stops:
// queued jobs are removed and unfinished cases skipped, never passed.
func TestRunTokenBudget(t *testing.T) {
	exec := newScripted()
	exec.delay = 20 * time.Millisecond
	spender := &spending{exec}
	f := startFleet(t, spender, 1, nil)
	st := submit(t, f.Coordinator, &pb.RunSpec{MaxTokens: 250})
	final := wait(t, f.Coordinator, st.GetId())
	if final.GetState() != pb.RunState_RUN_STATE_CANCELLED || !strings.Contains(final.GetReason(), "token budget is spent") {
		t.Fatalf("state %v reason %q", final.GetState(), final.GetReason())
	}
	rep, _ := f.Coordinator.Report(context.Background(), st.GetId())
	if rep.Summary.Skipped == 0 || rep.Usage == nil || rep.Usage.PromptTokens < 250 {
		t.Fatalf("summary %+v usage %+v", rep.Summary, rep.Usage)
	}
}

// spending wraps an executor so every result reports 100 prompt tokens.
type spending struct{ worker.Executor }

func (s *spending) Execute(ctx context.Context, job *pb.Job, dir string) (*pb.Result, error) {
	r, err := s.Executor.Execute(ctx, job, dir)
	if r != nil {
		r.Usage = &pb.Usage{PromptTokens: 100}
	}
	return r, err
}
