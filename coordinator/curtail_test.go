package coordinator_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/coordinator"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

// taken is a job a test took from the queue, held as a worker running it holds it: not yet
// acked, so the lane's load counts it running.
type taken struct {
	*pb.Job
	d *queue.Delivery
}

// reply publishes job's result with verdict v, in its arm, with the assertion result a pass
// needs to count, and acks the job.
func reply(t *testing.T, topo *queue.Topology, tj taken, v pb.Verdict) {
	t.Helper()
	job := tj.Job
	a := &pb.AssertionResult{Type: "output_contains", Passed: v == pb.Verdict_VERDICT_PASSED}
	data, err := proto.Marshal(&pb.Result{
		JobId: job.GetId(), RunId: job.GetRunId(), Skill: job.GetSkill(), CaseName: job.GetCaseName(),
		Epoch: job.GetEpoch(), Kind: job.GetKind(), Agent: job.GetAgent(), Arm: job.GetArm(), Attempt: 1,
		Verdict: v, Secret: job.GetSecret(), Assertions: []*pb.AssertionResult{a},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := topo.PublishResult(context.Background(), job.GetRunId(), job.GetResultKey(), job.GetId(), 1, data); err != nil {
		t.Fatal(err)
	}
	if err := tj.d.Ack(); err != nil {
		t.Fatal(err)
	}
}

// takeAll takes the jobs queued, by "case/epoch": at least want of them (waiting up to 20 s),
// then whatever else comes within a moment.
func takeAll(t *testing.T, topo *queue.Topology, want int) map[string]taken {
	t.Helper()
	return takeKeyed(t, topo, want, func(j *pb.Job) string { return fmt.Sprintf("%s/%d", j.GetCaseName(), j.GetEpoch()) })
}

// takeKeyed is takeAll with the jobs named by key.
func takeKeyed(t *testing.T, topo *queue.Topology, want int, key func(*pb.Job) string) map[string]taken {
	t.Helper()
	out := map[string]taken{}
	deadline := time.Now().Add(20 * time.Second)
	for {
		wait := 300 * time.Millisecond
		if len(out) < want {
			if time.Now().After(deadline) {
				return out
			}
			wait = time.Second
		}
		ds, err := topo.LaneConsumers()[0].Fetch(16, wait)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 0 && len(out) >= want {
			return out
		}
		for _, d := range ds {
			j := &pb.Job{}
			if err := proto.Unmarshal(d.Data(), j); err != nil {
				t.Fatal(err)
			}
			out[key(j)] = taken{j, d}
		}
	}
}

func keys(m map[string]taken) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

const curtailSuite = "cases:\n" +
	"  - {name: p, input: hi, runs: 5, confidence: 0.8, assertions: {output_contains: [x]}}\n" +
	"  - {name: f, input: hi, runs: 5, confidence: 0.8, assertions: {output_contains: [x]}}\n" +
	"  - {name: o, input: hi, assertions: {output_contains: [x]}}\n"

// TestCurtailedRun: with runs: 5 and confidence: 0.8, four epochs of each case go out first;
// a case whose four pass is settled and its fifth never published; a case whose first
// fails gets its fifth, and once a second fails it is settled: its jobs still out are
// withdrawn (the workers told to skip or stop them, and a skipped result of one not counted),
// and the run completes without them. The report and the status say how many ran; a
// coordinator restarted mid-run publishes what the results call for and no more.
func TestCurtailedRun(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%v", restart), func(t *testing.T) {
			_, _, topo := queuetest.Start(t)
			ctx := context.Background()
			cfg := coordinator.Config{DataDir: t.TempDir(), Agents: []string{"fixture-agent"}}
			c := startOn(t, topo, cfg)
			var mu sync.Mutex
			cancelled := map[string]bool{}
			stop, err := topo.WatchCancelled(ctx, func(run string) {
				mu.Lock()
				cancelled[run] = true
				mu.Unlock()
			})
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			withdrawn := make(chan []string, 8)
			stopW, err := topo.WatchWithdrawn(ctx, func(run string, jobs []string) { withdrawn <- jobs })
			if err != nil {
				t.Fatal(err)
			}
			defer stopW()
			st, err := c.Submit(ctx, strings.NewReader(string(bundleOf(t, writeFiles(t, map[string]string{
				"s/SKILL.md": okSkill, "s/cases.yaml": curtailSuite,
			})))), &pb.RunSpec{})
			if err != nil {
				t.Fatal(err)
			}
			if !st.GetCurtailed() || st.GetTotalJobs() != 11 {
				t.Fatalf("admitted: curtailed %v, %d jobs; want curtailed, 11", st.GetCurtailed(), st.GetTotalJobs())
			}
			first := takeAll(t, topo, 9)
			if want := []string{"f/1", "f/2", "f/3", "f/4", "o/1", "p/1", "p/2", "p/3", "p/4"}; !slices.Equal(keys(first), want) {
				t.Fatalf("first jobs %v, want %v", keys(first), want)
			}
			for e := 1; e <= 4; e++ {
				reply(t, topo, first[fmt.Sprintf("p/%d", e)], pb.Verdict_VERDICT_PASSED)
			}
			reply(t, topo, first["f/1"], pb.Verdict_VERDICT_FAILED)
			if restart {
				eventually(t, "the results to be counted", func() bool {
					s, err := c.Status(ctx, st.GetId())
					return err == nil && s.GetDoneJobs() == 5
				})
				_ = c.Close(ctx)
				c = startOn(t, topo, cfg)
			}
			next := takeAll(t, topo, 1)
			if want := []string{"f/5"}; !slices.Equal(keys(next), want) {
				t.Fatalf("after p passed and f/1 failed: jobs %v, want %v", keys(next), want)
			}
			reply(t, topo, first["f/2"], pb.Verdict_VERDICT_FAILED)
			select {
			case jobs := <-withdrawn:
				want := []string{first["f/3"].GetId(), first["f/4"].GetId(), next["f/5"].GetId()}
				if !slices.Equal(jobs, want) {
					t.Errorf("withdrawn %v, want f/3, f/4, f/5: %v", jobs, want)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("f settled, and no job of it was withdrawn")
			}
			// The worker running f/3 stops it and says so: not an epoch of f.
			reply(t, topo, first["f/3"], pb.Verdict_VERDICT_SKIPPED)
			reply(t, topo, first["o/1"], pb.Verdict_VERDICT_PASSED)
			var fin *pb.RunStatus
			eventually(t, "the run to complete", func() bool {
				fin, err = c.Status(ctx, st.GetId())
				return err == nil && fin.GetState() == pb.RunState_RUN_STATE_COMPLETED
			})
			if fin.GetDoneJobs() != 7 || fin.GetTotalJobs() != 7 || fin.GetWithdrawnJobs() != 4 {
				t.Errorf("final status: %d of %d jobs done, %d withdrawn; want 7 of 7, 4", fin.GetDoneJobs(), fin.GetTotalJobs(), fin.GetWithdrawnJobs())
			}
			if c := fin.GetCases(); c.GetPassed() != 2 || c.GetFailed() != 1 {
				t.Errorf("cases %v, want 2 passed, 1 failed", c)
			}
			rep, err := c.Report(ctx, st.GetId())
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"p": "passed 4/5", "f": "failed 2/5", "o": "passed 1/1"}
			for _, cs := range rep.Cases {
				if got := fmt.Sprintf("%s %d/%d", cs.Status, cs.EpochsRun, cs.EpochsPlanned); got != want[cs.Case] {
					t.Errorf("case %s: %s, want %s", cs.Case, got, want[cs.Case])
				}
			}
			// f/4 and f/5 were still running (taken, not acked) when the run completed: the
			// workers are told to stop them, through the cancel path of the run.
			eventually(t, "the cancel notice", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return cancelled[st.GetId()]
			})
			// Nothing else was ever published.
			if left := takeAll(t, topo, 0); len(left) > 0 {
				t.Errorf("jobs published after the run completed: %v", keys(left))
			}
		})
	}
}

// TestKeepAllEpochs: a coordinator told to keep every epoch publishes them all at once, and
// the run completes only with every result.
func TestKeepAllEpochs(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := context.Background()
	c := startOn(t, topo, coordinator.Config{DataDir: t.TempDir(), Agents: []string{"fixture-agent"}, KeepAllEpochs: true})
	st, err := c.Submit(ctx, strings.NewReader(string(bundleOf(t, writeFiles(t, map[string]string{
		"s/SKILL.md": okSkill, "s/cases.yaml": curtailSuite,
	})))), &pb.RunSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if st.GetCurtailed() {
		t.Fatal("curtailed with KeepAllEpochs")
	}
	jobs := takeAll(t, topo, 11)
	if len(jobs) != 11 {
		t.Fatalf("%d jobs published, want all 11: %v", len(jobs), keys(jobs))
	}
	for k, j := range jobs {
		v := pb.Verdict_VERDICT_PASSED
		if strings.HasPrefix(k, "f/") {
			v = pb.Verdict_VERDICT_FAILED
		}
		reply(t, topo, j, v)
	}
	var fin *pb.RunStatus
	eventually(t, "the run to complete", func() bool {
		fin, err = c.Status(ctx, st.GetId())
		return err == nil && fin.GetState() == pb.RunState_RUN_STATE_COMPLETED
	})
	if fin.GetDoneJobs() != 11 || fin.GetTotalJobs() != 11 || fin.GetWithdrawnJobs() != 0 {
		t.Errorf("final status: %d of %d jobs done, %d withdrawn; want 11 of 11, 0", fin.GetDoneJobs(), fin.GetTotalJobs(), fin.GetWithdrawnJobs())
	}
}
