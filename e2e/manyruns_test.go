package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/testutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
)

// TestManyRunsAtOnce: an organisation's CI submits a run per skill repository, so more than
// 1,000 runs are unfinished at once. Each unfinished run's results are followed by a consumer
// of their own, and nats-server (a separate process here, on deploy/nats/permissions.conf)
// refuses a stream's 1,001st consumer unless the stream says otherwise; case reads took one
// each for 5 minutes too. Five teams submit 1,050 one-job runs through the API before any
// worker runs, a viewer reads cases meanwhile, and once the workers start, every run completes
// with its job counted once, and the results stream is left with no consumer.
func TestManyRunsAtOnce(t *testing.T) {
	o := shareOptions{workers: 2, slots: 8, workersLater: true}
	f := startShareFleet(t, o)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	runs := server.JSDefaultMaxConsumersPerStream + 50
	tokens := []string{tokShareA, tokShareB, tokShareC, tokShareD, tokShareE}
	suite := commandSuite(t, 1, 1)

	start := time.Now()
	ids := make([]string, runs)
	errs := make([]error, runs)
	next := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range next {
				st, err := submit(ctx, f.client(tokens[i%len(tokens)]), fmt.Sprintf("repo%04d", i), suite)
				ids[i], errs[i] = st.GetId(), err
			}
		})
	}
	for i := range runs {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("run %d of %d: %v", i+1, runs, err)
		}
	}
	t.Logf("%d runs of %d teams submitted through the API in %v", runs, len(tokens), time.Since(start).Round(time.Millisecond))

	// every is each team's runs, as its member lists them.
	every := func() [][]*pb.RunStatus {
		t.Helper()
		out := make([][]*pb.RunStatus, len(tokens))
		for i, tok := range tokens {
			var err error
			if out[i], err = f.client(tok).List(ctx); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	unfinished := 0
	for i, list := range every() {
		for _, st := range list {
			if st.GetState() == pb.RunState_RUN_STATE_FAILED {
				t.Fatalf("team %d's run %s failed before any worker ran: %s", i, st.GetId(), st.GetReason())
			}
			if !ended(st.GetState()) {
				unfinished++
			}
		}
	}
	if unfinished != runs {
		t.Fatalf("%d runs unfinished before any worker ran, want %d", unfinished, runs)
	}
	// A viewer reads cases meanwhile, more than once each.
	for i := range 60 {
		id, tok := ids[i%30], tokens[(i%30)%len(tokens)]
		err := f.client(tok).ResultsOf(ctx, id, coordinator.ResultsQuery{Skill: "cmd-00000", Case: "case-00000"}, func(*pb.Result) error { return nil })
		if err != nil {
			t.Fatalf("a case's results of run %s: %v", id, err)
		}
	}

	f.startWorkers(t, o)
	start = time.Now()
	var lists [][]*pb.RunStatus
	testutil.Eventually(t, 5*time.Minute, 500*time.Millisecond, func() bool {
		lists = every()
		done := 0
		for _, list := range lists {
			for _, st := range list {
				if ended(st.GetState()) {
					done++
				}
			}
		}
		return done == runs
	}, "all %d runs to end", runs)
	t.Logf("their jobs ran and every run ended in %v", time.Since(start).Round(time.Millisecond))
	for i, list := range lists {
		for _, st := range list {
			if st.GetState() != pb.RunState_RUN_STATE_COMPLETED || st.GetDoneJobs() != 1 || st.GetCases().GetPassed() != 1 {
				t.Errorf("team %d's run %s ended %v with %d jobs done and %d cases passed, want completed with 1 and 1 (%s)",
					i, st.GetId(), st.GetState(), st.GetDoneJobs(), st.GetCases().GetPassed(), st.GetReason())
			}
		}
	}
	// Every follower and reader deleted its consumer as it ended.
	testutil.Eventually(t, 30*time.Second, 200*time.Millisecond, func() bool {
		_, n, err := f.nats.streamState(ctx, queue.ResultsStream)
		return err == nil && n == 0
	}, "the results stream to have no consumer once every run has ended")
}
