package coordinator_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/testutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
	"github.com/skillfleet/skillfleet/report"
)

// twoCaseSuite has two prompt cases, so a run can be stopped with one result in and one to go.
func twoCaseSuite(t *testing.T) []byte {
	return bundleOf(t, writeFiles(t, map[string]string{
		"s/SKILL.md": okSkill,
		"s/cases.yaml": `cases:
  - name: a
    input: hi
    assertions:
      output_contains: ["x"]
  - name: b
    input: hi
    assertions:
      output_contains: ["x"]
`,
	}))
}

// startCoordinator starts a coordinator on topo with its own registry.
func startCoordinator(t *testing.T, topo *queue.Topology, dataDir string) (*coordinator.Coordinator, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	c, err := coordinator.New(coordinator.Config{DataDir: dataDir, Agents: []string{"fixture-agent"}, StatusEvery: 50 * time.Millisecond},
		coordinator.Deps{Queue: topo, Runs: topo.Runs(), Bundles: topo, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c, reg
}

// takeJob takes one job off the queue, as a worker does, and acks it.
func takeJob(t *testing.T, topo *queue.Topology) *pb.Job {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, _, err := topo.NextJob(ctx, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	job := &pb.Job{}
	if err := proto.Unmarshal(m.Data(), job); err != nil {
		t.Fatal(err)
	}
	if err := m.Ack(); err != nil {
		t.Fatal(err)
	}
	return job
}

func publishResult(t *testing.T, topo *queue.Topology, job *pb.Job, attempt int, v pb.Verdict, secret []byte) {
	t.Helper()
	data, err := proto.Marshal(&pb.Result{
		JobId: job.GetId(), RunId: job.GetRunId(), Skill: job.GetSkill(), CaseName: job.GetCaseName(),
		Epoch: job.GetEpoch(), Kind: job.GetKind(), Agent: job.GetAgent(), Attempt: int32(attempt),
		Verdict: v, Secret: secret,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := topo.PublishResult(context.Background(), job.GetRunId(), job.GetResultKey(), job.GetId(), attempt, data); err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond for up to 30 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, 20*time.Millisecond, cond, "timed out waiting for %s", what)
}

// results reads skillfleet_coordinator_results_total{outcome} from reg.
func results(reg *prometheus.Registry, outcome string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		return -1
	}
	for _, mf := range mfs {
		if mf.GetName() != "skillfleet_coordinator_results_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestForgedResultsAreRefused: results without the job's secret, or with another one, are
// refused and counted as forged, do not count in the report, and do not keep the real result
// out; the key behind the secrets is stored with the run but served by no API call; and
// after a restart, replayed results are not counted again.
func TestForgedResultsAreRefused(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := context.Background()
	dataDir := t.TempDir()
	c, reg := startCoordinator(t, topo, dataDir)
	st, err := c.Submit(ctx, bytes.NewReader(twoCaseSuite(t)), &pb.RunSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.GetJobKey()) != 0 {
		t.Fatal("Submit returned the run's job key")
	}

	job := takeJob(t, topo)
	if len(job.GetSecret()) != 32 {
		t.Fatalf("job secret has %d bytes, want 32", len(job.GetSecret()))
	}
	wrong := bytes.Clone(job.GetSecret())
	wrong[0] ^= 1
	publishResult(t, topo, job, 2, pb.Verdict_VERDICT_PASSED, nil)
	publishResult(t, topo, job, 3, pb.Verdict_VERDICT_PASSED, wrong)
	eventually(t, "two forged results counted", func() bool { return results(reg, "forged") == 2 })
	if got, err := c.Status(ctx, st.GetId()); err != nil || got.GetCases().GetPassed() != 0 || got.GetDoneJobs() != 0 {
		t.Fatalf("after forged results: %v, %v; want nothing done", got, err)
	}
	publishResult(t, topo, job, 1, pb.Verdict_VERDICT_FAILED, job.GetSecret())
	eventually(t, "the real result accepted", func() bool { return results(reg, "accepted") == 1 })

	// The key is in the KV bucket, and in no answer of the API's methods.
	value, _, err := topo.Runs().Get(ctx, st.GetId())
	if err != nil {
		t.Fatal(err)
	}
	stored := &pb.RunStatus{}
	if err := proto.Unmarshal(value, stored); err != nil || len(stored.GetJobKey()) != 32 {
		t.Fatalf("stored run has a %d-byte job key (%v), want 32", len(stored.GetJobKey()), err)
	}
	got, err := c.Status(ctx, st.GetId())
	if err != nil || len(got.GetJobKey()) != 0 {
		t.Fatalf("Status: %v, key served: %v", err, len(got.GetJobKey()) != 0)
	}
	list, err := c.List(ctx)
	if err != nil || len(list) != 1 || len(list[0].GetJobKey()) != 0 {
		t.Fatalf("List: %v, %v", list, err)
	}

	// A restart replays the three stored results: none is an arrival.
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	c2, reg2 := startCoordinator(t, topo, dataDir)
	defer func() { _ = c2.Close(ctx) }()
	eventually(t, "the resumed run caught up", func() bool {
		s, err := c2.Status(ctx, st.GetId())
		return err == nil && s.GetDoneJobs() == 1
	})
	for _, o := range []string{"accepted", "forged", "duplicate"} {
		if n := results(reg2, o); n != 0 {
			t.Errorf("after a restart, results_total{outcome=%q} = %v, want 0 (replayed, not received)", o, n)
		}
	}

	// The resumed run checks the second job's secret with the stored key.
	job2 := takeJob(t, topo)
	publishResult(t, topo, job2, 2, pb.Verdict_VERDICT_PASSED, job.GetSecret()) // another job's secret
	publishResult(t, topo, job2, 1, pb.Verdict_VERDICT_FAILED, job2.GetSecret())
	var final *pb.RunStatus
	eventually(t, "the run to complete", func() bool {
		final, err = c2.Status(ctx, st.GetId())
		return err == nil && final.GetState() == pb.RunState_RUN_STATE_COMPLETED
	})
	if cs := final.GetCases(); cs.GetFailed() != 2 || cs.GetTotal() != 2 {
		t.Fatalf("cases = %v, want both failed, as their real results say", cs)
	}
	if f, a := results(reg2, "forged"), results(reg2, "accepted"); f != 1 || a != 1 {
		t.Fatalf("after the restart: forged %v, accepted %v; want 1 and 1", f, a)
	}
}

// TestRecoverExhaustedWhileDown: a job's last delivery expires while no coordinator runs, so
// its MAX_DELIVERIES advisory reaches nobody. The next coordinator finds the job from the
// queue's state at start and records it errored: the run completes at once, not at its
// deadline (6 h).
func TestRecoverExhaustedWhileDown(t *testing.T) {
	qcfg := queue.DefaultConfig()
	qcfg.AckWait, qcfg.MaxDeliver = 300*time.Millisecond, 2
	srv, _, topo := queuetest.StartConfig(t, qcfg, queue.EmbeddedConfig{})
	ctx := context.Background()
	dataDir := t.TempDir()
	c1 := recoveryCoordinator(t, topo, dataDir)
	st, err := c1.Submit(ctx, bytes.NewReader(twoCaseSuite(t)), &pb.RunSpec{})
	if err != nil {
		t.Fatal(err)
	}
	// One job gets its result; the other's worker dies on its first delivery.
	first, _ := fetchJob(t, topo)
	second, m2 := fetchJob(t, topo)
	publishResult(t, topo, second, 1, pb.Verdict_VERDICT_FAILED, second.GetSecret())
	if err := m2.AckSync(ctx); err != nil {
		t.Fatal(err)
	}
	// The coordinator goes down; the job's last delivery expires meanwhile.
	if err := c1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	again, _ := fetchJob(t, topo)
	if again.GetId() != first.GetId() {
		t.Fatalf("redelivered %s, want %s", again.GetId(), first.GetId())
	}
	eventually(t, "the server to give up on the job", func() bool {
		// The server notices an exhausted job when a pull comes (a worker always has one).
		if ds, err := onDemand(topo).Fetch(1, 0); err == nil {
			for _, d := range ds {
				t.Errorf("delivered again after MaxDeliver: %s", d.Subject())
			}
		}
		return queuetest.AckPending(t, srv, queue.JobsStream, queue.OnDemandConsumer) == 0
	})

	c2 := recoveryCoordinator(t, topo, dataDir)
	defer func() { _ = c2.Close(ctx) }()
	var final *pb.RunStatus
	eventually(t, "the run to complete", func() bool {
		final, err = c2.Status(ctx, st.GetId())
		return err == nil && final.GetState() == pb.RunState_RUN_STATE_COMPLETED
	})
	if cs := final.GetCases(); cs.GetErrored() != 1 || cs.GetFailed() != 1 {
		t.Fatalf("cases = %v, want the exhausted one errored and the other failed", cs)
	}
}

// TestLegacyRunResumes: a run started by a coordinator older than job secrets has no key. The
// results its coordinator stored are replayed as accepted; a new result without a secret is
// refused.
func TestLegacyRunResumes(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := context.Background()
	dataDir := t.TempDir()
	c1, _ := startCoordinator(t, topo, dataDir)
	st, err := c1.Submit(ctx, bytes.NewReader(twoCaseSuite(t)), &pb.RunSpec{})
	if err != nil {
		t.Fatal(err)
	}
	first, second := takeJob(t, topo), takeJob(t, topo)
	if err := c1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// What the old coordinator left: a record without a key, a result without a secret.
	value, _, err := topo.Runs().Get(ctx, st.GetId())
	if err != nil {
		t.Fatal(err)
	}
	stored := &pb.RunStatus{}
	if err := proto.Unmarshal(value, stored); err != nil {
		t.Fatal(err)
	}
	stored.JobKey = nil
	b, err := proto.Marshal(stored)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := topo.Runs().Put(ctx, st.GetId(), b); err != nil {
		t.Fatal(err)
	}
	publishResult(t, topo, first, 1, pb.Verdict_VERDICT_FAILED, nil)

	c2, reg := startCoordinator(t, topo, dataDir)
	defer func() { _ = c2.Close(ctx) }()
	eventually(t, "the old result replayed", func() bool {
		s, err := c2.Status(ctx, st.GetId())
		return err == nil && s.GetDoneJobs() == 1
	})
	publishResult(t, topo, second, 1, pb.Verdict_VERDICT_PASSED, nil)
	eventually(t, "the new result without a secret refused", func() bool { return results(reg, "forged") == 1 })
	if s, err := c2.Status(ctx, st.GetId()); err != nil || s.GetDoneJobs() != 1 {
		t.Fatalf("status %v, %v; want 1 job done", s, err)
	}
}

// TestAResultCountsForItsOwnJob: the review's cross-case credit. A worker holding one job's
// secret published a result with that job's id and secret that named the run's other case:
// the report credited the other case. Identity now comes from the job: the result counts for
// the job it proves, and the other case is still waiting for its own.
func TestAResultCountsForItsOwnJob(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := context.Background()
	c, reg := startCoordinator(t, topo, t.TempDir())
	defer func() { _ = c.Close(ctx) }()
	st, err := c.Submit(ctx, bytes.NewReader(twoCaseSuite(t)), &pb.RunSpec{})
	if err != nil {
		t.Fatal(err)
	}
	job := takeJob(t, topo)
	other := map[string]string{"a": "b", "b": "a"}[job.GetCaseName()]
	data, err := proto.Marshal(&pb.Result{
		JobId: job.GetId(), RunId: job.GetRunId(), Skill: job.GetSkill(), CaseName: other,
		Epoch: job.GetEpoch(), Kind: job.GetKind(), Agent: job.GetAgent(), Attempt: 1,
		Verdict: pb.Verdict_VERDICT_PASSED, Secret: job.GetSecret(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := topo.PublishResult(ctx, job.GetRunId(), job.GetResultKey(), job.GetId(), 1, data); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the result accepted", func() bool { return results(reg, "accepted") == 1 })
	rep, err := c.Report(ctx, st.GetId())
	if err != nil {
		t.Fatal(err)
	}
	// The result has no assertion results, so its pass counts as errored: what matters is
	// which case it counts for.
	for _, cs := range rep.Cases {
		switch cs.Case {
		case job.GetCaseName():
			if cs.Status == report.StatusPending {
				t.Errorf("case %s (the job's own) is still pending: the result went elsewhere", cs.Case)
			}
		case other:
			if cs.Status != report.StatusPending {
				t.Errorf("case %s is %s: it was credited with another job's result", cs.Case, cs.Status)
			}
		}
	}
}

// countingHistory counts what a coordinator writes to its history.
type countingHistory struct {
	mu               sync.Mutex
	records, finishd int
	suites           []string
}

func (h *countingHistory) Record(_ *pb.Result, st *pb.RunStatus) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records++
	h.suites = append(h.suites, st.GetSpec().GetName())
}

func (h *countingHistory) RunFinished(*pb.RunStatus) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.finishd++
}

func (h *countingHistory) counts() (int, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.records, h.finishd
}

// TestReadingAReportWritesNoHistory: the chaos run's finding. After a restart, reading an old
// run's report replayed its results through the path that records arrivals, and rewrote the
// run's history rows without its suite name: the run left its suite (changed-only runs stopped
// reusing it, flaky labels lost it). A report read now writes nothing.
func TestReadingAReportWritesNoHistory(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := context.Background()
	dataDir := t.TempDir()
	start := func(h coordinator.History) *coordinator.Coordinator {
		c, err := coordinator.New(coordinator.Config{DataDir: dataDir, Agents: []string{"fixture-agent"}, StatusEvery: 50 * time.Millisecond},
			coordinator.Deps{Queue: topo, Runs: topo.Runs(), Bundles: topo, Registry: prometheus.NewRegistry(), History: h})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return c
	}
	first := &countingHistory{}
	c := start(first)
	st, err := c.Submit(ctx, bytes.NewReader(twoCaseSuite(t)), &pb.RunSpec{Name: "nightly"})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		job := takeJob(t, topo)
		publishResult(t, topo, job, 1, pb.Verdict_VERDICT_FAILED, job.GetSecret())
	}
	eventually(t, "the run finished and recorded", func() bool { r, f := first.counts(); return r == 2 && f == 1 })
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}

	later := &countingHistory{}
	c2 := start(later)
	defer func() { _ = c2.Close(ctx) }()
	// A start tells the history of the recently finished runs again (a coordinator stopped
	// right after saving a run's end may not have written it): the run's final row, once.
	if r, f := later.counts(); r != 0 || f != 1 {
		t.Fatalf("at start: %d results and %d finished runs told to the history, want 0 and 1", r, f)
	}
	rep, err := c2.Report(ctx, st.GetId())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Summary.Failed != 2 {
		t.Fatalf("report %+v, want the two failed cases", rep.Summary)
	}
	if r, f := later.counts(); r != 0 || f != 1 {
		t.Errorf("reading the report wrote %d results and %d more finished runs to the history (suites %q), want none", r, f-1, later.suites)
	}
}
