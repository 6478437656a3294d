package sandbox

import (
	"context"
	"strconv"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"
)

func TestReapReasons(t *testing.T) {
	clk := newFakeClock()
	now := clk.Now()
	f := newFakeDocker(clk.Now)
	r := newFakeRunner(t, f, clk, func(c *Config) { c.ReapGrace = time.Minute })
	exp := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).Unix(), 10) }
	labels := func(worker, inc, expires string) map[string]string {
		return map[string]string{LabelSandbox: "1", LabelWorker: worker, LabelIncarnation: inc, LabelExpires: expires}
	}
	cases := []struct {
		name    string
		labels  map[string]string
		age     time.Duration
		atStart bool
		reap    bool
	}{
		{"other worker, live", labels("w2", "x", exp(time.Hour)), time.Minute, false, false},
		{"other worker, expired within grace", labels("w2", "x", exp(-30*time.Second)), time.Hour, false, false},
		{"other worker, expired past grace", labels("w2", "x", exp(-2*time.Minute)), time.Hour, false, true},
		{"own worker at start", labels("w1", r.incarnation, exp(time.Hour)), time.Second, true, true},
		{"own worker, previous incarnation", labels("w1", "old", exp(time.Hour)), time.Second, false, true},
		{"own, untracked, young (maybe being created)", labels("w1", r.incarnation, exp(time.Hour)), 10 * time.Second, false, false},
		{"own, untracked, old (a failed removal)", labels("w1", r.incarnation, exp(time.Hour)), 2 * time.Minute, false, true},
		{"bad expires label, young", labels("w2", "x", "soon"), 10 * time.Minute, false, false},
		{"bad expires label, older than any sandbox lives", labels("w2", "x", ""), 48 * time.Hour, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := container.Summary{ID: "c", Labels: tc.labels, Created: now.Add(-tc.age).Unix()}
			if got := r.reapReason(c, now, tc.atStart) != ""; got != tc.reap {
				t.Errorf("reap = %v; want %v (reason %q)", got, tc.reap, r.reapReason(c, now, tc.atStart))
			}
		})
	}
	// A container the Runner holds is never reaped, whatever its labels say.
	s, err := r.Acquire(context.Background(), Spec{JobID: "held"})
	if err != nil {
		t.Fatal(err)
	}
	held := container.Summary{ID: s.ID(), Labels: labels("w1", "old", exp(-time.Hour)), Created: now.Add(-48 * time.Hour).Unix()}
	if why := r.reapReason(held, now, true); why != "" {
		t.Errorf("a held container would be reaped: %s", why)
	}
	_ = r.Release(context.Background(), s)
}

// The background loop reaps on every tick, and Start reaps this worker's leftovers.
func TestReapLoopAndStart(t *testing.T) {
	clk := newFakeClock()
	f := newFakeDocker(clk.Now)
	exp := strconv.FormatInt(clk.Now().Add(-time.Hour).Unix(), 10)
	future := strconv.FormatInt(clk.Now().Add(time.Hour).Unix(), 10)
	f.addStray("previous-run", map[string]string{LabelSandbox: "1", LabelWorker: "w1", LabelExpires: future}, clk.Now())
	f.addStray("others-live", map[string]string{LabelSandbox: "1", LabelWorker: "w2", LabelExpires: future}, clk.Now())
	r := newFakeRunner(t, f, clk, nil)
	if got := f.leaked(); len(got) != 1 || got[0] != "others-live" {
		t.Fatalf("after Start: %v; want only the other worker's live container", got)
	}
	f.addStray("crashed-worker", map[string]string{LabelSandbox: "1", LabelWorker: "w3", LabelExpires: exp}, clk.Now().Add(-2*time.Hour))
	f.failNth["ContainerList"] = f.count("ContainerList") + 1 // the first tick's sweep fails
	clk.Tick()
	clk.Tick() // the second tick is taken only after the first was handled
	clk.Tick()
	if got := f.leaked(); len(got) != 1 || got[0] != "others-live" {
		t.Fatalf("after ticks: %v; want the crashed worker's container reaped", got)
	}
	if c := r.Counters(); c.Reaped != 2 {
		t.Fatalf("reaped = %d; want 2", c.Reaped)
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestReapDocker: a stray labelled container on the real engine is reaped; a live one of
// another worker is not; a previous incarnation's is removed at Start.
func TestReapDocker(t *testing.T) {
	c := realDocker(t)
	ctx := context.Background()
	worker := "test-reap-" + randomHex(3)
	stray := func(worker string, expires time.Time) string {
		t.Helper()
		res, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{
			Config: &container.Config{Image: DefaultImage, Entrypoint: []string{"sleep", "infinity"}, Labels: map[string]string{
				LabelSandbox: "1", LabelWorker: worker, LabelExpires: strconv.FormatInt(expires.Unix(), 10),
			}},
			HostConfig: &container.HostConfig{NetworkMode: "none", LogConfig: container.LogConfig{Type: "none"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = c.ContainerRemove(ctx, res.ID, client.ContainerRemoveOptions{Force: true}) })
		if _, err := c.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}
		return res.ID
	}
	gone := func(id string) bool {
		_, err := c.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		return cerrdefs.IsNotFound(err)
	}

	previous := stray(worker, time.Now().Add(time.Hour))
	expired := stray("crashed-"+randomHex(3), time.Now().Add(-time.Hour))
	live := stray("busy-"+randomHex(3), time.Now().Add(time.Hour))

	r, err := New(Config{WorkerID: worker, ReapInterval: time.Hour}, c, zaptest.NewLogger(t), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	if !gone(previous) || !gone(expired) {
		t.Fatalf("Start did not reap: previous gone %v, expired gone %v", gone(previous), gone(expired))
	}
	expired2 := stray("crashed-"+randomHex(3), time.Now().Add(-time.Hour))
	n, err := r.Reap(ctx)
	if err != nil || n < 1 {
		t.Fatalf("Reap = %d, %v; want at least the stray", n, err)
	}
	if !gone(expired2) {
		t.Fatal("the expired stray survived Reap")
	}
	if gone(live) {
		t.Fatal("Reap removed another worker's live container")
	}
}
