package sandbox

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/system"
	"github.com/moby/moby/client"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"
)

// TestStartChecks: Start fails closed on a missing image, a required runtime that is not
// registered, or an engine without seccomp, and adapts to an engine without swap accounting.
func TestStartChecks(t *testing.T) {
	cases := []struct {
		name        string
		cfg         Config
		engine      func(f *fakeDocker)
		wantErr     string // exact error, "" = Start succeeds
		wantRuntime string // HostConfig.Runtime of the next container
		wantSwap    int64  // HostConfig.MemorySwap
	}{
		{name: "defaults", wantSwap: 512 << 20},
		{name: "image missing", engine: func(f *fakeDocker) { delete(f.images, DefaultImage) },
			wantErr: `sandbox image skillfleet/sandbox:1 is missing: run "skillfleet sandbox build"`},
		{name: "custom image missing", cfg: Config{Image: "acme/sandbox:7"},
			wantErr: `sandbox image acme/sandbox:7 is missing: run "skillfleet sandbox build"`},
		{name: "required runtime missing", cfg: Config{Runtime: "runsc", RequireRuntime: true},
			wantErr: `sandbox: runtime "runsc" is required but not registered with the Docker engine (registered: io.containerd.runc.v2, runc)`},
		{name: "required runtime present", cfg: Config{Runtime: "runsc", RequireRuntime: true},
			engine:      func(f *fakeDocker) { f.info.Runtimes["runsc"] = system.RuntimeWithStatus{} },
			wantRuntime: "runsc", wantSwap: 512 << 20},
		{name: "optional runtime missing: engine default", cfg: Config{Runtime: "runsc"}, wantRuntime: "", wantSwap: 512 << 20},
		{name: "no seccomp", engine: func(f *fakeDocker) { f.info.SecurityOptions = []string{"name=apparmor"} },
			wantErr: "sandbox: the Docker engine reports no seccomp support; refusing to run sandboxes without a syscall filter"},
		{name: "no swap accounting", engine: func(f *fakeDocker) { f.info.SwapLimit = false }, wantSwap: -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			f := newFakeDocker(clk.Now)
			if tc.engine != nil {
				tc.engine(f)
			}
			cfg := tc.cfg
			cfg.WorkerID, cfg.Clock = "w", clk
			r, err := New(cfg, f, zaptest.NewLogger(t), prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if _, err := r.Acquire(ctx, Spec{}); err == nil {
				t.Fatal("Acquire before Start succeeded")
			}
			err = r.Start(ctx)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("Start = %v; want %q", err, tc.wantErr)
				}
				if f.count("ContainerCreate") != 0 {
					t.Fatal("a failed Start created containers")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s, err := r.Acquire(ctx, Spec{})
			if err != nil {
				t.Fatal(err)
			}
			hc := f.last.create.HostConfig
			if hc.Runtime != tc.wantRuntime || hc.MemorySwap != tc.wantSwap {
				t.Errorf("Runtime %q MemorySwap %d; want %q, %d", hc.Runtime, hc.MemorySwap, tc.wantRuntime, tc.wantSwap)
			}
			_ = r.Release(ctx, s)
			_ = r.Close(ctx)
			assertNoLeak(t, f)
		})
	}
	var missing *ImageMissingError
	clk := newFakeClock()
	f := newFakeDocker(clk.Now)
	delete(f.images, DefaultImage)
	r, _ := New(Config{WorkerID: "w", Clock: clk}, f, nil, nil)
	if err := r.Start(context.Background()); !errors.As(err, &missing) || missing.Image != DefaultImage {
		t.Errorf("Start without the image = %v; want *ImageMissingError", err)
	}
}

// Requiring a runtime the real engine does not have fails closed and names what it has.
func TestRequiredRuntimeDocker(t *testing.T) {
	c := realDocker(t)
	r, err := New(Config{WorkerID: "test-runtime-" + randomHex(3), Runtime: "skillfleet-absent", RequireRuntime: true}, c, zaptest.NewLogger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = r.Start(ctx)
	const want = `sandbox: runtime "skillfleet-absent" is required but not registered with the Docker engine (registered: `
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "runc") {
		t.Fatalf("Start = %v; want %q...runc...)", err, want)
	}
	t.Log(err)
}

// TestGVisorDocker runs sandboxes under gVisor (runsc) on the real engine: the container is
// gVisor's, and commands, exit codes, the work directory, the wall-clock kill and removal work
// there as under runc. .ci/run registers runsc with the engine and sets
// SKILLFLEET_TEST_RUNSC=required, so CI never skips this.
func TestGVisorDocker(t *testing.T) {
	c := realDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	info, err := c.Info(ctx, client.InfoOptions{})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := info.Info.Runtimes["runsc"]; !ok {
		if os.Getenv("SKILLFLEET_TEST_RUNSC") == "required" {
			t.Fatal("runsc is not registered with the Docker engine, and SKILLFLEET_TEST_RUNSC=required")
		}
		t.Skip("runsc (gVisor) is not registered with the Docker engine; .ci/run registers it")
	}
	r, _ := newRealRunner(t, c, func(cfg *Config) { cfg.Runtime, cfg.RequireRuntime = "runsc", true })
	s := acquire(t, r, Spec{JobID: "gvisor", Timeout: time.Minute})
	// gVisor's own kernel answers, not the host's.
	if res := sh(t, s, "dmesg | head -1"); res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "gVisor") {
		t.Fatalf("dmesg: exit %d, stdout %q, stderr %q: not a gVisor sandbox", res.ExitCode, res.Stdout, res.Stderr)
	}
	if res := sh(t, s, "echo data > /work/f && cat /work/f && id -u && exit 3"); res.ExitCode != 3 || string(res.Stdout) != "data\n10001\n" {
		t.Errorf("work dir and exit code: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	res := sh(t, s, "sleep 60", func(r *ExecRequest) { r.Timeout = 2 * time.Second })
	if !res.TimedOut {
		t.Errorf("a command past its timeout was not killed: %+v", res)
	}
}
