package sandbox

import (
	"context"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/prometheus/client_golang/prometheus/testutil"

	sftest "github.com/skillfleet/skillfleet/internal/testutil"
)

// eventually polls cond until it holds, failing after a generous bound. It waits for
// background work (pool refills); it asserts nothing about time.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	sftest.Eventually(t, 30*time.Second, 10*time.Millisecond, cond, "gave up waiting for %s", what)
}

func TestPoolFake(t *testing.T) {
	clk := newFakeClock()
	f := newFakeDocker(clk.Now)
	r := newFakeRunner(t, f, clk, func(c *Config) {
		c.WarmPool = 2
		c.PoolMaxKeys = 2
		c.PoolTTL = 10 * time.Minute
		c.MaxTimeout = 10 * time.Minute
	})
	ctx := context.Background()
	idle := func(n int) func() bool { return func() bool { return r.Counters().Idle == n } }
	used := map[string]bool{}
	job := func(spec Spec, wantWarm bool) {
		t.Helper()
		clk.Advance(time.Second) // distinct use times for the LRU
		s, err := r.Acquire(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		if s.Warm() != wantWarm {
			t.Fatalf("Acquire warm = %v; want %v", s.Warm(), wantWarm)
		}
		if used[s.ID()] {
			t.Fatalf("container %s handed out twice", s.ID())
		}
		used[s.ID()] = true
		if _, err := s.Exec(ctx, ExecRequest{Cmd: []string{"true"}}); err != nil {
			t.Fatal(err)
		}
		if err := r.Release(ctx, s); err != nil {
			t.Fatal(err)
		}
		if f.lookupLocked(s.ID()) {
			t.Fatalf("released container %s still exists", s.ID())
		}
	}

	job(Spec{JobID: "1"}, false) // first for the key: cold, then the pool fills
	eventually(t, "pool to fill", idle(2))
	job(Spec{JobID: "2"}, true)
	job(Spec{JobID: "3"}, true)
	eventually(t, "pool to refill", idle(2))
	if got := testutil.ToFloat64(r.m.poolHits); got != 2 {
		t.Errorf("pool hits metric = %v; want 2", got)
	}
	if got := testutil.ToFloat64(r.m.poolMisses); got != 1 {
		t.Errorf("pool misses metric = %v; want 1", got)
	}

	// Other limits are another key: a miss, and a second pool.
	job(Spec{JobID: "4", Limits: Limits{MemoryBytes: 256 << 20}}, false)
	eventually(t, "second key to fill", idle(4))
	// A third key evicts the least recently used (the first).
	job(Spec{JobID: "5", Limits: Limits{Pids: 100}}, false)
	eventually(t, "eviction and third key", idle(4))
	job(Spec{JobID: "6"}, false) // the first key was evicted

	// A warm container without enough life left for a long job is discarded, not used.
	eventually(t, "refill", idle(4))
	clk.Advance(15 * time.Minute) // labels: created + 10m TTL + 10m max job + 1m start
	job(Spec{JobID: "7", Timeout: 10 * time.Minute}, false)
	// Its refill must land before the clock moves on: a container started after the advance
	// is fresh and would (rightly) outlive the janitor's pass below.
	eventually(t, "refill after the stale discard", idle(4))

	// Idle containers older than PoolTTL are dropped by the janitor.
	clk.Advance(11 * time.Minute)
	r.expirePool()
	eventually(t, "expired containers removed", idle(0))

	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	assertNoLeak(t, f)
	if c := r.Counters(); c.Live != 0 || c.Created != c.Removed {
		t.Fatalf("after Close: %+v", c)
	}
}

func (f *fakeDocker) lookupLocked(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lookup(id) != nil
}

// Failing refills do not leak and do not break cold starts.
func TestPoolRefillFailure(t *testing.T) {
	clk := newFakeClock()
	f := newFakeDocker(clk.Now)
	r := newFakeRunner(t, f, clk, func(c *Config) { c.WarmPool = 1 })
	f.failNth["ContainerStart"] = 2 // the refill's start
	ctx := context.Background()
	s, err := r.Acquire(ctx, Spec{JobID: "1"})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "failed refill cleaned up", func() bool { return f.count("ContainerRemove") == 1 })
	_ = r.Release(ctx, s)
	s, err = r.Acquire(ctx, Spec{JobID: "2"})
	if err != nil || s.Warm() {
		t.Fatalf("Acquire after a failed refill = %v, warm %v; want a cold start", err, s != nil && s.Warm())
	}
	_ = r.Release(ctx, s)
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	assertNoLeak(t, f)
}

// TestPoolDocker: a warm Acquire is served from the pool, each container serves one job, and
// Close leaves nothing behind.
func TestPoolDocker(t *testing.T) {
	c := realDocker(t)
	r, reg := newRealRunner(t, c, func(cfg *Config) { cfg.WarmPool = 1 })
	ctx := context.Background()
	skills := t.TempDir()
	spec := Spec{Mounts: []Mount{{Source: skills, Target: "/skills"}}}

	var ids []string
	for i := range 3 {
		if i > 0 {
			eventually(t, "the pool to refill", func() bool { return r.Counters().Idle == 1 })
		}
		spec.JobID = "pool-job-" + string(rune('a'+i))
		s, err := r.Acquire(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		if want := i > 0; s.Warm() != want {
			t.Fatalf("job %d warm = %v; want %v", i, s.Warm(), want)
		}
		res, err := s.Exec(ctx, ExecRequest{Cmd: []string{"bash", "-c", "ls /work | wc -l; touch /work/mark; echo $JOB"}, Env: map[string]string{"JOB": spec.JobID}})
		if err != nil || res.ExitCode != 0 || string(res.Stdout) != "0\n"+spec.JobID+"\n" {
			t.Fatalf("job %d: %v, %v; want a clean /work and its own env", i, res, err)
		}
		ids = append(ids, s.ID())
		if err := r.Release(ctx, s); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ContainerInspect(ctx, s.ID(), client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
			t.Fatalf("released container %s: inspect = %v; want not found", shortID(s.ID()), err)
		}
	}
	if ids[0] == ids[1] || ids[1] == ids[2] || ids[0] == ids[2] {
		t.Fatalf("a container served two jobs: %v", ids)
	}
	if got := testutil.ToFloat64(r.m.poolHits); got != 2 {
		t.Errorf("pool hits = %v; want 2", got)
	}
	if n, err := testutil.GatherAndCount(reg, "skillfleet_sandbox_pool_hits_total", "skillfleet_sandbox_start_seconds"); err != nil || n != 3 {
		t.Errorf("gathered series = %d, %v; want hits + cold and warm histograms", n, err)
	}
	eventually(t, "the pool to refill", func() bool { return r.Counters().Idle == 1 })
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if left := labelled(t, c, LabelWorker+"="+r.cfg.WorkerID); len(left) != 0 {
		t.Fatalf("Close left containers: %v", left)
	}
}
