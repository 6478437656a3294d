package queue_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

func TestPublishJobDeduplicates(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	for _, p := range []struct {
		lane     queue.Lane
		run, job string
	}{
		{queue.LaneOnDemand, "run1", "j1"},
		{queue.LaneOnDemand, "run1", "j1"}, // the same job again: dropped
		{queue.LaneOnDemand, "run1", "j2"},
		// The same job id in another run is another job: job ids are stable across runs.
		{queue.LaneOnDemand, "run2", "j1"},
	} {
		if err := topo.PublishJob(ctx, p.lane, p.run, p.job, []byte("job")); err != nil {
			t.Fatal(err)
		}
	}
	if got := streamMsgs(t, topo.RawJobs(), ""); got != 3 {
		t.Errorf("jobs stored = %d, want 3", got)
	}
	if got := streamMsgs(t, topo.RawJobs(), queue.JobSubject(queue.LaneOnDemand, "run1")); got != 2 {
		t.Errorf("run1 jobs stored = %d, want 2", got)
	}
}

// TestPublishJobIDStaysDeduplicatedAfterAck records nats-server#2921/#5142: on a WorkQueue
// stream a job's message id stays known after the job is acked and removed, so re-publishing
// within the window does not queue it again.
func TestPublishJobIDStaysDeduplicatedAfterAck(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	if err := topo.PublishJob(ctx, queue.LaneScheduled, "run1", "j1", nil); err != nil {
		t.Fatal(err)
	}
	m := fetchOne(t, topo.RawScheduled(), 5e9)
	if m == nil {
		t.Fatal("no job")
	}
	if err := m.DoubleAck(ctx); err != nil {
		t.Fatal(err)
	}
	if err := topo.PublishJob(ctx, queue.LaneScheduled, "run1", "j1", nil); err != nil {
		t.Fatal(err)
	}
	if got := streamMsgs(t, topo.RawJobs(), ""); got != 0 {
		t.Errorf("jobs stored after re-publishing an acked job = %d, want 0", got)
	}
}

func TestPublishResultDeduplicatesPerAttempt(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	for _, p := range []struct {
		run, job string
		attempt  int
	}{
		{"run1", "j1", 1},
		{"run1", "j1", 1}, // a retried publish of the same attempt: dropped
		{"run1", "j1", 2}, // the next attempt: kept
		{"run2", "j1", 1}, // another run: kept
	} {
		if err := topo.PublishResult(ctx, p.run, "", p.job, p.attempt, []byte("result")); err != nil {
			t.Fatal(err)
		}
	}
	// Another result under the same attempt (a forgery published first, say) does not make the
	// server drop the real one as a duplicate.
	if err := topo.PublishResult(ctx, "run1", "", "j1", 1, []byte("another result")); err != nil {
		t.Fatal(err)
	}
	if got := streamMsgs(t, topo.RawResults(), ""); got != 4 {
		t.Errorf("results stored = %d, want 4", got)
	}
}

func TestPublishRejectsBadArguments(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	for _, tc := range []struct {
		name    string
		publish func() error
		want    string
	}{
		{"unknown lane", func() error { return topo.PublishJob(ctx, "urgent", "run1", "j1", nil) }, "unknown lane"},
		{"run id with a dot", func() error { return topo.PublishJob(ctx, queue.LaneOnDemand, "run.1", "j1", nil) }, "invalid run id"},
		{"run id with a wildcard", func() error { return topo.PublishJob(ctx, queue.LaneOnDemand, "*", "j1", nil) }, "invalid run id"},
		{"empty job id", func() error { return topo.PublishJob(ctx, queue.LaneOnDemand, "run1", "", nil) }, "invalid job id"},
		{"result attempt 0", func() error { return topo.PublishResult(ctx, "run1", "", "j1", 0, nil) }, "attempt"},
		{"result run with a space", func() error { return topo.PublishResult(ctx, "run 1", "", "j1", 1, nil) }, "invalid run id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.publish()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error about %q", err, tc.want)
			}
		})
	}
}

func TestJobPublisher(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	cfg := queue.DefaultJobPublisherConfig()
	cfg.MaxInFlight = 16 // far fewer than the jobs, so Publish has to wait for acks
	p, err := topo.NewJobPublisher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const jobs = 500
	for i := range jobs {
		lane := queue.LaneOnDemand
		if i%2 == 1 {
			lane = queue.LaneScheduled
		}
		if err := p.Publish(ctx, lane, "run1", fmt.Sprintf("j%d", i), []byte("job")); err != nil {
			t.Fatal(err)
		}
	}
	// Half of them again: duplicates.
	for i := range jobs / 2 {
		lane := queue.LaneOnDemand
		if i%2 == 1 {
			lane = queue.LaneScheduled
		}
		if err := p.Publish(ctx, lane, "run1", fmt.Sprintf("j%d", i), []byte("job")); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Wait(ctx, "run1"); err != nil {
		t.Fatal(err)
	}
	if got, want := p.Stats(), (queue.PublishStats{Stored: jobs, Duplicates: jobs / 2}); got != want {
		t.Errorf("stats = %+v, want %+v", got, want)
	}
	if got := streamMsgs(t, topo.RawJobs(), ""); got != jobs {
		t.Errorf("jobs stored = %d, want %d", got, jobs)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestJobPublisherReportsRefusals(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	p, err := topo.NewJobPublisher(queue.DefaultJobPublisherConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	// A jobs stream that is full and discards new messages refuses publishes for good; the
	// refusals must surface in Wait, not vanish.
	cfg := topo.RawJobs().CachedInfo().Config
	cfg.MaxMsgs, cfg.Discard = 1, jetstream.DiscardNew
	if _, err := topo.RawJS().UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(ctx, queue.LaneOnDemand, "run1", "ok", nil); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(ctx, "run1"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := p.Publish(ctx, queue.LaneOnDemand, "run1", fmt.Sprintf("lost%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	err = p.Wait(ctx, "run1")
	if err == nil || !strings.Contains(err.Error(), "3 job publication(s) of run run1 failed") || !strings.Contains(err.Error(), "run1.lost") {
		t.Fatalf("Wait = %v, want 3 failures naming the message id", err)
	}
	if err := p.Wait(ctx, "run1"); err != nil {
		t.Errorf("second Wait = %v, want the failures forgotten", err)
	}
	if st := p.Stats(); st.Failed != 3 {
		t.Errorf("stats = %+v, want 3 failed", st)
	}
	ctxDone, cancel := context.WithCancel(ctx)
	cancel()
	if err := p.Wait(ctxDone, "run1"); err != nil {
		t.Errorf("Wait with nothing in flight = %v, want nil even with ctx done", err)
	}
}

// Each result learns how its publication settled, exactly once: stored (a second attempt's
// result too, and a resent one as a duplicate), or refused for good.
func TestResultPublisherSettlesEachResult(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	p, err := topo.NewResultPublisher(queue.DefaultResultPublisherConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	type outcome struct {
		id  string
		err error
	}
	settled := make(chan outcome, 16)
	publish := func(job string, attempt int, data []byte) {
		t.Helper()
		id := fmt.Sprintf("%s/%d", job, attempt)
		if err := p.PublishResult(ctx, "run1", "", job, attempt, data, func(err error) { settled <- outcome{id, err} }); err != nil {
			t.Fatal(err)
		}
	}
	publish("j1", 1, []byte("r"))
	publish("j1", 2, []byte("r"))
	publish("j1", 1, []byte("r")) // a resend: deduplicated, still a success
	got := map[string]int{}
	for range 3 {
		o := <-settled
		if o.err != nil {
			t.Fatalf("result %s: %v", o.id, o.err)
		}
		got[o.id]++
	}
	if got["j1/1"] != 2 || got["j1/2"] != 1 {
		t.Fatalf("settled %v", got)
	}
	if st := p.Stats(); st.Stored != 2 || st.Duplicates != 1 {
		t.Errorf("stats = %+v, want 2 stored and 1 duplicate", st)
	}
	if n := streamMsgs(t, topo.RawResults(), ""); n != 2 {
		t.Errorf("results stored = %d, want 2", n)
	}

	// Too big for the server: refused for good, and said so to the caller's callback.
	publish("j2", 1, make([]byte, 2<<20))
	if o := <-settled; o.id != "j2/1" || o.err == nil {
		t.Fatalf("oversized result settled as %+v, want an error", o)
	}
	select {
	case o := <-settled:
		t.Fatalf("a second settlement: %+v", o)
	default:
	}
	if err := p.PublishResult(ctx, "run1", "", "j3", 0, nil, func(error) { t.Error("callback for a refused call") }); err == nil {
		t.Error("attempt 0 accepted")
	}
}

// TestJobPublisherKeepsFailuresPerRun: the coordinator shares one publisher between runs. A
// job of run "bad" the server refuses (over its max payload) must be reported to run bad's Wait
// and never to run "good"'s, which publishes at the same time: otherwise good is told it
// failed, and bad, its failure consumed by another, is marked published with a job missing.
func TestJobPublisherKeepsFailuresPerRun(t *testing.T) {
	_, nc, topo := queuetest.Start(t)
	ctx := testCtx(t)
	p, err := topo.NewJobPublisher(queue.DefaultJobPublisherConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	huge := make([]byte, nc.MaxPayload()+1)

	// In order first: bad's failure is settled before good publishes and waits.
	if err := p.Publish(ctx, queue.LaneOnDemand, "bad", "big", huge); err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(ctx, queue.LaneOnDemand, "good", "g0", []byte("job")); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(ctx, "good"); err != nil {
		t.Fatalf("Wait(good) = %v, want nil: the failure is bad's", err)
	}
	if err := p.Wait(ctx, "bad"); err == nil || !strings.Contains(err.Error(), "bad.big") {
		t.Fatalf("Wait(bad) = %v, want bad's refused job", err)
	}

	// Then at the same time, many rounds.
	const rounds, jobs = 20, 50
	errs := make(chan error, 2*rounds)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for r := range rounds {
			for i := range jobs {
				if err := p.Publish(ctx, queue.LaneOnDemand, "good", fmt.Sprintf("r%dj%d", r, i), []byte("job")); err != nil {
					errs <- err
					return
				}
			}
			if err := p.Wait(ctx, "good"); err != nil {
				errs <- fmt.Errorf("round %d: Wait(good) = %w", r, err)
			}
		}
	}()
	for r := range rounds {
		if err := p.Publish(ctx, queue.LaneOnDemand, "bad", fmt.Sprintf("ok%d", r), []byte("job")); err != nil {
			t.Fatal(err)
		}
		if err := p.Publish(ctx, queue.LaneOnDemand, "bad", fmt.Sprintf("big%d", r), huge); err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(ctx, "bad"); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("bad.big%d", r)) {
			t.Errorf("round %d: Wait(bad) = %v, want its refused job", r, err)
		}
	}
	<-done
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := streamMsgs(t, topo.RawJobs(), queue.JobSubject(queue.LaneOnDemand, "good")); got != 1+rounds*jobs {
		t.Errorf("good's jobs stored = %d, want %d", got, 1+rounds*jobs)
	}
}
