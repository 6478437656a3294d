package coordinator_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/coordinator"
	fakeclock "github.com/skillfleet/skillfleet/internal/clock"
	"github.com/skillfleet/skillfleet/internal/testutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

// slot0 is one minute before a nightly schedule's 02:00 slot.
var slot0 = time.Date(2026, 3, 1, 1, 59, 0, 0, time.UTC)

// scheduler starts a coordinator on topo whose time is clk. Its schedule loop ticks too
// rarely to matter, so a test fires schedules by calling FireDue.
func scheduler(t *testing.T, topo *queue.Topology, clk fakeclock.Clock, every time.Duration) *coordinator.Coordinator {
	t.Helper()
	if every == 0 {
		every = 100_000 * time.Hour
	}
	c, err := coordinator.New(coordinator.Config{DataDir: t.TempDir(), Agents: []string{"fixture-agent"}, ScheduleEvery: every},
		coordinator.Deps{Queue: topo, Runs: topo.Runs(), Bundles: topo, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func pushNightly(t *testing.T, c *coordinator.Coordinator) *coordinator.PushedSuite {
	t.Helper()
	ctx := context.Background()
	ps, err := c.PushSuite(ctx, "", "nightly", bytes.NewReader(twoCaseSuite(t)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddSchedule(ctx, coordinator.Schedule{Name: "n2am", Suite: "nightly", Cron: "0 2 * * *", MaxCost: 12.5}); err != nil {
		t.Fatal(err)
	}
	return ps
}

func TestScheduleFiresAtItsSlot(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := context.Background()
	clk := fakeclock.NewFake(slot0)
	c := scheduler(t, topo, clk, 0)
	ps := pushNightly(t, c)

	if runs, err := c.FireDue(ctx); err != nil || len(runs) != 0 {
		t.Fatalf("before the slot: fired %v, %v", runs, err)
	}
	clk.Advance(90 * time.Second)
	runs, err := c.FireDue(ctx)
	if err != nil || len(runs) != 1 {
		t.Fatalf("at the slot: fired %v, %v; want one run", runs, err)
	}
	st, err := c.Status(ctx, runs[0])
	if err != nil {
		t.Fatal(err)
	}
	spec := st.GetSpec()
	if spec.GetName() != "nightly" || spec.GetPriority() != pb.Priority_PRIORITY_SCHEDULED || spec.GetBundleDigest() != ps.BundleDigest || st.GetTotalJobs() != 2 || spec.GetMaxCost() != 12.5 {
		t.Fatalf("fired run: name %q priority %s bundle %s jobs %d max cost %v", spec.GetName(), spec.GetPriority(), spec.GetBundleDigest(), st.GetTotalJobs(), spec.GetMaxCost())
	}
	if again, err := c.FireDue(ctx); err != nil || len(again) != 0 {
		t.Fatalf("the same slot fired again: %v, %v", again, err)
	}
	scheds, err := c.Schedules(ctx)
	if err != nil || len(scheds) != 1 {
		t.Fatalf("schedules %v, %v", scheds, err)
	}
	if s := scheds[0]; !s.LastFired.Equal(slot0.Add(time.Minute)) || s.LastRun != runs[0] || s.LastError != "" {
		t.Fatalf("schedule after its fire: %+v", s)
	}
}

func TestMissedSlotsFireOnceAfterRestart(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := context.Background()
	clk := fakeclock.NewFake(slot0)
	first := scheduler(t, topo, clk, 0)
	pushNightly(t, first)
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Down for three nights and a bit: the next coordinator fires one run, for the last slot.
	clk.Advance(3*24*time.Hour + 4*time.Hour)
	second := scheduler(t, topo, clk, 0)
	// The coordinator fires what it missed as it starts; this call races it for the slot, and
	// whichever wins, one run is made.
	if _, err := second.FireDue(ctx); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool {
		runs, err := second.List(ctx)
		return err == nil && len(runs) == 1
	}, "the missed slot was not fired")
	if again, _ := second.FireDue(ctx); len(again) != 0 {
		t.Fatalf("missed slots fired again: %v", again)
	}
	if runs, err := second.List(ctx); err != nil || len(runs) != 1 {
		t.Fatalf("%d runs after the restart (%v), want one", len(runs), err)
	}
	scheds, _ := second.Schedules(ctx)
	if want := time.Date(2026, 3, 4, 2, 0, 0, 0, time.UTC); len(scheds) != 1 || !scheds[0].LastFired.Equal(want) {
		t.Fatalf("schedules %+v, want last_fired %s", scheds, want)
	}
}

func TestScheduleLoopFiresOnTheClock(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := context.Background()
	clk := fakeclock.NewFake(slot0)
	c := scheduler(t, topo, clk, time.Minute)
	pushNightly(t, c)
	clk.Advance(2 * time.Minute) // the loop's ticker fires once
	testutil.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool {
		runs, err := c.List(ctx)
		return err == nil && len(runs) == 1
	}, "the schedule loop did not fire the slot")
}

func TestTwoCoordinatorsFireEachSlotOnce(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := context.Background()
	clk := fakeclock.NewFake(slot0)
	a, b := scheduler(t, topo, clk, 0), scheduler(t, topo, clk, 0)
	pushNightly(t, a)
	for night := range 3 {
		clk.Advance(24 * time.Hour)
		var mu sync.Mutex
		var fired []string
		var wg sync.WaitGroup
		for _, c := range []*coordinator.Coordinator{a, b, a, b} {
			wg.Go(func() {
				runs, err := c.FireDue(ctx)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				fired = append(fired, runs...)
				mu.Unlock()
			})
		}
		wg.Wait()
		if len(fired) != 1 {
			t.Fatalf("night %d: fired %v, want exactly one run", night, fired)
		}
	}
	runs, err := a.List(ctx)
	if err != nil || len(runs) != 3 {
		t.Fatalf("stored runs %d, %v; want 3", len(runs), err)
	}
}

func TestScheduleRefusals(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := context.Background()
	c := scheduler(t, topo, fakeclock.NewFake(slot0), 0)
	pushNightly(t, c)
	srv := httptest.NewServer(c.Handler(coordinator.APIConfig{}))
	t.Cleanup(srv.Close)
	cl := coordinator.NewClient(srv.URL, "", nil)

	tests := []struct {
		name   string
		sched  string
		req    coordinator.ScheduleRequest
		status int
		msg    string
	}{
		{"bad cron", "x", coordinator.ScheduleRequest{Suite: "nightly", Cron: "0 25 * * *"}, http.StatusBadRequest, "end of range (25) above maximum (23)"},
		{"too few fields", "x", coordinator.ScheduleRequest{Suite: "nightly", Cron: "0 2 *"}, http.StatusBadRequest, "expected exactly 5 fields"},
		{"unknown suite", "x", coordinator.ScheduleRequest{Suite: "weekly", Cron: "@daily"}, http.StatusNotFound, "no suite pushed"},
		{"bad name", "a.b", coordinator.ScheduleRequest{Suite: "nightly", Cron: "@daily"}, http.StatusBadRequest, "schedule name"},
		{"name in use", "n2am", coordinator.ScheduleRequest{Suite: "nightly", Cron: "@daily"}, http.StatusConflict, "remove it first"},
		{"unknown agent", "x", coordinator.ScheduleRequest{Suite: "nightly", Cron: "@daily", Agents: []string{"nope"}}, http.StatusUnprocessableEntity, "unknown agent"},
		{"negative cost cap", "x", coordinator.ScheduleRequest{Suite: "nightly", Cron: "@daily", MaxCost: -1}, http.StatusUnprocessableEntity, "a cost cap must be a positive number"},
		// The review's schedule that fired at every check and planned a run each time.
		{"every 0s", "x", coordinator.ScheduleRequest{Suite: "nightly", Cron: "@every 0s"}, http.StatusBadRequest, "more often than the fleet's minimum interval of 5m0s"},
		{"every minute", "x", coordinator.ScheduleRequest{Suite: "nightly", Cron: "* * * * *"}, http.StatusBadRequest, "fires every 1m0s"},
		{"two close slots an hour", "x", coordinator.ScheduleRequest{Suite: "nightly", Cron: "0,2 * * * *"}, http.StatusBadRequest, "fires every 2m0s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cl.AddSchedule(ctx, tc.sched, tc.req)
			var ae *coordinator.APIError
			if !errors.As(err, &ae) || ae.Status != tc.status || !strings.Contains(ae.Message, tc.msg) {
				t.Fatalf("got %v, want %d containing %q", err, tc.status, tc.msg)
			}
		})
	}
	if err := cl.RemoveSchedule(ctx, "missing"); !isStatus(err, http.StatusNotFound) {
		t.Fatalf("removing a missing schedule: %v, want 404", err)
	}
	if _, err := cl.PushSuite(ctx, "bad name!", bytes.NewReader(twoCaseSuite(t))); !isStatus(err, http.StatusBadRequest) {
		t.Fatalf("pushing under a bad name: %v, want 400", err)
	}
	if _, err := cl.PushSuite(ctx, "broken", bytes.NewReader(bundleOf(t, badCaseSuite(t)))); !isStatus(err, http.StatusUnprocessableEntity) {
		t.Fatalf("pushing a suite that cannot be planned: %v, want 422", err)
	}
	if suites, err := cl.Suites(ctx); err != nil || len(suites) != 1 || suites[0].Name != "nightly" {
		t.Fatalf("suites %v, %v; want only nightly (a refused push stores nothing)", suites, err)
	}
	if err := cl.RemoveSchedule(ctx, "n2am"); err != nil {
		t.Fatal(err)
	}
	if s, err := cl.Schedules(ctx); err != nil || len(s) != 0 {
		t.Fatalf("schedules after remove: %v, %v", s, err)
	}
	// Schedules and suites share the run bucket but are not runs.
	if runs, err := c.List(ctx); err != nil || len(runs) != 0 {
		t.Fatalf("runs %v, %v; want none", runs, err)
	}
}

func isStatus(err error, code int) bool {
	var ae *coordinator.APIError
	return errors.As(err, &ae) && ae.Status == code
}

func TestRetentionKeepsPushedSuite(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := context.Background()
	// The object store stamps uploads with the wall clock: start there.
	clk := fakeclock.NewFake(time.Now())
	c := scheduler(t, topo, clk, 0)
	first, err := c.PushSuite(ctx, "", "nightly", bytes.NewReader(twoCaseSuite(t)))
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(48 * time.Hour)
	if _, err := c.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if !hasBundle(t, topo, first.BundleDigest) {
		t.Fatal("the sweep deleted the pushed suite's bundle")
	}
	// A newer push replaces it; the old bundle, which no run uses, goes.
	second, err := c.PushSuite(ctx, "", "nightly", bytes.NewReader(bundleOf(t, plannedSuite(t))))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if hasBundle(t, topo, first.BundleDigest) || !hasBundle(t, topo, second.BundleDigest) {
		t.Fatal("after a newer push the sweep should keep only the latest bundle")
	}
}

func hasBundle(t *testing.T, topo *queue.Topology, digest string) bool {
	t.Helper()
	list, err := topo.ListBundles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range list {
		if b.Digest == digest {
			return true
		}
	}
	return false
}

// TestScheduleLimits: the fleet keeps a bounded number of schedules, and a fire its creator's
// quota cannot take is skipped before any planning.
func TestScheduleLimits(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := context.Background()
	clk := fakeclock.NewFake(slot0)
	c, err := coordinator.New(coordinator.Config{DataDir: t.TempDir(), Agents: []string{"fixture-agent"}, ScheduleEvery: 100_000 * time.Hour,
		MaxSchedules: 2, MaxJobsPerRun: 1, MaxJobsPerPrincipal: 1},
		coordinator.Deps{Queue: topo, Runs: topo.Runs(), Bundles: topo, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(ctx) })
	oneCase := bundleOf(t, writeFiles(t, map[string]string{"s/SKILL.md": okSkill, "s/cases.yaml": "cases:\n  - name: a\n    input: hi\n    assertions:\n      output_contains: [\"x\"]\n"}))
	if _, err := c.PushSuite(ctx, "", "nightly", bytes.NewReader(oneCase)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if _, err := c.AddSchedule(ctx, coordinator.Schedule{Name: name, Suite: "nightly", Cron: "0 2 * * *"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.AddSchedule(ctx, coordinator.Schedule{Name: "c", Suite: "nightly", Cron: "0 3 * * *"}); err == nil || !strings.Contains(err.Error(), "its limit") {
		t.Errorf("a third schedule over a limit of 2: %v", err)
	}
	// Both fire at 02:00; the first run takes the quota of one job, the second fire is
	// refused without a plan.
	clk.Advance(2 * time.Minute)
	runs, err := c.FireDue(ctx)
	if len(runs) != 1 || err != nil {
		t.Fatalf("fired %v, %v; want one run", runs, err)
	}
	scheds, err := c.Schedules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	skipped := 0
	for _, s := range scheds {
		if strings.Contains(s.LastError, "without planning") {
			skipped++
		}
	}
	if skipped != 1 {
		t.Errorf("schedules %+v: want the second fire skipped without planning", scheds)
	}
}
