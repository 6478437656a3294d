package queue_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/internal/testutil"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

func TestUnackedJobIsRedeliveredAfterAckWait(t *testing.T) {
	_, _, topo := queuetest.StartConfig(t, fastConfig(), queue.EmbeddedConfig{})
	ctx := testCtx(t)
	if err := topo.PublishJob(ctx, queue.LaneOnDemand, "run1", "j1", []byte("job")); err != nil {
		t.Fatal(err)
	}
	first := fetchOne(t, topo.RawOnDemand(), 5*time.Second)
	if first == nil {
		t.Fatal("no job")
	}
	if n, last, err := topo.DeliveryOf(first, queue.LaneOnDemand).Attempt(); err != nil || n != 1 || last {
		t.Fatalf("first Attempt = %d, %t, %v; want 1, false", n, last, err)
	}
	// Not acked: the same job comes back once AckWait (300 ms) has passed.
	second := fetchOne(t, topo.RawOnDemand(), 5*time.Second)
	if second == nil {
		t.Fatal("job not redelivered")
	}
	if md := metadata(t, second); md.NumDelivered != 2 || md.Sequence.Stream != metadata(t, first).Sequence.Stream {
		t.Errorf("redelivery: delivered %d times, seq %d", md.NumDelivered, md.Sequence.Stream)
	}
	if n, last, err := topo.DeliveryOf(second, queue.LaneOnDemand).Attempt(); err != nil || n != 2 || last {
		t.Errorf("second Attempt = %d, %t, %v; want 2, false (MaxDeliver 3)", n, last, err)
	}
	if err := second.DoubleAck(ctx); err != nil {
		t.Fatal(err)
	}
	if got := streamMsgs(t, topo.RawJobs(), ""); got != 0 {
		t.Errorf("jobs left after ack = %d", got)
	}
}

func TestInProgressKeepsTheJob(t *testing.T) {
	cfg := queue.DefaultConfig()
	cfg.AckWait = 1500 * time.Millisecond
	_, _, topo := queuetest.StartConfig(t, cfg, queue.EmbeddedConfig{})
	ctx := testCtx(t)
	if err := topo.PublishJob(ctx, queue.LaneOnDemand, "run1", "j1", nil); err != nil {
		t.Fatal(err)
	}
	m := fetchOne(t, topo.RawOnDemand(), 5*time.Second)
	if m == nil {
		t.Fatal("no job")
	}
	// Heartbeat as a worker does while polling for a redelivery for two AckWaits. The beats
	// are twice as frequent as HeartbeatInterval: a loaded test machine stalls goroutines for
	// hundreds of milliseconds, which is about timing, not about InProgress.
	stop := make(chan struct{})
	beats := make(chan error, 1)
	go func() {
		tick := time.NewTicker(cfg.HeartbeatInterval() / 2)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				beats <- nil
				return
			case <-tick.C:
				if err := m.InProgress(); err != nil {
					beats <- err
					return
				}
			}
		}
	}()
	again := fetchOne(t, topo.RawOnDemand(), 2*cfg.AckWait)
	close(stop)
	if err := <-beats; err != nil {
		t.Fatal(err)
	}
	if again != nil {
		t.Fatalf("redelivered (delivery %d) despite heartbeats", metadata(t, again).NumDelivered)
	}
	if err := m.DoubleAck(ctx); err != nil {
		t.Fatalf("ack after heartbeating: %v", err)
	}
}

// TestMaxDeliver records what nats-server 2.15 does with a job that runs out of deliveries on a
// WorkQueue stream, and what a worker (TermWithReason on the last attempt) and a coordinator
// (WatchExhausted, DeleteJob) do about it.
func TestMaxDeliver(t *testing.T) {
	cfg := fastConfig()
	cfg.MaxDeliver = 2
	_, _, topo := queuetest.StartConfig(t, cfg, queue.EmbeddedConfig{})
	ctx := testCtx(t)

	exhausted := make(chan queue.ExhaustedJob, 4)
	stop, err := topo.WatchExhausted(ctx, func(j queue.ExhaustedJob) { exhausted <- j })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	// Deliveries that no one acks: the job's worker died each time.
	deliverAll := func(want int) jetstream.Msg {
		t.Helper()
		var m jetstream.Msg
		for i := 1; i <= want; i++ {
			if m = fetchOne(t, topo.RawOnDemand(), 5*time.Second); m == nil {
				t.Fatalf("delivery %d did not come", i)
			}
			n, last, err := topo.DeliveryOf(m, queue.LaneOnDemand).Attempt()
			if err != nil || n != i || last != (i == want) {
				t.Fatalf("Attempt = %d, %t, %v on delivery %d of %d", n, last, err, i, want)
			}
		}
		return m
	}

	t.Run("last attempt times out: message stays, advisory sent", func(t *testing.T) {
		if err := topo.PublishJob(ctx, queue.LaneOnDemand, "run1", "dies", []byte("payload")); err != nil {
			t.Fatal(err)
		}
		lastMsg := deliverAll(cfg.MaxDeliver)
		// nats-server 2.15 notices the exhaustion lazily: the advisory went out when the next
		// pull request came, not when the last AckWait ran out (none came in 60 s without one).
		// Workers always have a pull request waiting, so in practice it is prompt.
		if again := fetchOne(t, topo.RawOnDemand(), 3*cfg.AckWait); again != nil {
			t.Errorf("delivered again after max deliveries (delivery %d)", metadata(t, again).NumDelivered)
		}
		var j queue.ExhaustedJob
		select {
		case j = <-exhausted:
		case <-ctx.Done():
			t.Fatal("no MAX_DELIVERIES advisory")
		}
		if j.Run != "run1" || j.Lane != queue.LaneOnDemand || j.MsgID != queue.JobMsgID("run1", "dies") ||
			j.Deliveries != uint64(cfg.MaxDeliver) || string(j.Data) != "payload" || j.Seq != metadata(t, lastMsg).Sequence.Stream {
			t.Errorf("exhausted job = %+v", j)
		}
		if got := streamMsgs(t, topo.RawJobs(), ""); got != 1 {
			t.Errorf("jobs stored after max deliveries = %d, want 1 (the server keeps it)", got)
		}
		ci, err := topo.RawOnDemand().Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ci.NumAckPending != 0 || ci.AckFloor.Stream != 0 {
			t.Errorf("consumer after exhaustion: ack pending %d, ack floor %d; want 0 and 0 (the floor stays below the job)",
				ci.NumAckPending, ci.AckFloor.Stream)
		}
		// Without the advisory (a coordinator that was down when it went out), the consumer's
		// state finds the same job.
		found, undecided, err := topo.ExhaustedJobs(ctx)
		if err != nil || undecided != 0 || len(found) != 1 || !reflect.DeepEqual(found[0], j) {
			t.Errorf("ExhaustedJobs = %+v, %d undecided, %v; want %+v", found, undecided, err, j)
		}
		if err := topo.DeleteJob(ctx, j.Seq); err != nil {
			t.Fatal(err)
		}
		if got := streamMsgs(t, topo.RawJobs(), ""); got != 0 {
			t.Errorf("jobs stored after DeleteJob = %d, want 0", got)
		}
		if found, _, err := topo.ExhaustedJobs(ctx); err != nil || len(found) != 0 {
			t.Errorf("ExhaustedJobs after DeleteJob = %+v, %v; want none", found, err)
		}
		if err := topo.DeleteJob(ctx, j.Seq); err != nil {
			t.Errorf("DeleteJob of a deleted job = %v, want nil", err)
		}
	})

	t.Run("late term after exhaustion removes it", func(t *testing.T) {
		if err := topo.PublishJob(ctx, queue.LaneOnDemand, "run1", "slow", nil); err != nil {
			t.Fatal(err)
		}
		lastMsg := deliverAll(cfg.MaxDeliver)
		if again := fetchOne(t, topo.RawOnDemand(), 3*cfg.AckWait); again != nil {
			t.Fatalf("delivered again after max deliveries (delivery %d)", metadata(t, again).NumDelivered)
		}
		select {
		case <-exhausted:
		case <-ctx.Done():
			t.Fatal("no MAX_DELIVERIES advisory")
		}
		if err := lastMsg.TermWithReason("recorded errored late"); err != nil {
			t.Fatal(err)
		}
		if err := topo.RawJS().Conn().Flush(); err != nil {
			t.Fatal(err)
		}
		waitForMsgs(t, topo.RawJobs(), 0)
	})

	t.Run("worker terminates on the last attempt", func(t *testing.T) {
		if err := topo.PublishJob(ctx, queue.LaneOnDemand, "run1", "fails", nil); err != nil {
			t.Fatal(err)
		}
		lastMsg := deliverAll(cfg.MaxDeliver)
		// What a worker does on its last attempt when it has no verdict: publish an errored
		// result, then terminate the job.
		if err := topo.PublishResult(ctx, "run1", "", "fails", cfg.MaxDeliver, []byte("errored")); err != nil {
			t.Fatal(err)
		}
		if err := lastMsg.TermWithReason("sandbox failed to start"); err != nil {
			t.Fatal(err)
		}
		if err := topo.RawJS().Conn().Flush(); err != nil {
			t.Fatal(err)
		}
		waitForMsgs(t, topo.RawJobs(), 0)
	})
}

// waitForMsgs polls until stream holds want messages: a term is processed asynchronously.
func waitForMsgs(t *testing.T, s jetstream.Stream, want uint64) {
	t.Helper()
	testutil.Eventually(t, 2*time.Second, 20*time.Millisecond, func() bool { return streamMsgs(t, s, "") == want },
		"stream %s never held %d messages", s.CachedInfo().Config.Name, want)
}

func TestNextJobPrefersOnDemand(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	for _, p := range []struct {
		lane queue.Lane
		job  string
	}{
		{queue.LaneScheduled, "s1"}, {queue.LaneScheduled, "s2"}, {queue.LaneOnDemand, "d1"}, {queue.LaneOnDemand, "d2"},
	} {
		if err := topo.PublishJob(ctx, p.lane, "run1", p.job, []byte(p.job)); err != nil {
			t.Fatal(err)
		}
	}
	// A consumer learns of new messages asynchronously; a no-wait fetch just after the publish
	// can miss them. Start once both lanes have seen theirs.
	waitPending(t, topo.RawOnDemand(), 2)
	waitPending(t, topo.RawScheduled(), 2)
	var got []string
	for range 4 {
		m, lane, err := topo.NextJob(ctx, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if l, _, _ := queue.ParseJobSubject(m.Subject()); l != lane {
			t.Errorf("NextJob lane %s for a message on %s", lane, m.Subject())
		}
		got = append(got, string(m.Data()))
		if err := m.Ack(); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"d1", "d2", "s1", "s2"}; !equal(got, want) {
		t.Errorf("order = %v, want %v", got, want)
	}

	// Empty: NextJob waits until ctx is done.
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, _, err := topo.NextJob(short, 50*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("NextJob on empty lanes = %v, want deadline exceeded", err)
	}

	// An idle worker is handed a new on-demand job while it waits.
	type next struct {
		m   *queue.Delivery
		err error
	}
	done := make(chan next, 1)
	go func() {
		m, _, err := topo.NextJob(ctx, 10*time.Second)
		done <- next{m, err}
	}()
	if err := topo.PublishJob(ctx, queue.LaneOnDemand, "run1", "late", []byte("late")); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || string(r.m.Data()) != "late" {
		t.Fatalf("waiting NextJob = %v, %v", r.m, r.err)
	}
}

// waitPending polls until c has want messages pending.
func waitPending(t *testing.T, c jetstream.Consumer, want uint64) {
	t.Helper()
	testutil.Eventually(t, time.Second, 10*time.Millisecond, func() bool {
		info, err := c.Info(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		return info.NumPending == want
	}, "consumer %s never had %d pending", c.CachedInfo().Name, want)
}

func TestPurgeRunJobsRemovesOnlyThatRun(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	for _, run := range []string{"cancelled", "kept"} {
		for _, lane := range queue.Lanes() {
			for _, job := range []string{"j1", "j2"} {
				// One job id per lane: the same job id twice in a run is one job.
				if err := topo.PublishJob(ctx, lane, run, string(lane)+job, []byte(run)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := topo.PurgeRunJobs(ctx, "cancelled"); err != nil {
		t.Fatal(err)
	}
	if got := streamMsgs(t, topo.RawJobs(), ""); got != 4 {
		t.Errorf("jobs left = %d, want 4", got)
	}
	for range 4 {
		m, _, err := topo.NextJob(ctx, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Data()) != "kept" {
			t.Errorf("got a job of run %s", m.Data())
		}
		_ = m.Ack()
	}
	if err := topo.PurgeRunJobs(ctx, "bad.run"); err == nil {
		t.Error("PurgeRunJobs accepted a run id with a dot")
	}
}

func TestParseJobSubject(t *testing.T) {
	for _, tc := range []struct {
		subject string
		lane    queue.Lane
		run     string
		ok      bool
	}{
		{queue.JobSubject(queue.LaneOnDemand, "r1"), queue.LaneOnDemand, "r1", true},
		{queue.JobSubject(queue.LaneScheduled, "01HX-abc_d"), queue.LaneScheduled, "01HX-abc_d", true},
		{"skillfleet.jobs.urgent.r1", "", "", false},
		{"skillfleet.jobs.ondemand", "", "", false},
		{"skillfleet.jobs.ondemand.r1.extra", "", "", false},
		{"skillfleet.results.r1", "", "", false},
	} {
		lane, run, ok := queue.ParseJobSubject(tc.subject)
		if lane != tc.lane || run != tc.run || ok != tc.ok {
			t.Errorf("ParseJobSubject(%q) = %q, %q, %t", tc.subject, lane, run, ok)
		}
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
