package sandbox

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"
)

func newFakeRunner(t *testing.T, f *fakeDocker, clk *fakeClock, mutate func(*Config)) *Runner {
	t.Helper()
	cfg := Config{WorkerID: "w1", Clock: clk}
	if mutate != nil {
		mutate(&cfg)
	}
	r, err := New(cfg, f, zaptest.NewLogger(t), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return r
}

// fakeExec137 makes `oom` exit 137 with the cgroup's oom_kill count going up.
func fakeExec137(c *fakeContainer, cmd []string) (string, string, int) {
	switch cmd[0] {
	case "oom":
		c.oom = true
		return "", "", 137
	case "die":
		// A runtime other than runc (gVisor) reports a sandbox that died under a command so.
		c.running = false
		return "", "waiting on pid 3: urpc method \"containerManager.WaitPID\" failed: EOF\n", 128
	case "false":
		return "", "", 1
	case "sigpipe":
		return "", "", 141
	case "cat":
		if c.oom {
			return "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n", "", 0
		}
		return "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n", "", 0
	}
	return "ok\n", "", 0
}

// TestCleanupSurvivesEveryFailure fails each engine call in turn during a job's life and
// checks that every container created is removed in the end.
func TestCleanupSurvivesEveryFailure(t *testing.T) {
	type step int
	const (
		failAcquire step = iota // Acquire must return an error
		failExec                // Exec must return an error
		okExec                  // Exec succeeds (the failure is absorbed)
	)
	cases := []struct {
		name   string
		setup  func(f *fakeDocker)
		cmd    string
		want   step
		cancel bool // cancel the job's context before Exec and Release
		// cancelInCreate cancels the job's context while its container is being created.
		cancelInCreate bool
		expire         bool // run past the job's deadline before Exec
	}{
		{name: "create fails", setup: func(f *fakeDocker) { f.failNth["ContainerCreate"] = 1 }, want: failAcquire},
		{name: "create fails after the engine created it", setup: func(f *fakeDocker) { f.createThenFail = 1 }, want: failAcquire},
		{name: "start fails", setup: func(f *fakeDocker) { f.failNth["ContainerStart"] = 1 }, want: failAcquire},
		{name: "start fails and first remove fails", setup: func(f *fakeDocker) {
			f.failNth["ContainerStart"] = 1
			f.failNth["ContainerRemove"] = 1
		}, want: failAcquire},
		{name: "exec create fails", setup: func(f *fakeDocker) { f.failNth["ExecCreate"] = 1 }, want: failExec},
		{name: "exec attach fails", setup: func(f *fakeDocker) { f.failNth["ExecAttach"] = 1 }, want: failExec},
		{name: "exec inspect fails", setup: func(f *fakeDocker) { f.failNth["ExecInspect"] = 1 }, want: failExec},
		{name: "container inspect fails after exit 137", setup: func(f *fakeDocker) { f.failNth["ContainerInspect"] = 1 }, cmd: "oom", want: okExec},
		{name: "kill at the deadline fails", setup: func(f *fakeDocker) { f.failNth["ContainerKill"] = 1 }, expire: true, want: okExec},
		{name: "first remove fails", setup: func(f *fakeDocker) { f.failNth["ContainerRemove"] = 1 }, want: okExec},
		{name: "job context cancelled", setup: func(f *fakeDocker) {}, cancel: true, want: failExec},
		{name: "job context cancelled while the container is created", setup: func(f *fakeDocker) {}, cancelInCreate: true, want: failAcquire},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			f := newFakeDocker(clk.Now)
			f.exec = fakeExec137
			tc.setup(f)
			r := newFakeRunner(t, f, clk, nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancelInCreate {
				f.mu.Lock()
				f.duringCreate = cancel
				f.mu.Unlock()
			}

			s, err := r.Acquire(ctx, Spec{JobID: "j", Timeout: time.Minute})
			if tc.want == failAcquire {
				if err == nil {
					t.Fatal("Acquire succeeded; want the injected failure")
				}
			} else {
				if err != nil {
					t.Fatalf("Acquire: %v", err)
				}
				if tc.expire {
					clk.Advance(2 * time.Minute)
				}
				if tc.cancel {
					cancel()
				}
				cmd := tc.cmd
				if cmd == "" {
					cmd = "true"
				}
				res, err := s.Exec(ctx, ExecRequest{Cmd: []string{cmd}})
				switch {
				case tc.want == failExec && err == nil:
					t.Fatalf("Exec succeeded (%+v); want an error", res)
				case tc.want == okExec && err != nil:
					t.Fatalf("Exec: %v", err)
				case tc.expire && !res.TimedOut:
					t.Fatalf("Exec after the deadline: TimedOut=false (%+v)", res)
				}
				if err := r.Release(ctx, s); err != nil {
					t.Fatalf("Release: %v", err)
				}
			}
			if err := r.Close(context.Background()); err != nil {
				t.Fatalf("Close: %v", err)
			}
			assertNoLeak(t, f)
		})
	}
}

func assertNoLeak(t *testing.T, f *fakeDocker) {
	t.Helper()
	if left := f.leaked(); len(left) > 0 {
		t.Fatalf("containers leaked: %v (calls %v)", left, f.calls)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range f.created {
		if !f.removed[id] {
			t.Fatalf("container %s created but never removed", id)
		}
	}
}

// A removal that keeps failing is reported, and the reaper removes the container later.
func TestReleaseFailureLeftToReaper(t *testing.T) {
	clk := newFakeClock()
	f := newFakeDocker(clk.Now)
	r := newFakeRunner(t, f, clk, func(c *Config) { c.ReapGrace = time.Minute })
	s, err := r.Acquire(context.Background(), Spec{JobID: "j"})
	if err != nil {
		t.Fatal(err)
	}
	f.failAlways["ContainerRemove"] = true
	if err := r.Release(context.Background(), s); err == nil || !errors.Is(err, errInjected) {
		t.Fatalf("Release = %v; want the injected error", err)
	}
	if got := f.count("ContainerRemove"); got != 3 {
		t.Errorf("remove attempts = %d; want 3", got)
	}
	if err := r.Release(context.Background(), s); err != nil {
		t.Errorf("second Release = %v; want a no-op", err)
	}
	f.failAlways["ContainerRemove"] = false

	// Within the grace period the reaper leaves it (it might be mid-creation).
	if n, err := r.Reap(context.Background()); err != nil || n != 0 {
		t.Fatalf("Reap within grace = %d, %v; want 0, nil", n, err)
	}
	clk.Advance(2 * time.Minute)
	if n, err := r.Reap(context.Background()); err != nil || n != 1 {
		t.Fatalf("Reap = %d, %v; want 1, nil", n, err)
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	assertNoLeak(t, f)
	if got := r.Counters().Reaped; got != 1 {
		t.Errorf("Counters().Reaped = %d; want 1", got)
	}
}

// Exec after Release, after the deadline, and on a stopped container.
func TestExecStates(t *testing.T) {
	clk := newFakeClock()
	f := newFakeDocker(clk.Now)
	f.exec = fakeExec137
	r := newFakeRunner(t, f, clk, nil)
	ctx := context.Background()

	s, err := r.Acquire(ctx, Spec{JobID: "a", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(11 * time.Second) // the job's timer kills the container
	if f.count("ContainerKill") != 1 {
		t.Fatalf("ContainerKill calls = %d; want 1 (the job deadline)", f.count("ContainerKill"))
	}
	res, err := s.Exec(ctx, ExecRequest{Cmd: []string{"true"}})
	if err != nil || !res.TimedOut || res.ExitCode != -1 {
		t.Fatalf("Exec after deadline = %+v, %v; want TimedOut, exit -1, no error", res, err)
	}
	if err := r.Release(ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Exec(ctx, ExecRequest{Cmd: []string{"true"}}); !errors.Is(err, ErrReleased) {
		t.Fatalf("Exec after Release = %v; want ErrReleased", err)
	}

	// The container stopped from inside: Exec says so and every later Exec too.
	s, err = r.Acquire(ctx, Spec{JobID: "b"})
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.containers[s.ID()].running = false
	f.mu.Unlock()
	res, err = s.Exec(ctx, ExecRequest{Cmd: []string{"true"}})
	if !errors.Is(err, ErrNotRunning) || !res.SandboxExited {
		t.Fatalf("Exec on a stopped container = %+v, %v; want SandboxExited and ErrNotRunning", res, err)
	}
	if _, err := s.Exec(ctx, ExecRequest{Cmd: []string{"true"}}); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("second Exec = %v; want ErrNotRunning", err)
	}
	_ = r.Release(ctx, s)

	// Exit 137 with the oom counter up: OOMKilled, the container lives on.
	s, err = r.Acquire(ctx, Spec{JobID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	res, err = s.Exec(ctx, ExecRequest{Cmd: []string{"oom"}})
	if err != nil || !res.OOMKilled || res.SandboxExited || res.ExitCode != 137 {
		t.Fatalf("oom Exec = %+v, %v; want exit 137, OOMKilled", res, err)
	}
	res, err = s.Exec(ctx, ExecRequest{Cmd: []string{"echo"}})
	if err != nil || res.ExitCode != 0 || res.OOMKilled {
		t.Fatalf("Exec after oom = %+v, %v; want a normal run", res, err)
	}
	// An ordinary failure costs no look at the container; a signal death one look, no probe.
	inspects, execs := f.count("ContainerInspect"), f.count("ExecCreate")
	res, err = s.Exec(ctx, ExecRequest{Cmd: []string{"false"}})
	if err != nil || res.ExitCode != 1 || res.SandboxExited || f.count("ContainerInspect") != inspects {
		t.Fatalf("false = %+v, %v, %d inspects; want exit 1 and no inspect", res, err, f.count("ContainerInspect")-inspects)
	}
	res, err = s.Exec(ctx, ExecRequest{Cmd: []string{"sigpipe"}})
	if err != nil || res.ExitCode != 141 || res.SandboxExited || f.count("ContainerInspect") != inspects+1 || f.count("ExecCreate") != execs+2 {
		t.Fatalf("sigpipe = %+v, %v, %d inspects, %d execs; want exit 141, one inspect and no probe exec",
			res, err, f.count("ContainerInspect")-inspects, f.count("ExecCreate")-execs)
	}
	_ = r.Release(ctx, s)

	// A sandbox that died under a command with an exit code other than runc's: noticed.
	s, err = r.Acquire(ctx, Spec{JobID: "d"})
	if err != nil {
		t.Fatal(err)
	}
	res, err = s.Exec(ctx, ExecRequest{Cmd: []string{"die"}})
	if err != nil || !res.SandboxExited || res.ExitCode != 128 {
		t.Fatalf("die = %+v, %v; want exit 128 and SandboxExited", res, err)
	}
	if _, err := s.Exec(ctx, ExecRequest{Cmd: []string{"echo"}}); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Exec after the sandbox died = %v; want ErrNotRunning", err)
	}
	_ = r.Release(ctx, s)
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	assertNoLeak(t, f)
}

// The exec's environment is the job's and the request's, nothing else; the user and work dir
// are forced.
func TestExecRequestShape(t *testing.T) {
	clk := newFakeClock()
	f := newFakeDocker(clk.Now)
	r := newFakeRunner(t, f, clk, nil)
	ctx := context.Background()
	t.Setenv("SKILLFLEET_SENTINEL", "must-not-leak")
	s, err := r.Acquire(ctx, Spec{JobID: "j", Env: map[string]string{"A": "job", "B": "job"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release(ctx, s)
	if _, err := s.Exec(ctx, ExecRequest{Cmd: []string{"env"}, Env: map[string]string{"B": "req", "C": "req"}}); err != nil {
		t.Fatal(err)
	}
	got := f.last.exec
	if want := "A=job B=req C=req"; strings.Join(got.Env, " ") != want {
		t.Errorf("exec env = %v; want %s", got.Env, want)
	}
	if got.User != "10001:10001" || got.WorkingDir != "/work" || got.AttachStdin {
		t.Errorf("exec options = %+v; want user 10001:10001, /work, no stdin", got)
	}
	if len(f.last.create.Config.Env) != 0 {
		t.Errorf("container env = %v; want none", f.last.create.Config.Env)
	}
	for _, bad := range []map[string]string{{"": "x"}, {"A=B": "x"}, {"A": "nul\x00"}} {
		if _, err := s.Exec(ctx, ExecRequest{Cmd: []string{"env"}, Env: bad}); err == nil {
			t.Errorf("Exec with env %q succeeded; want an error", bad)
		}
	}
	if _, err := s.Exec(ctx, ExecRequest{}); err == nil {
		t.Error("Exec with no command succeeded")
	}
	if _, err := s.Exec(ctx, ExecRequest{Cmd: []string{"true"}, WorkDir: "rel"}); err == nil {
		t.Error("Exec with a relative WorkDir succeeded")
	}
}
