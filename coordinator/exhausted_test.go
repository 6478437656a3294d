package coordinator_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/coordinator"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

// TestRecoverExhaustedWhileDownOnABusyLane: a job runs out of deliveries while no coordinator
// runs and while another job of its lane is still being worked on, so the lane's state cannot
// say which of its queued jobs is exhausted. The server's advisory, kept in ExhaustedStream,
// does: the next coordinator records the job errored at once, not once the lane is idle or at
// the run's deadline.
func TestRecoverExhaustedWhileDownOnABusyLane(t *testing.T) {
	qcfg := queue.DefaultConfig()
	qcfg.AckWait, qcfg.MaxDeliver = 300*time.Millisecond, 2
	srv, _, topo := queuetest.StartConfig(t, qcfg, queue.EmbeddedConfig{})
	ctx := context.Background()
	dataDir := t.TempDir()
	c1 := recoveryCoordinator(t, topo, dataDir)
	st, err := c1.Submit(ctx, bytes.NewReader(bundleOf(t, writeFiles(t, map[string]string{
		"s/SKILL.md":   okSkill,
		"s/cases.yaml": "cases:\n  - {name: a, input: hi, assertions: {output_contains: [x]}}\n  - {name: b, input: hi, assertions: {output_contains: [x]}}\n  - {name: c, input: hi, assertions: {output_contains: [x]}}\n",
	}))), &pb.RunSpec{})
	if err != nil {
		t.Fatal(err)
	}
	dying, _ := fetchJob(t, topo)
	held, heldMsg := fetchJob(t, topo)
	done, doneMsg := fetchJob(t, topo)
	publishResult(t, topo, done, 1, pb.Verdict_VERDICT_FAILED, done.GetSecret())
	if err := doneMsg.AckSync(ctx); err != nil {
		t.Fatal(err)
	}
	// The held job's worker is alive: it heartbeats until the test lets it finish.
	stopBeats := make(chan struct{})
	beating := make(chan struct{})
	go func() {
		defer close(beating)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopBeats:
				return
			case <-tick.C:
				_ = heldMsg.InProgress()
			}
		}
	}()
	if err := c1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if again, _ := fetchJob(t, topo); again.GetId() != dying.GetId() {
		t.Fatalf("redelivered %s, want %s", again.GetId(), dying.GetId())
	}
	eventually(t, "the server to give up on the job", func() bool {
		// The server notices an exhausted job when a pull comes (a worker always has one).
		if ds, err := onDemand(topo).Fetch(1, 0); err == nil {
			for _, d := range ds {
				t.Errorf("delivered again: %s", d.Subject())
			}
		}
		return queuetest.StreamMsgs(t, srv, queue.ExhaustedStream) > 0
	})
	if n := queuetest.AckPending(t, srv, queue.JobsStream, queue.OnDemandConsumer); n == 0 {
		t.Fatal("the lane should be busy with the held job")
	}

	c2 := recoveryCoordinator(t, topo, dataDir)
	defer func() { _ = c2.Close(ctx) }()
	eventually(t, "the exhausted job to be recorded while the lane is busy", func() bool {
		s, err := c2.Status(ctx, st.GetId())
		return err == nil && s.GetCases().GetErrored() == 1
	})
	close(stopBeats)
	<-beating
	publishResult(t, topo, held, 1, pb.Verdict_VERDICT_FAILED, held.GetSecret())
	if err := heldMsg.AckSync(ctx); err != nil {
		t.Fatal(err)
	}
	var final *pb.RunStatus
	eventually(t, "the run to complete", func() bool {
		final, err = c2.Status(ctx, st.GetId())
		return err == nil && final.GetState() == pb.RunState_RUN_STATE_COMPLETED
	})
	if cs := final.GetCases(); cs.GetErrored() != 1 || cs.GetFailed() != 2 {
		t.Fatalf("cases = %v, want the exhausted one errored and two failed", cs)
	}
}

// recoveryCoordinator starts a coordinator for the exhausted-job tests: jobs of two attempts.
func recoveryCoordinator(t *testing.T, topo *queue.Topology, dataDir string) *coordinator.Coordinator {
	t.Helper()
	c, err := coordinator.New(coordinator.Config{DataDir: dataDir, Agents: []string{"fixture-agent"}, MaxAttempts: 2, StatusEvery: 50 * time.Millisecond},
		coordinator.Deps{Queue: topo, Runs: topo.Runs(), Bundles: topo, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c
}

// onDemand is the on-demand lane's consumer.
func onDemand(topo *queue.Topology) *queue.LaneConsumer { return topo.LaneConsumers()[0] }

// fetchJob takes the next on-demand job, as a worker would.
func fetchJob(t *testing.T, topo *queue.Topology) (*pb.Job, *queue.Delivery) {
	t.Helper()
	ds, err := onDemand(topo).Fetch(1, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) == 0 {
		t.Fatal("no job delivered")
	}
	m := ds[0]
	job := &pb.Job{}
	if err := proto.Unmarshal(m.Data(), job); err != nil {
		t.Fatal(err)
	}
	return job, m
}
