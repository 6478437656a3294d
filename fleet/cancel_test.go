package fleet

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// untilStopped is an executor whose every job runs until its context ends, as a sandboxed
// command with an hour's timeout would; stopped receives the id of each job stopped.
type untilStopped struct {
	started chan string
	stopped chan string
}

func (e untilStopped) Execute(ctx context.Context, job *pb.Job, _ string) (*pb.Result, error) {
	e.started <- job.GetId()
	<-ctx.Done()
	e.stopped <- job.GetId()
	return nil, ctx.Err()
}

// TestCancelStopsRunningJobs: cancelling a run over real JetStream stops the job running on a
// worker (the coordinator's notice reaches the worker, which ends the job's context, so the
// sandbox is killed) and the job's one result is skipped, "run cancelled".
func TestCancelStopsRunningJobs(t *testing.T) {
	exec := untilStopped{started: make(chan string, 16), stopped: make(chan string, 16)}
	f := startFleet(t, exec, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := submit(t, f.Coordinator, &pb.RunSpec{SkillGlobs: []string{"logging-standards"}})
	var job string
	select {
	case job = <-exec.started:
	case <-ctx.Done():
		t.Fatal("no job started")
	}
	if _, err := f.Coordinator.Cancel(ctx, st.GetId()); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-exec.stopped:
		if got != job {
			t.Fatalf("job %s stopped, want %s", got, job)
		}
	case <-ctx.Done():
		t.Fatal("the running job was not stopped by the cancel")
	}
	it, err := f.Topology.FollowResults(ctx, st.GetId())
	if err != nil {
		t.Fatal(err)
	}
	defer it.Stop()
	m, err := it.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res := &pb.Result{}
	if err := proto.Unmarshal(m.Data, res); err != nil {
		t.Fatal(err)
	}
	if res.GetJobId() != job || res.GetVerdict() != pb.Verdict_VERDICT_SKIPPED || res.GetReason() != "run cancelled" {
		t.Fatalf("result of job %s: %v %q, want %s skipped: run cancelled", res.GetJobId(), res.GetVerdict(), res.GetReason(), job)
	}
}
