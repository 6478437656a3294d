package sandbox

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// Benchmarks of what a job pays for its sandbox. Run with
//
//	go test ./sandbox -run '^$' -bench . -benchtime 30x
//
// and compare ColdJob and WarmJob with RawDockerRun (`docker run --rm IMAGE true`).

func benchJob(b *testing.B, r *Runner, ctx context.Context) (critical time.Duration, warm bool) {
	b.Helper()
	t0 := time.Now()
	s, err := r.Acquire(ctx, Spec{JobID: "bench", Timeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	res, err := s.Exec(ctx, ExecRequest{Cmd: []string{"true"}})
	if err != nil || res.ExitCode != 0 {
		b.Fatalf("exec true: %v, %v", res, err)
	}
	critical = time.Since(t0)
	if err := r.Release(ctx, s); err != nil {
		b.Fatal(err)
	}
	return critical, s.Warm()
}

// BenchmarkColdJob: Acquire (create + start) + Exec `true` + Release, no pool.
func BenchmarkColdJob(b *testing.B) {
	c := realDocker(b)
	r, _ := newRealRunner(b, c, nil)
	ctx := context.Background()
	var critical time.Duration
	for b.Loop() {
		d, _ := benchJob(b, r, ctx)
		critical += d
	}
	b.ReportMetric(float64(critical.Nanoseconds())/float64(b.N), "critical-ns/op")
}

// BenchmarkWarmJob: the same with a warm pool of one. The wait for the pool to refill between
// jobs is not timed (a busy worker overlaps it with the previous job's agent time).
func BenchmarkWarmJob(b *testing.B) {
	c := realDocker(b)
	r, _ := newRealRunner(b, c, func(cfg *Config) { cfg.WarmPool = 1 })
	ctx := context.Background()
	benchJob(b, r, ctx) // prime the pool key
	var critical time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if err := waitIdle(ctx, r); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		d, warm := benchJob(b, r, ctx)
		if !warm {
			b.Fatal("the pool missed")
		}
		critical += d
	}
	b.ReportMetric(float64(critical.Nanoseconds())/float64(b.N), "critical-ns/op")
}

// BenchmarkRawDockerRun: the baseline, the docker CLI running the same image.
func BenchmarkRawDockerRun(b *testing.B) {
	realDocker(b)
	for b.Loop() {
		if out, err := exec.Command("docker", "run", "--rm", DefaultImage, "true").CombinedOutput(); err != nil {
			b.Fatalf("docker run: %v: %s", err, out)
		}
	}
}

func TestPercentiles(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var out []time.Duration
		for _, n := range ns {
			out = append(out, time.Duration(n)*time.Millisecond)
		}
		return out
	}
	cases := []struct {
		in       []time.Duration
		p50, p95 time.Duration
	}{
		{nil, 0, 0},
		{ms(7), 7 * time.Millisecond, 7 * time.Millisecond},
		{ms(5, 1, 4, 2, 3), 3 * time.Millisecond, 5 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20), 10 * time.Millisecond, 19 * time.Millisecond},
	}
	for _, tc := range cases {
		if got := percentiles(tc.in); got.P50 != tc.p50 || got.P95 != tc.p95 {
			t.Errorf("percentiles(%v) = %+v; want p50 %v p95 %v", tc.in, got, tc.p50, tc.p95)
		}
	}
}

// Overhead runs against the real engine and fills every phase.
func TestOverheadDocker(t *testing.T) {
	c := realDocker(t)
	r, _ := newRealRunner(t, c, func(cfg *Config) { cfg.WarmPool = 1 })
	st, err := Overhead(context.Background(), r, 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + st.String())
	if st.Warm == nil {
		t.Fatal("no warm stats with a pool configured")
	}
	for name, p := range map[string]PhaseStats{
		"cold create": st.Cold.Create, "cold start": st.Cold.Start, "cold exec": st.Cold.Exec, "cold collect": st.Cold.Collect,
		"cold remove": st.Cold.Remove, "warm exec": st.Warm.Exec, "warm remove": st.Warm.Remove, "warm acquire": st.Warm.Acquire,
	} {
		if p.P50 <= 0 || p.P95 < p.P50 {
			t.Errorf("%s = %+v; want measured", name, p)
		}
	}
	if st.Warm.Create.P50 != 0 {
		t.Errorf("warm jobs report a create phase: %+v", st.Warm.Create)
	}
	if got := r.Counters().PoolHits; got < 3 {
		t.Errorf("pool hits = %d; want the 3 warm jobs", got)
	}
	if _, err := Overhead(context.Background(), r, 0); err == nil {
		t.Error("Overhead(0) succeeded")
	}
}
