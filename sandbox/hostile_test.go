package sandbox

import (
	"bytes"
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestHostile runs the things a hostile test case would try, one after another on one Runner.
// Each must end with a recorded result, and the sandbox (where it survives) and the next job
// must work normally afterwards.
func TestHostile(t *testing.T) {
	c := realDocker(t)
	r, _ := newRealRunner(t, c, nil)
	skills := t.TempDir()
	if err := os.WriteFile(skills+"/SKILL.md", []byte("original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mounts := []Mount{{Source: skills, Target: "/skills"}}

	// healthy checks that a new job on the same Runner runs normally.
	healthy := func(t *testing.T) {
		t.Helper()
		s := acquire(t, r, Spec{Mounts: mounts})
		if res := sh(t, s, "echo ok"); res.ExitCode != 0 || string(res.Stdout) != "ok\n" {
			t.Fatalf("next job: %v", res)
		}
		if err := r.Release(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	// alive checks that s still runs commands.
	alive := func(t *testing.T, s *Sandbox) {
		t.Helper()
		if res := sh(t, s, "echo alive"); res.ExitCode != 0 || string(res.Stdout) != "alive\n" {
			t.Fatalf("sandbox after the attack: %v", res)
		}
	}

	t.Run("fork bomb", func(t *testing.T) {
		s := acquire(t, r, Spec{Mounts: mounts})
		// The bomb's first generation returns at once; the shell then waits five seconds
		// without forking (read on a FIFO nobody writes), so the bomb has surely met the
		// limit, and its complaints are on stderr, before the command ends.
		res := sh(t, s, "mkfifo /tmp/idle && exec 3<>/tmp/idle; :(){ :|:& };:; read -t 5 -u 3; wait", func(q *ExecRequest) { q.Timeout = 20 * time.Second })
		// The pids limit holds the bomb: either it fizzles out (every fork fails and bash
		// gives up) or its children keep the exec open until the timeout kills the container.
		t.Logf("fork bomb: %v", res)
		switch {
		case res.TimedOut:
		case strings.Contains(string(res.Stderr), "Resource temporarily unavailable"):
			// The limit held and the command returned. The bomb's orphans may hold every pid
			// of this sandbox for a while yet (an exec then cannot start, and its timeout
			// kills the container), so the sandbox is not asked for more: it must still be
			// removed cleanly, and the next job must run normally.
			if err := r.Release(context.Background(), s); err != nil {
				t.Fatalf("releasing the bombed sandbox: %v", err)
			}
		default:
			t.Fatalf("fork bomb: %v; want the pids limit to stop it", res)
		}
		healthy(t)
	})

	t.Run("memory bomb", func(t *testing.T) {
		s := acquire(t, r, Spec{Mounts: mounts, Limits: Limits{MemoryBytes: 256 << 20}})
		res := sh(t, s, `python3 -c "b = bytearray(2 * 1024**3); print(len(b))"`, func(q *ExecRequest) { q.Timeout = 20 * time.Second })
		if res.ExitCode != 137 || !res.OOMKilled || res.TimedOut {
			t.Fatalf("memory bomb: %v; want exit 137, OOMKilled", res)
		}
		t.Logf("memory bomb: %v", res)
		alive(t, s) // only the hog died
		res = sh(t, s, "true")
		if res.OOMKilled {
			t.Fatalf("a later command is reported OOMKilled: %v", res)
		}
		healthy(t)
	})

	t.Run("disk fill", func(t *testing.T) {
		s := acquire(t, r, Spec{Mounts: mounts})
		res := sh(t, s, "dd if=/dev/zero of=/work/fill bs=1M count=1024")
		if res.ExitCode == 0 {
			t.Fatalf("dd of 1 GiB into a 64 MiB tmpfs succeeded: %v", res)
		}
		if !strings.Contains(string(res.Stderr), "No space left") && res.ExitCode != 153 {
			t.Fatalf("disk fill: exit %d, stderr %q; want ENOSPC or SIGXFSZ", res.ExitCode, res.Stderr)
		}
		res = sh(t, s, "for i in $(seq 1 200); do head -c 1048576 /dev/zero > /tmp/f$i || exit 7; done")
		if res.ExitCode != 7 {
			t.Fatalf("filling /tmp with files: %v; want a write failure", res)
		}
		if res := sh(t, s, "rm -f /work/fill /tmp/f* && echo ok > /work/x && cat /work/x"); string(res.Stdout) != "ok\n" {
			t.Fatalf("after freeing space: %v", res)
		}
		healthy(t)
	})

	t.Run("file size limit", func(t *testing.T) {
		s := acquire(t, r, Spec{Mounts: mounts, Limits: Limits{FileSizeBytes: 4 << 20}})
		res := sh(t, s, "dd if=/dev/zero of=/work/big bs=1M count=16")
		// RLIMIT_FSIZE: SIGXFSZ kills dd (128+25) or, when ignored, EFBIG.
		if res.ExitCode != 153 && !strings.Contains(string(res.Stderr), "File too large") {
			t.Fatalf("write past RLIMIT_FSIZE: %v", res)
		}
		if res := sh(t, s, "stat -c %s /work/big"); strings.TrimSpace(string(res.Stdout)) != strconv.Itoa(4<<20) {
			t.Fatalf("file size after the limit: %q", res.Stdout)
		}
		alive(t, s)
	})

	t.Run("pid storm", func(t *testing.T) {
		s := acquire(t, r, Spec{Mounts: mounts, Limits: Limits{Pids: 64}})
		script := `
import os, signal, sys
kids = []
try:
    for _ in range(1000):
        pid = os.fork()
        if pid == 0:
            signal.pause()
            os._exit(0)
        kids.append(pid)
except OSError as e:
    print("stopped after", len(kids), "forks:", e.strerror)
for k in kids:
    os.kill(k, signal.SIGKILL)
    os.waitpid(k, 0)
sys.exit(0 if len(kids) < 64 else 1)
`
		res := sh(t, s, "python3 -c '"+script+"'", func(q *ExecRequest) { q.Timeout = 20 * time.Second })
		if res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "stopped after") {
			t.Fatalf("pid storm: %v", res)
		}
		t.Logf("pid storm: %s", bytes.TrimSpace(res.Stdout))
		alive(t, s)
	})

	t.Run("output flood", func(t *testing.T) {
		s := acquire(t, r, Spec{Mounts: mounts, Limits: Limits{OutputBytes: 1 << 20}})
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		res := sh(t, s, "yes | head -c 256M; yes err | head -c 64M >&2")
		runtime.ReadMemStats(&after)
		marker := TruncationMarker(1 << 20)
		if res.ExitCode != 0 || !res.StdoutTruncated || !res.StderrTruncated {
			t.Fatalf("flood: exit %d, truncated %v/%v", res.ExitCode, res.StdoutTruncated, res.StderrTruncated)
		}
		for name, out := range map[string][]byte{"stdout": res.Stdout, "stderr": res.Stderr} {
			if len(out) > 1<<20+len(marker)+1 || !bytes.HasSuffix(out, []byte(marker)) {
				t.Fatalf("%s: %d bytes, suffix %q; want at most the cap plus the marker", name, len(out), out[max(0, len(out)-80):])
			}
		}
		// 320 MiB went through the worker; it may allocate only a small multiple of the caps.
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
			t.Fatalf("the worker allocated %d MiB for a flood capped at 2 MiB", grew>>20)
		}
		alive(t, s)
	})

	t.Run("sleep past the exec timeout", func(t *testing.T) {
		s := acquire(t, r, Spec{Mounts: mounts, Timeout: time.Minute})
		res := sh(t, s, "sleep 30", func(q *ExecRequest) { q.Timeout = time.Second })
		if !res.TimedOut || res.ExitCode != -1 {
			t.Fatalf("sleep 30 with a 1s timeout: %v", res)
		}
		// The container was killed: the job cannot go on, and says so.
		if res := sh(t, s, "echo again"); !res.TimedOut {
			t.Fatalf("Exec after a timeout: %v; want TimedOut", res)
		}
		healthy(t)
	})

	t.Run("sleep past the job timeout", func(t *testing.T) {
		s := acquire(t, r, Spec{Mounts: mounts, Timeout: 2 * time.Second})
		res := sh(t, s, "sleep 30")
		if !res.TimedOut {
			t.Fatalf("sleep 30 in a 2s job: %v", res)
		}
		healthy(t)
	})

	t.Run("caller gives up", func(t *testing.T) {
		s := acquire(t, r, Spec{Mounts: mounts})
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_, err := s.Exec(ctx, ExecRequest{Cmd: []string{"sleep", "30"}})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Exec with an expiring context = %v; want DeadlineExceeded", err)
		}
		if _, err := s.Exec(context.Background(), ExecRequest{Cmd: []string{"true"}}); !errors.Is(err, ErrNotRunning) {
			t.Fatalf("Exec after the caller gave up = %v; want ErrNotRunning", err)
		}
		healthy(t)
	})

	t.Run("SIGKILL to init", func(t *testing.T) {
		s := acquire(t, r, Spec{Mounts: mounts})
		res := sh(t, s, "kill -9 1; echo rc=$?")
		// The kernel drops SIGKILL sent to a pid namespace's init from inside it.
		t.Logf("kill -9 1: %q %q", res.Stdout, res.Stderr)
		alive(t, s)
	})

	t.Run("SIGTERM to init", func(t *testing.T) {
		s := acquire(t, r, Spec{Mounts: mounts})
		// tini forwards SIGTERM to sleep and exits: the same uid can stop its own sandbox.
		// That must be reported, not mistaken for a normal result.
		res, err := s.Exec(context.Background(), ExecRequest{Cmd: []string{"bash", "-c", "kill -TERM 1; sleep 10; echo survived"}})
		if err != nil || !res.SandboxExited || strings.Contains(string(res.Stdout), "survived") {
			t.Fatalf("kill -TERM 1: %v, %v; want SandboxExited", res, err)
		}
		if _, err := s.Exec(context.Background(), ExecRequest{Cmd: []string{"true"}}); !errors.Is(err, ErrNotRunning) {
			t.Fatalf("Exec after init died = %v; want ErrNotRunning", err)
		}
		healthy(t)
	})

	t.Run("SIGTERM to init, then exit at once", func(t *testing.T) {
		s := acquire(t, r, Spec{Mounts: mounts})
		res, err := s.Exec(context.Background(), ExecRequest{Cmd: []string{"bash", "-c", "kill -TERM 1"}})
		t.Logf("kill -TERM 1: %v, %v", res, err)
		// The command itself may finish first; then the next Exec finds the container gone.
		if err == nil && !res.SandboxExited {
			res, err = s.Exec(context.Background(), ExecRequest{Cmd: []string{"echo", "hi"}})
		}
		if !errors.Is(err, ErrNotRunning) && !res.SandboxExited {
			t.Fatalf("Exec after init died: %v, %v; want ErrNotRunning or SandboxExited", res, err)
		}
		healthy(t)
	})

	t.Run("write the skill mount and the root fs", func(t *testing.T) {
		s := acquire(t, r, Spec{Mounts: mounts})
		for _, script := range []string{
			"echo pwned > /skills/SKILL.md",
			"rm -f /skills/SKILL.md",
			"mkdir /skills/new",
			"echo pwned > /etc/passwd",
			"cp /bin/true /usr/bin/evil",
			"mount -o remount,rw /skills",
			"mount -o remount,rw /",
		} {
			if res := sh(t, s, script); res.ExitCode == 0 {
				t.Errorf("%q succeeded", script)
			}
		}
		got, err := os.ReadFile(skills + "/SKILL.md")
		if err != nil || string(got) != "original\n" {
			t.Fatalf("the host's skill file changed: %q, %v", got, err)
		}
		alive(t, s)
	})
}
