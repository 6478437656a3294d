package coordinator_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/skillfleet/skillfleet/coordinator"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

// TestMoreUnfinishedRunsThanTheServersConsumerDefault: an organisation's CI submits a run per
// skill repository, and more than 1,000 are unfinished at once. Each unfinished run's results
// are followed by a consumer of their own, and nats-server refuses a stream's 1,001st consumer
// unless the stream says otherwise: the 1,001st run failed with "cannot read results". Here
// 1,050 runs are admitted before any job runs, none fails, case pages are read meanwhile, the
// coordinator restarts, and every run completes once its job is answered.
func TestMoreUnfinishedRunsThanTheServersConsumerDefault(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := context.Background()
	c := startOn(t, topo, coordinator.Config{StatusEvery: 50 * time.Millisecond})
	runs := server.JSDefaultMaxConsumersPerStream + 50
	suite := commandSuite(t, 1)
	ids := make([]string, runs)
	start := time.Now()
	for i := range runs {
		st, err := c.Submit(member("teamA"), bytes.NewReader(suite), &pb.RunSpec{Name: fmt.Sprintf("repo%d", i)})
		if err != nil {
			t.Fatalf("run %d of %d: %v", i+1, runs, err)
		}
		ids[i] = st.GetId()
	}
	t.Logf("%d runs admitted in %v", runs, time.Since(start).Round(time.Millisecond))
	for i, id := range ids {
		st, err := c.Status(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if st.GetState() == pb.RunState_RUN_STATE_FAILED {
			t.Fatalf("run %d of %d failed before any job ran: %s", i+1, runs, st.GetReason())
		}
	}
	// A viewer reads cases of the last runs while all are unfinished.
	for _, id := range ids[runs-20:] {
		if err := c.CaseResults(ctx, id, "s", "c0", func(*pb.Result) error { return nil }); err != nil {
			t.Fatalf("a case page of run %s: %v", id, err)
		}
	}
	// The coordinator restarts with them all unfinished: the next one resumes every run.
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	c = startOn(t, topo, coordinator.Config{StatusEvery: 50 * time.Millisecond})
	t.Logf("a coordinator started on %d unfinished runs in %v", runs, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	answered := 0
	for answered < runs {
		if answer(t, topo, 10, 5*time.Second) == nil {
			t.Fatalf("no job came after %d of %d", answered, runs)
		}
		answered++
	}
	for i, id := range ids {
		eventually(t, fmt.Sprintf("run %d of %d to finish", i+1, runs), func() bool {
			st, err := c.Status(ctx, id)
			return err == nil && st.GetState() == pb.RunState_RUN_STATE_COMPLETED && st.GetDoneJobs() == 1
		})
	}
	t.Logf("their jobs answered and every run finished in %v", time.Since(start).Round(time.Millisecond))
}
