package queue_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

var rateNow = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// TestRateReserve books cells of one budget in turn, each step's wait following from the
// generic cell rate algorithm.
func TestRateReserve(t *testing.T) {
	const T = 500 * time.Millisecond
	type step struct {
		at    time.Duration // after rateNow
		burst int
		cost  float64
		want  time.Duration
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"paced one a interval", []step{{0, 1, 1, 0}, {0, 1, 1, T}, {0, 1, 1, 2 * T}, {T, 1, 1, 2 * T}}},
		{"a burst goes at once", []step{{0, 3, 1, 0}, {0, 3, 1, 0}, {0, 3, 1, 0}, {0, 3, 1, T}}},
		{"idle time is not saved up", []step{{0, 1, 1, 0}, {10 * T, 1, 1, 0}, {10 * T, 1, 1, T}}},
		{"a cost of several cells", []step{{0, 1, 4, 3 * T}, {0, 1, 1, 4 * T}}},
		{"a burst as large as the cost pays after", []step{{0, 4, 4, 0}, {0, 1, 1, 4 * T}}},
		{"a refund gives cells back", []step{{0, 1, 4, 3 * T}, {0, 1, -2, 0}, {0, 1, 1, 2 * T}}},
		{"a refund stops at now", []step{{0, 1, 1, 0}, {0, 1, -10, 0}, {0, 1, 1, 0}}},
		{"interval 0 books nothing", []step{{0, 1, 1, 0}, {0, 1, 1, 0}, {0, 1, 1, T}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, topo := queuetest.Start(t)
			rates := topo.Rates()
			for i, s := range tc.steps {
				interval := T
				if tc.name == "interval 0 books nothing" && i == 0 {
					interval = 0
				}
				got, err := rates.Reserve(testCtx(t), "ep.requests", interval, s.burst, s.cost, rateNow.Add(s.at))
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if got != s.want {
					t.Errorf("step %d (at +%s, burst %d, cost %v): wait %s, want %s", i, s.at, s.burst, s.cost, got, s.want)
				}
			}
		})
	}
}

// TestRateDefer: a deferral holds the next booking until its time, never brings a later TAT
// forward, and a reserve of interval 0 reads it.
func TestRateDefer(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	rates := topo.Rates()
	ctx := testCtx(t)
	if err := rates.Defer(ctx, "ep.requests", rateNow.Add(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	if w, err := rates.Reserve(ctx, "ep.requests", 0, 1, 0, rateNow); err != nil || w != 3*time.Second {
		t.Fatalf("reserve of interval 0 = %s, %v; want 3s", w, err)
	}
	if err := rates.Defer(ctx, "ep.requests", rateNow.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if w, err := rates.Reserve(ctx, "ep.requests", time.Second, 1, 1, rateNow); err != nil || w != 3*time.Second {
		t.Fatalf("reserve after an earlier deferral = %s, %v; want 3s (the later one stands)", w, err)
	}
	// Other budgets are not held.
	if w, err := rates.Reserve(ctx, "other.requests", time.Second, 1, 1, rateNow); err != nil || w != 0 {
		t.Fatalf("another key = %s, %v; want 0", w, err)
	}
}

// TestRateSharedAcrossProcesses: three connections (three worker processes) of eight
// goroutines each book one budget at the same instant; compare-and-swap loses no booking, so
// the waits are exactly 0, T, 2T, … once each.
func TestRateSharedAcrossProcesses(t *testing.T) {
	const T = 100 * time.Millisecond
	e, _, _ := queuetest.Start(t)
	var (
		mu    sync.Mutex
		waits []time.Duration
		wg    sync.WaitGroup
	)
	for range 3 {
		conn := queuetest.Connect(t, e)
		topo, err := queue.OpenWorker(testCtx(t), conn, queue.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		rates := topo.Rates()
		for range 8 {
			wg.Go(func() {
				w, err := rates.Reserve(testCtx(t), "shared.requests", T, 1, 1, rateNow)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				waits = append(waits, w)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	slices.Sort(waits)
	for i, w := range waits {
		if w != time.Duration(i)*T {
			t.Fatalf("waits %v: want 0, %s, %s, … each once", waits, T, 2*T)
		}
	}
	if len(waits) != 24 {
		t.Fatalf("%d bookings, want 24", len(waits))
	}
}

func TestRateRefusesBadInput(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	rates := topo.Rates()
	for _, key := range []string{"", ".ep", "ep.", "a..b", "ep requests", "ep*", "ep>", "é", strings.Repeat("k", 257)} {
		if _, err := rates.Reserve(testCtx(t), key, time.Second, 1, 1, rateNow); err == nil || !strings.Contains(err.Error(), "invalid rate key") {
			t.Errorf("Reserve(%q) = %v, want an invalid key", key, err)
		}
		if err := rates.Defer(testCtx(t), key, rateNow); err == nil {
			t.Errorf("Defer(%q) accepted", key)
		}
	}
	for _, key := range []string{"judge.requests", "gpt-4.1_mini=a/b", "A9"} {
		if err := queue.ValidateRateKey(key); err != nil {
			t.Errorf("ValidateRateKey(%q) = %v", key, err)
		}
	}
	if _, err := rates.Reserve(testCtx(t), "ep", -time.Second, 1, 1, rateNow); err == nil {
		t.Error("a negative interval was accepted")
	}
	if _, err := rates.Reserve(testCtx(t), "ep", time.Second, 0, 1, rateNow); err == nil {
		t.Error("a burst of 0 was accepted")
	}
}

// TestRateOverwritesAForeignValue: a value that is no TAT counts as none.
func TestRateOverwritesAForeignValue(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	if _, err := topo.RawRates().Put(ctx, "ep.requests", []byte("not a time")); err != nil {
		t.Fatal(err)
	}
	if w, err := topo.Rates().Reserve(ctx, "ep.requests", time.Second, 1, 1, rateNow); err != nil || w != 0 {
		t.Fatalf("Reserve over a foreign value = %s, %v; want 0", w, err)
	}
	if w, err := topo.Rates().Reserve(ctx, "ep.requests", time.Second, 1, 1, rateNow); err != nil || w != time.Second {
		t.Fatalf("second Reserve = %s, %v; want 1s", w, err)
	}
}

// TestRatesBindLate: a worker's topology (OpenWorker) binds the bucket when first used, and
// again after failing because no coordinator had created it yet.
func TestRatesBindLate(t *testing.T) {
	_, conn, _ := startBare(t)
	ctx := testCtx(t)
	topo, err := queue.OpenWorker(ctx, conn, queue.DefaultConfig())
	if err == nil {
		t.Fatalf("OpenWorker before Ensure succeeded: %v", topo)
	}
	if _, err := queue.Ensure(ctx, conn, queue.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	if topo, err = queue.OpenWorker(ctx, conn, queue.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	if w, err := topo.Rates().Reserve(ctx, "ep.requests", time.Second, 1, 1, rateNow); err != nil || w != 0 {
		t.Fatalf("Reserve = %s, %v", w, err)
	}
}

// TestRatesWithinWorkerPermissions: the worker's and coordinator's users of
// deploy/nats/permissions.conf may book and defer in the rate budgets.
func TestRatesWithinWorkerPermissions(t *testing.T) {
	conf := queuetest.PermissionsConfig(t, "../deploy/nats/permissions.conf", "")
	t.Setenv("SKILLFLEET_COORDINATOR_PASSWORD", "coordinator-password")
	t.Setenv("SKILLFLEET_WORKER_PASSWORD", "worker-password")
	srv, err := queue.StartEmbedded(queue.EmbeddedConfig{StoreDir: t.TempDir(), Port: -1, ConfigFile: conf}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	ctx := testCtx(t)
	coordinator, err := queue.Connect(queue.ConnectConfig{URL: srv.ClientURL(), User: "skillfleet-coordinator", Password: "coordinator-password",
		InboxPrefix: "_INBOX_skillfleet_coordinator"}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(coordinator.Close)
	ctopo, err := queue.Ensure(ctx, coordinator, queue.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	worker, err := queue.Connect(queue.ConnectConfig{URL: srv.ClientURL(), User: "skillfleet-worker", Password: "worker-password",
		InboxPrefix: "_INBOX_skillfleet_worker"}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(worker.Close)
	wtopo, err := queue.OpenWorker(ctx, worker, queue.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	wrates := wtopo.Rates()
	for i, want := range []time.Duration{0, time.Second} { // a Create, then an Update
		if w, err := wrates.Reserve(ctx, "ep.requests", time.Second, 1, 1, rateNow); err != nil || w != want {
			t.Fatalf("worker's Reserve %d = %s, %v; want %s", i, w, err, want)
		}
	}
	if err := wrates.Defer(ctx, "ep.requests", rateNow.Add(5*time.Second)); err != nil {
		t.Fatalf("worker's Defer: %v", err)
	}
	if w, err := ctopo.Rates().Reserve(ctx, "ep.requests", time.Second, 1, 1, rateNow); err != nil || w != 5*time.Second {
		t.Fatalf("coordinator's Reserve = %s, %v; want 5s", w, err)
	}
}
