package sandbox

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// checkHostConfig asserts every containment setting of a created container; the unit test
// checks the request, the Docker test checks what the engine recorded.
func checkHostConfig(t *testing.T, cfg *container.Config, hc *container.HostConfig, l Limits, mounts []Mount, seccomp string, imageEnv []string) {
	t.Helper()
	errorf := func(format string, args ...any) { t.Helper(); t.Errorf(format, args...) }
	if hc.NetworkMode != "none" {
		errorf("NetworkMode = %q; want none", hc.NetworkMode)
	}
	if !slices.Equal(hc.CapDrop, []string{"ALL"}) || len(hc.CapAdd) != 0 {
		errorf("CapDrop = %v, CapAdd = %v; want [ALL], none", hc.CapDrop, hc.CapAdd)
	}
	if !slices.ContainsFunc(hc.SecurityOpt, func(o string) bool { return strings.HasPrefix(o, "no-new-privileges") }) {
		errorf("SecurityOpt = %v; want no-new-privileges", hc.SecurityOpt)
	}
	if seccomp != "" && !slices.Contains(hc.SecurityOpt, "seccomp="+seccomp) {
		errorf("SecurityOpt = %v; want seccomp=<profile>", hc.SecurityOpt)
	}
	if slices.ContainsFunc(hc.SecurityOpt, func(o string) bool { return strings.Contains(o, "unconfined") }) {
		errorf("SecurityOpt = %v; nothing may be unconfined", hc.SecurityOpt)
	}
	if !hc.ReadonlyRootfs || hc.Privileged {
		errorf("ReadonlyRootfs = %v, Privileged = %v", hc.ReadonlyRootfs, hc.Privileged)
	}
	for dir, exec := range map[string]string{"/work": "exec", "/tmp": "noexec", "/home/sandbox": "noexec"} {
		opts := strings.Split(hc.Tmpfs[dir], ",")
		for _, want := range []string{exec, "nosuid", "nodev", "uid=10001", "gid=10001", "mode=0700", "size=" + strconv.FormatInt(l.TmpfsBytes, 10)} {
			if !slices.Contains(opts, want) {
				errorf("Tmpfs[%s] = %q; want %s", dir, hc.Tmpfs[dir], want)
			}
		}
	}
	if cfg.User != "10001:10001" {
		errorf("User = %q; want 10001:10001", cfg.User)
	}
	if hc.Init == nil || !*hc.Init {
		errorf("Init = %v; want true", hc.Init)
	}
	if hc.Memory != l.MemoryBytes || hc.MemorySwap != l.MemoryBytes {
		errorf("Memory = %d, MemorySwap = %d; want both %d", hc.Memory, hc.MemorySwap, l.MemoryBytes)
	}
	if hc.NanoCPUs != l.NanoCPUs || hc.PidsLimit == nil || *hc.PidsLimit != l.Pids {
		errorf("NanoCPUs = %d, PidsLimit = %v; want %d, %d", hc.NanoCPUs, hc.PidsLimit, l.NanoCPUs, l.Pids)
	}
	ul := map[string][2]int64{}
	for _, u := range hc.Ulimits {
		ul[u.Name] = [2]int64{u.Soft, u.Hard}
	}
	if ul["nofile"] != [2]int64{l.NoFile, l.NoFile} || ul["fsize"] != [2]int64{l.FileSizeBytes, l.FileSizeBytes} || ul["core"] != [2]int64{0, 0} {
		errorf("Ulimits = %v; want nofile %d, fsize %d, core 0", ul, l.NoFile, l.FileSizeBytes)
	}
	if hc.ShmSize != l.TmpfsBytes {
		errorf("ShmSize = %d; want %d", hc.ShmSize, l.TmpfsBytes)
	}
	if hc.LogConfig.Type != "none" || hc.AutoRemove {
		errorf("LogConfig = %v, AutoRemove = %v; want none, false", hc.LogConfig, hc.AutoRemove)
	}
	if len(hc.Binds) != 0 || len(hc.VolumesFrom) != 0 || len(hc.Devices) != 0 {
		errorf("Binds %v, VolumesFrom %v, Devices %v; want none", hc.Binds, hc.VolumesFrom, hc.Devices)
	}
	if len(hc.Mounts) != len(mounts) {
		errorf("Mounts = %v; want %v", hc.Mounts, mounts)
	}
	for i, m := range hc.Mounts {
		if m.Type != mount.TypeBind || !m.ReadOnly || m.Source != mounts[i].Source || m.Target != mounts[i].Target {
			errorf("Mount %d = %+v; want read-only bind %v", i, m, mounts[i])
		}
		if strings.Contains(m.Source, "docker.sock") {
			errorf("Mount %d exposes the Docker socket", i)
		}
	}
	for _, k := range []string{LabelSandbox, LabelWorker, LabelIncarnation, LabelJob, LabelExpires} {
		if _, ok := cfg.Labels[k]; !ok {
			errorf("label %s missing: %v", k, cfg.Labels)
		}
	}
	for _, e := range cfg.Env {
		if !slices.Contains(imageEnv, e) {
			errorf("container Env has %q; want only the image's %v (job env is given per exec)", e, imageEnv)
		}
	}
}

func TestBuildContainer(t *testing.T) {
	l := DefaultLimits()
	mounts := []Mount{{Source: "/var/cache/skillfleet/bundles/abc", Target: "/skills"}}
	labels := map[string]string{LabelSandbox: "1", LabelWorker: "w", LabelIncarnation: "i", LabelJob: "j", LabelExpires: "1"}
	profile := `{"defaultAction":"SCMP_ACT_ERRNO"}`
	for _, tc := range []struct {
		name    string
		tmpl    template
		seccomp string
	}{
		{"engine default seccomp", template{image: DefaultImage, limits: l, mounts: mounts}, ""},
		{"custom seccomp and runtime", template{image: DefaultImage, runtime: "runsc", limits: l, mounts: mounts, seccomp: profile}, profile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, hc := buildContainer(tc.tmpl, labels)
			checkHostConfig(t, cfg, hc, l, mounts, tc.seccomp, nil)
			if hc.Runtime != tc.tmpl.runtime {
				t.Errorf("Runtime = %q; want %q", hc.Runtime, tc.tmpl.runtime)
			}
			if !slices.Equal(cfg.Entrypoint, []string{"sleep"}) || !slices.Equal(cfg.Cmd, []string{"infinity"}) {
				t.Errorf("Entrypoint %v Cmd %v; want sleep infinity", cfg.Entrypoint, cfg.Cmd)
			}
		})
	}
	t.Run("no swap accounting", func(t *testing.T) {
		_, hc := buildContainer(template{image: DefaultImage, limits: l, noSwap: true}, labels)
		if hc.Memory != l.MemoryBytes || hc.MemorySwap != -1 {
			t.Errorf("Memory %d MemorySwap %d; want %d, -1 (what the engine does anyway, without a warning per container)", hc.Memory, hc.MemorySwap, l.MemoryBytes)
		}
	})
}

func TestValidateMounts(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cases := []struct {
		name string
		in   []Mount
		ok   bool
	}{
		{"skills bundle", []Mount{{"/var/cache/sf/bundles/x", "/skills"}}, true},
		{"two mounts sorted", []Mount{{"/b", "/skills/b"}, {"/a", "/skills/a"}}, true},
		{"relative source", []Mount{{"bundles/x", "/skills"}}, false},
		{"relative target", []Mount{{"/x", "skills"}}, false},
		{"shadows /work", []Mount{{"/x", "/work"}}, false},
		{"shadows home", []Mount{{"/x", "/home/sandbox/"}}, false},
		{"under /proc", []Mount{{"/x", "/proc/sys"}}, false},
		{"root filesystem", []Mount{{"/", "/skills"}}, false},
		{"docker socket", []Mount{{"/var/run/docker.sock", "/skills"}}, false},
		{"docker socket dir", []Mount{{"/var/run", "/skills"}}, false},
		{"docker state", []Mount{{"/var/lib/docker/volumes", "/skills"}}, false},
		{"host etc", []Mount{{"/etc", "/skills"}}, false},
		{"duplicate target", []Mount{{"/a", "/skills"}, {"/b", "/skills/"}}, false},
		{"a unix socket", []Mount{{sock, "/skills/s"}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := validateMounts(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("validateMounts(%v) = %v, %v; want ok=%v", tc.in, out, err, tc.ok)
			}
			if tc.ok && !slices.IsSortedFunc(out, func(a, b Mount) int { return strings.Compare(a.Target, b.Target) }) {
				t.Errorf("mounts not sorted: %v", out)
			}
		})
	}
}

// TestHardeningInspect checks what the engine actually recorded for a sandbox container.
func TestHardeningInspect(t *testing.T) {
	c := realDocker(t)
	r, _ := newRealRunner(t, c, nil)
	skills := t.TempDir()
	mounts := []Mount{{Source: skills, Target: "/skills"}}
	s := acquire(t, r, Spec{Mounts: mounts})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	in, err := c.ContainerInspect(ctx, s.ID(), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	img, err := c.ImageInspect(ctx, DefaultImage)
	if err != nil {
		t.Fatal(err)
	}
	checkHostConfig(t, in.Container.Config, in.Container.HostConfig, DefaultLimits(), mounts, "", img.Config.Env)
	if got := in.Container.Config.Labels[LabelJob]; got != s.JobID() {
		t.Errorf("job label = %q; want %q", got, s.JobID())
	}
	for _, mp := range in.Container.Mounts {
		if mp.RW && mp.Type == mount.TypeBind {
			t.Errorf("writable bind mount %+v", mp)
		}
	}
}

// TestHardeningBehaviour checks the containment from inside the sandbox.
func TestHardeningBehaviour(t *testing.T) {
	c := realDocker(t)
	r, _ := newRealRunner(t, c, nil)
	skills := t.TempDir()
	if err := os.WriteFile(filepath.Join(skills, "SKILL.md"), []byte("---\nname: x\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SKILLFLEET_SENTINEL", "worker-secret")
	s := acquire(t, r, Spec{Mounts: []Mount{{Source: skills, Target: "/skills"}}, Env: map[string]string{"JOB_VAR": "job"}})

	cases := []struct {
		name   string
		script string
		ok     bool   // want exit 0
		stdout string // substring of stdout, if set
	}{
		{"runs as 10001", "id -u; id -g", true, "10001\n10001\n"},
		{"root fs is read-only", "touch /etc/x", false, ""},
		{"root fs is read-only (usr)", "echo x > /usr/local/bin/x", false, ""},
		{"skills mount is readable", "cat /skills/SKILL.md", true, "name: x"},
		{"skills mount is read-only", "touch /skills/x", false, ""},
		{"skills mount cannot be overwritten", "echo evil > /skills/SKILL.md", false, ""},
		{"no effective capabilities (init)", "grep CapEff /proc/1/status", true, "0000000000000000"},
		{"no capabilities at all (self)", "grep -E 'Cap(Eff|Prm|Bnd|Amb)' /proc/self/status | grep -v 0000000000000000", false, ""},
		{"no_new_privs set", "grep NoNewPrivs /proc/self/status", true, "NoNewPrivs:\t1"},
		{"seccomp filter active", "grep Seccomp: /proc/self/status", true, "Seccomp:\t2"},
		{"seccomp blocks user namespaces", `python3 -c "import ctypes,sys; sys.exit(0 if ctypes.CDLL(None).unshare(0x10000000)==0 else 1)"`, false, ""},
		{"no network", `python3 -c "import socket; socket.create_connection(('1.1.1.1',53),2)"`, false, ""},
		{"only lo", "ls /sys/class/net", true, "lo\n"},
		{"no docker socket", "ls -la /var/run/docker.sock /run/docker.sock", false, ""},
		{"work dir is writable and exec", "cd /work && printf '#!/bin/sh\\necho ran\\n' > s.sh && chmod +x s.sh && ./s.sh", true, "ran"},
		{"tmp is writable, noexec", "printf '#!/bin/sh\\necho ran\\n' > /tmp/s.sh && chmod +x /tmp/s.sh && /tmp/s.sh", false, ""},
		{"home is writable", "echo x > ~/.x && cat ~/.x && echo $HOME", true, "x\n/home/sandbox"},
		// /tmp keeps the image's sticky 1777 (Docker copies the image dir's mode onto the tmpfs).
		{"tmpfs owned by sandbox", "stat -c '%u:%g %a' /work /tmp /home/sandbox", true, "10001:10001 700\n10001:10001 1777\n10001:10001 700"},
		{"ulimits (fsize in KiB)", "ulimit -n; ulimit -f; ulimit -c", true, "1024\n65536\n0\n"},
		{"memory limit", "cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max", true, "536870912"},
		{"pids limit", "cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max", true, "256"},
		{"no setuid binaries", "find / -xdev -perm /6000 -type f 2>/dev/null | wc -l", true, "0\n"},
		{"cannot become root", "su -c id root </dev/null", false, ""},
		{"cannot mount", "mount -t tmpfs none /work/m 2>&1; mkdir -p /work/m && mount -t tmpfs none /work/m", false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := sh(t, s, tc.script)
			if (res.ExitCode == 0) != tc.ok {
				t.Fatalf("exit %d; want success=%v\nstdout: %s\nstderr: %s", res.ExitCode, tc.ok, res.Stdout, res.Stderr)
			}
			if tc.stdout != "" && !strings.Contains(string(res.Stdout), tc.stdout) {
				t.Fatalf("stdout %q; want it to contain %q", res.Stdout, tc.stdout)
			}
		})
	}

	t.Run("env holds only what was given", func(t *testing.T) {
		res := sh(t, s, "env", func(r *ExecRequest) { r.Env = map[string]string{"REQ_VAR": "req"} })
		env := string(res.Stdout)
		if strings.Contains(env, "SKILLFLEET_SENTINEL") || strings.Contains(env, "worker-secret") {
			t.Fatalf("the worker's environment leaked into the sandbox:\n%s", env)
		}
		for _, want := range []string{"JOB_VAR=job", "REQ_VAR=req", "HOME=/home/sandbox"} {
			if !strings.Contains(env, want) {
				t.Errorf("env lacks %s:\n%s", want, env)
			}
		}
		// Everything else comes from the image: nothing the worker could have added.
		allowed := map[string]bool{"JOB_VAR": true, "REQ_VAR": true, "HOME": true, "PATH": true, "LANG": true, "PYTHONDONTWRITEBYTECODE": true, "HOSTNAME": true, "PWD": true, "SHLVL": true, "_": true}
		for _, line := range strings.Split(strings.TrimSpace(env), "\n") {
			k, _, _ := strings.Cut(line, "=")
			if !allowed[k] {
				t.Errorf("unexpected variable %s in the sandbox", line)
			}
		}
	})
	t.Run("stdin is passed and closed", func(t *testing.T) {
		res := sh(t, s, "cat > /work/in.txt && wc -c < /work/in.txt", func(r *ExecRequest) { r.Stdin = []byte("hello sandbox\n") })
		if strings.TrimSpace(string(res.Stdout)) != "14" {
			t.Fatalf("stdout %q; want 14", res.Stdout)
		}
	})
	t.Run("no stdin reads EOF", func(t *testing.T) {
		res := sh(t, s, "cat; echo done")
		if string(res.Stdout) != "done\n" {
			t.Fatalf("stdout %q", res.Stdout)
		}
	})
}

// A stricter seccomp profile given as content is applied.
func TestSeccompProfile(t *testing.T) {
	c := realDocker(t)
	profile := `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir","mkdirat"],"action":"SCMP_ACT_ERRNO"}]}`
	r, _ := newRealRunner(t, c, func(cfg *Config) { cfg.SeccompProfile = profile })
	s := acquire(t, r, Spec{})
	res := sh(t, s, "mkdir /work/d")
	if res.ExitCode == 0 || !strings.Contains(string(res.Stderr), "Operation not permitted") {
		t.Fatalf("mkdir under a profile denying it: exit %d, stderr %q; want EPERM", res.ExitCode, res.Stderr)
	}
	if res := sh(t, s, "touch /work/f"); res.ExitCode != 0 {
		t.Fatalf("touch: exit %d %s", res.ExitCode, res.Stderr)
	}
}

func TestInWritableTree(t *testing.T) {
	for _, tc := range []struct {
		p    string
		want bool
	}{
		{"/work/.claude/skills", true},
		{"/tmp/skills", true},
		{"/home/sandbox/.gemini/skills", true},
		{"/work", false},               // the tree itself, not a directory in it
		{"/workshop/skills", false},    // a prefix of the name is not the tree
		{"/work/../etc/skills", false}, // not clean
		{"/work/a/", false},            // not clean
		{"work/skills", false},         // not absolute
		{"/etc/skills", false},         // read-only root
		{"/skills/x", false},           // the bundle's read-only mount
		{"/home/sandboxed/x", false},   // another home
		{"/work/a\x00b", false},        // NUL
		{"/work/a\nb", false},          // newline
	} {
		if got := InWritableTree(tc.p); got != tc.want {
			t.Errorf("InWritableTree(%q) = %v, want %v", tc.p, got, tc.want)
		}
	}
}
