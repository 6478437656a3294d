package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"
)

// realDocker connects to the engine for tests that need real containers. -short skips them
// (visibly); otherwise a missing engine or image fails the test, never a silent pass.
func realDocker(t testing.TB) *client.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("real Docker test; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := NewDockerClient(ctx)
	if err != nil {
		t.Fatalf("these tests need a Docker engine: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.ImageInspect(ctx, DefaultImage); err != nil {
		if cerrdefs.IsNotFound(err) {
			t.Fatal((&ImageMissingError{Image: DefaultImage}).Error())
		}
		t.Fatalf("inspect %s: %v", DefaultImage, err)
	}
	return c
}

// newRealRunner starts a Runner on the real engine with a unique worker id and, at cleanup,
// closes it and fails the test if any container of that worker is left.
func newRealRunner(t testing.TB, c *client.Client, mutate func(*Config)) (*Runner, *prometheus.Registry) {
	t.Helper()
	cfg := Config{WorkerID: "test-" + strings.ToLower(t.Name()) + "-" + randomHex(3), ReapInterval: time.Hour}
	if mutate != nil {
		mutate(&cfg)
	}
	reg := prometheus.NewRegistry()
	r, err := New(cfg, c, zaptest.NewLogger(t), reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := r.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		if left := labelled(t, c, LabelWorker+"="+cfg.WorkerID); len(left) > 0 {
			t.Errorf("containers left behind by worker %s: %v", cfg.WorkerID, left)
			for _, id := range left {
				_, _ = c.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true})
			}
		}
	})
	return r, reg
}

// labelled lists the ids of all containers (any state) carrying label (k=v).
func labelled(t testing.TB, c *client.Client, label string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", label)})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	var ids []string
	for _, s := range res.Items {
		ids = append(ids, s.ID)
	}
	return ids
}

// acquire gets a sandbox for a test and releases it at cleanup.
func acquire(t testing.TB, r *Runner, spec Spec) *Sandbox {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if spec.JobID == "" {
		spec.JobID = "job-" + randomHex(4)
	}
	s, err := r.Acquire(ctx, spec)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Release(context.Background(), s); err != nil {
			t.Errorf("Release: %v", err)
		}
	})
	return s
}

// sh runs a bash script in s and fails the test on an infrastructure error.
func sh(t testing.TB, s *Sandbox, script string, mod ...func(*ExecRequest)) ExecResult {
	t.Helper()
	req := ExecRequest{Cmd: []string{"bash", "-c", script}}
	for _, m := range mod {
		m(&req)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := s.Exec(ctx, req)
	if err != nil {
		t.Fatalf("Exec %q: %v", script, err)
	}
	return res
}
