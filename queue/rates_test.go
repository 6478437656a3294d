package queue_test

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

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
	if err := rates.Defer(ctx, "ep.requests", rateNow.Add(3*time.Second), rateNow); err != nil {
		t.Fatal(err)
	}
	if w, err := rates.Reserve(ctx, "ep.requests", 0, 1, 0, rateNow); err != nil || w != 3*time.Second {
		t.Fatalf("reserve of interval 0 = %s, %v; want 3s", w, err)
	}
	if err := rates.Defer(ctx, "ep.requests", rateNow.Add(time.Second), rateNow); err != nil {
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

// TestRateProbe: a probe (a request whose sender does not know the interval) goes at once on
// an empty budget and is booked a second, provisionally; another within that second is told to
// ask again when it is up; the first paced booking starts one interval after the probe, not a
// second; after a paced booking, a probe takes the next slot at that booking's interval (at
// most a second); a read (interval 0) does not wait for a probe's second.
func TestRateProbe(t *testing.T) {
	const I = 510 * time.Millisecond
	_, _, topo := queuetest.Start(t)
	rates := topo.Rates()
	ctx := testCtx(t)
	at := func(d time.Duration) time.Time { return rateNow.Add(d) }
	probe := func(key string, d, want time.Duration, wantBooked bool) {
		t.Helper()
		w, booked, err := rates.Probe(ctx, key, at(d))
		if err != nil || w != want || booked != wantBooked {
			t.Fatalf("probe %s at +%s = %s, %v, %v; want %s, %v", key, d, w, booked, err, want, wantBooked)
		}
	}
	reserve := func(key string, interval, d, want time.Duration) {
		t.Helper()
		if w, err := rates.Reserve(ctx, key, interval, 1, 1, at(d)); err != nil || w != want {
			t.Fatalf("reserve %s at +%s = %s, %v; want %s", key, d, w, err, want)
		}
	}
	probe("ep.requests", 0, 0, true)
	probe("ep.requests", 100*time.Millisecond, 900*time.Millisecond, false) // the first probe's second is not up
	reserve("ep.requests", I, 50*time.Millisecond, I-50*time.Millisecond)
	probe("ep.requests", 100*time.Millisecond, 2*I-100*time.Millisecond, true) // the next slot, at the paced interval
	reserve("ep.requests", I, 100*time.Millisecond, 3*I-100*time.Millisecond)

	// An unpriced probe a second old no longer holds the next.
	probe("fresh.requests", 0, 0, true)
	probe("fresh.requests", time.Second, 0, true)
	// A deferral past a probe's request holds the next booking until the probe's second is
	// up (not one interval after the probe), whatever its interval.
	if err := rates.Defer(ctx, "fresh.requests", at(time.Second+300*time.Millisecond), at(time.Second)); err != nil {
		t.Fatal(err)
	}
	reserve("fresh.requests", 100*time.Millisecond, time.Second, time.Second)

	// A read (interval 0: a worker whose endpoint announced no limit) ends a probe's hold on
	// the next probe.
	probe("open.requests", 0, 0, true)
	reserve("open.requests", 0, 10*time.Millisecond, 0) // nor does the read wait for it
	probe("open.requests", 20*time.Millisecond, 0, true)
	reserve("open.requests", 300*time.Millisecond, 30*time.Millisecond, 290*time.Millisecond) // priced all the same

	// A paced interval past a second prices a probe at a second only.
	reserve("slow.requests", 3*time.Second, 0, 0)
	probe("slow.requests", 0, 3*time.Second, true)
	reserve("slow.requests", 3*time.Second, 0, 4*time.Second)
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
		if err := rates.Defer(testCtx(t), key, rateNow, rateNow); err == nil {
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

// startPermitted starts a server on deploy/nats/permissions.conf and connects the coordinator's
// user (which ensures the topology) and the worker's, as the daemons do.
func startPermitted(t *testing.T) (ctopo *queue.Topology, worker *queue.Conn) {
	t.Helper()
	conf := queuetest.PermissionsConfig(t, "../deploy/nats/permissions.conf", "")
	t.Setenv("SKILLFLEET_COORDINATOR_PASSWORD", "coordinator-password")
	t.Setenv("SKILLFLEET_WORKER_PASSWORD", "worker-password")
	srv, err := queue.StartEmbedded(queue.EmbeddedConfig{StoreDir: t.TempDir(), Port: -1, ConfigFile: conf}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	coordinator, err := queue.Connect(queue.ConnectConfig{URL: srv.ClientURL(), User: "skillfleet-coordinator", Password: "coordinator-password",
		InboxPrefix: "_INBOX_skillfleet_coordinator"}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(coordinator.Close)
	if ctopo, err = queue.Ensure(testCtx(t), coordinator, queue.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	worker, err = queue.Connect(queue.ConnectConfig{URL: srv.ClientURL(), User: "skillfleet-worker", Password: "worker-password",
		InboxPrefix: "_INBOX_skillfleet_worker"}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(worker.Close)
	return ctopo, worker
}

// TestRatesWithinWorkerPermissions: the worker's and coordinator's users of
// deploy/nats/permissions.conf may book and defer in the rate budgets.
func TestRatesWithinWorkerPermissions(t *testing.T) {
	ctopo, worker := startPermitted(t)
	ctx := testCtx(t)
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
	if err := wrates.Defer(ctx, "ep.requests", rateNow.Add(5*time.Second), rateNow); err != nil {
		t.Fatalf("worker's Defer: %v", err)
	}
	if w, err := ctopo.Rates().Reserve(ctx, "ep.requests", time.Second, 1, 1, rateNow); err != nil || w != 5*time.Second {
		t.Fatalf("coordinator's Reserve = %s, %v; want 5s", w, err)
	}
}

// TestRatesWorkerCannotPoison: a connection with the shipped worker credentials publishes
// straight to a budget's subject, as one 19-byte publish of a far-future value once stalled
// every prompt case of a fleet. Whatever it writes, the next booking waits at most RateMaxWait
// (nothing, for a value no fleet could have written), and the one after it is paced as
// if the value had never been there: the poison does not outlive the booking that reads it.
func TestRatesWorkerCannotPoison(t *testing.T) {
	const T = time.Second
	unix := func(d time.Duration) string { return strconv.FormatInt(rateNow.Add(d).UnixNano(), 10) }
	for _, tc := range []struct {
		name, key, value string
		// first is the wait of the first booking after the publish; second that of the next.
		first, second time.Duration
	}{
		{"the largest int64, 19 bytes", "ep.requests", "9223372036854775807", 0, T},
		{"a year ahead", "ep.requests", unix(365 * 24 * time.Hour), 0, T},
		{"just past the horizon", "ep.requests", unix(3*time.Minute + time.Second), 0, T},
		{"within reach, waited at most a minute", "ep.requests", unix(2 * time.Minute), queue.RateMaxWait, queue.RateMaxWait},
		{"negative", "ep.requests", "-9223372036854775808", 0, T},
		{"signed", "ep.requests", "+" + unix(time.Hour)[1:], 0, T},
		{"garbage", "ep.requests", "not a time", 0, T},
		{"an exponent", "ep.requests", "9e18", 0, T},
		{"past int64", "ep.requests", strings.Repeat("9", 19) + "9", 0, T},
		{"huge", "ep.requests", strings.Repeat("9", 900), 0, T},
		{"empty", "ep.requests", "", 0, T},
		{"a key of no endpoint", "other.requests", "9223372036854775807", 0, T},
		{"a probe within reach", "ep.requests", unix(2*time.Minute) + "/p", queue.RateMaxWait, queue.RateMaxWait},
		{"a probe in the past", "ep.requests", unix(-time.Hour) + "/p", 0, T},
		{"a paced tail", "ep.requests", unix(0) + "/1", 0, T},
		{"an interval of 0", "ep.requests", unix(time.Hour) + "/0", 0, T},
		{"an interval past the horizon", "ep.requests", unix(0) + "/9223372036854775807", 0, T},
		{"a signed interval", "ep.requests", unix(time.Hour) + "/-1", 0, T},
		{"two tails", "ep.requests", unix(time.Hour) + "/p/p", 0, T},
		{"an open probe within reach", "ep.requests", unix(2*time.Minute) + "/o", queue.RateMaxWait, queue.RateMaxWait},
		{"a tail of no kind", "ep.requests", unix(time.Hour) + "/q", 0, T},
		{"an empty tail", "ep.requests", unix(time.Hour) + "/", 0, T},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctopo, worker := startPermitted(t)
			ctx := testCtx(t)
			js, err := jetstream.New(worker.NATS())
			if err != nil {
				t.Fatal(err)
			}
			// Stored, or refused by the bucket (a value over its size): either way the
			// bookings below must not care.
			_, _ = js.Publish(ctx, "$KV."+queue.RatesBucket+"."+tc.key, []byte(tc.value))
			rates := ctopo.Rates()
			for i, want := range []time.Duration{tc.first, tc.second} {
				if w, err := rates.Reserve(ctx, "ep.requests", T, 1, 1, rateNow); err != nil || w != want {
					t.Fatalf("booking %d after %q: wait %s, %v; want %s", i, tc.value, w, err, want)
				}
			}
			_, _ = js.Publish(ctx, "$KV."+queue.RatesBucket+"."+tc.key, []byte(tc.value))
			if w, _, err := rates.Probe(ctx, "ep.requests", rateNow); err != nil || w > queue.RateMaxWait {
				t.Fatalf("probe after %q: wait %s, %v; want at most %s", tc.value, w, err, queue.RateMaxWait)
			}
		})
	}
	t.Run("a deferral", func(t *testing.T) {
		ctopo, worker := startPermitted(t)
		ctx := testCtx(t)
		js, err := jetstream.New(worker.NATS())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(ctx, "$KV."+queue.RatesBucket+".ep.requests", []byte("9223372036854775807")); err != nil {
			t.Fatal(err)
		}
		// A far-future value does not make a deferral of its own last forever, and a
		// deferral is held at most RateMaxWait.
		rates := ctopo.Rates()
		if err := rates.Defer(ctx, "ep.requests", rateNow.Add(5*time.Second), rateNow); err != nil {
			t.Fatal(err)
		}
		if w, err := rates.Reserve(ctx, "ep.requests", 0, 1, 0, rateNow); err != nil || w != 5*time.Second {
			t.Fatalf("reserve after the deferral = %s, %v; want 5s", w, err)
		}
		if err := rates.Defer(ctx, "ep.requests", rateNow.Add(time.Hour), rateNow); err != nil {
			t.Fatal(err)
		}
		if w, err := rates.Reserve(ctx, "ep.requests", 0, 1, 0, rateNow); err != nil || w != queue.RateMaxWait {
			t.Fatalf("reserve after a deferral of an hour = %s, %v; want %s", w, err, queue.RateMaxWait)
		}
	})
}

// TestRatesWorkerCannotFill: a worker that writes keys of no endpoint, twice the bucket's bound
// of them, leaves the bucket within its bound, and a budget booked afterwards is paced as
// always.
func TestRatesWorkerCannotFill(t *testing.T) {
	ctopo, worker := startPermitted(t)
	ctx := testCtx(t)
	if _, err := ctopo.Rates().Reserve(ctx, "ep.requests", time.Second, 1, 1, rateNow); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(worker.NATS(), jetstream.WithPublishAsyncMaxPending(512))
	if err != nil {
		t.Fatal(err)
	}
	value := []byte(strconv.FormatInt(rateNow.UnixNano(), 10))
	prefix := "$KV." + queue.RatesBucket + "." + strings.Repeat("k", 200) + "."
	var written int
	for i := 0; written < 2*queue.RatesMaxBytes; i++ {
		subject := prefix + strconv.Itoa(i)
		if _, err := js.PublishAsync(subject, value); err != nil {
			t.Fatal(err)
		}
		written += len(subject) + len(value)
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		t.Fatal("the worker's publishes were not all acknowledged")
	}
	info, err := ctopo.RawJS().Stream(ctx, "KV_"+queue.RatesBucket)
	if err != nil {
		t.Fatal(err)
	}
	if st := info.CachedInfo().State; st.Bytes > queue.RatesMaxBytes {
		t.Fatalf("the bucket holds %d bytes in %d entries after %d written: want at most %d", st.Bytes, st.Msgs, written, queue.RatesMaxBytes)
	}
	// The budget booked before is paced as always, and a new one is created, not refused for
	// want of room (a bucket that refuses new entries when full, the client library's
	// default, refused it).
	for _, key := range []string{"ep.requests", "new.requests"} {
		for i, want := range []time.Duration{0, time.Second} {
			if w, err := ctopo.Rates().Reserve(ctx, key, time.Second, 1, 1, rateNow.Add(time.Minute)); err != nil || w != want {
				t.Fatalf("%s booking %d after the filling: %s, %v; want %s", key, i, w, err, want)
			}
		}
	}
}
