package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
)

// The sandbox user, matching deploy/sandbox (uid/gid 10001, HOME /home/sandbox).
const (
	sandboxUser = "10001:10001"
	workDir     = "/work"
	homeDir     = "/home/sandbox"
	tmpDir      = "/tmp"
)

// InWritableTree says p is a clean absolute path strictly inside one of the sandbox's writable
// trees (its work directory, /tmp, the sandbox user's HOME): where something a job runs may
// be given a directory to write, such as an agent CLI's skills directory.
func InWritableTree(p string) bool {
	if path.Clean(p) != p || strings.ContainsRune(p, 0) || strings.ContainsRune(p, '\n') {
		return false
	}
	for _, w := range []string{workDir, tmpDir, homeDir} {
		if strings.HasPrefix(p, w+"/") {
			return true
		}
	}
	return false
}

// Labels on every sandbox container. The reaper selects on LabelSandbox and decides with the
// rest; they are also what an operator filters on: docker ps -a --filter label=skillfleet.sandbox.
const (
	LabelSandbox     = "skillfleet.sandbox"     // always "1"
	LabelWorker      = "skillfleet.worker"      // Config.WorkerID
	LabelIncarnation = "skillfleet.incarnation" // random per Runner: tells a restarted worker's containers apart
	LabelJob         = "skillfleet.job"         // Spec.JobID; "" for warm pool containers (labels are fixed at create)
	LabelExpires     = "skillfleet.expires"     // unix seconds after which nobody may still use it
	LabelPool        = "skillfleet.pool"        // the pool key, on warm pool containers only
)

// Mount is a host directory mounted read-only into the sandbox (the suite's skills bundle).
type Mount struct {
	Source string // host path, as the Docker engine sees it
	Target string // path inside the sandbox, e.g. /skills
}

// template is everything that decides how a container is created, except its labels. Two
// jobs with equal templates can use each other's warm containers.
type template struct {
	image   string
	runtime string
	mounts  []Mount // sorted by Target
	limits  Limits
	seccomp string // compacted profile JSON; "" = engine default
	noSwap  bool   // the engine can limit swap (MemorySwap = Memory)
}

// key identifies a warm pool: image, runtime, mounts and limits.
func (t template) key() string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", t.image, t.runtime, t.limits)
	for _, m := range t.mounts {
		fmt.Fprintf(h, "%s\x00%s\x00", m.Source, m.Target)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// reservedTargets are the sandbox's own mounts; a skill mount must not shadow them.
var reservedTargets = []string{"/", workDir, tmpDir, homeDir, "/proc", "/sys", "/dev", "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib64"}

// forbiddenSources are host paths that must never reach a sandbox, nor any of their parents:
// they hold the engine's socket, its state, credentials or kernel interfaces. A read-only
// bind mount does not stop connect() on a unix socket, so the socket's directories matter.
var forbiddenSources = []string{"/var/run/docker.sock", "/run/docker.sock", "/run/containerd", "/var/lib/docker", "/var/lib/containerd", "/proc", "/sys", "/dev", "/etc", "/root", "/boot"}

// validateMounts checks and normalises the job's mounts: absolute clean paths, no shadowing of
// the sandbox's own dirs, no duplicate targets, no sensitive host path.
func validateMounts(ms []Mount) ([]Mount, error) {
	out := make([]Mount, 0, len(ms))
	seen := map[string]bool{}
	var errs []error
	for _, m := range ms {
		src, dst := path.Clean(m.Source), path.Clean(m.Target)
		switch {
		case !path.IsAbs(m.Source) || !path.IsAbs(m.Target):
			errs = append(errs, fmt.Errorf("mount %q -> %q: both paths must be absolute", m.Source, m.Target))
			continue
		case slices.Contains(reservedTargets, dst) || underAny(dst, "/proc", "/sys", "/dev"):
			errs = append(errs, fmt.Errorf("mount %q -> %q: target is reserved by the sandbox", m.Source, m.Target))
			continue
		case seen[dst]:
			errs = append(errs, fmt.Errorf("mount %q -> %q: target mounted twice", m.Source, m.Target))
			continue
		}
		if src == "/" || slices.ContainsFunc(forbiddenSources, func(f string) bool { return f == src || strings.HasPrefix(f, src+"/") || strings.HasPrefix(src, f+"/") }) {
			errs = append(errs, fmt.Errorf("mount %q -> %q: host path is not allowed in a sandbox", m.Source, m.Target))
			continue
		}
		// Best effort: the worker may see a different filesystem than the engine.
		if fi, err := os.Lstat(src); err == nil && fi.Mode()&(os.ModeSocket|os.ModeDevice|os.ModeNamedPipe) != 0 {
			errs = append(errs, fmt.Errorf("mount %q -> %q: sockets, devices and pipes are not allowed", m.Source, m.Target))
			continue
		}
		seen[dst] = true
		out = append(out, Mount{Source: src, Target: dst})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	slices.SortFunc(out, func(a, b Mount) int { return strings.Compare(a.Target, b.Target) })
	return out, nil
}

func underAny(p string, dirs ...string) bool {
	return slices.ContainsFunc(dirs, func(d string) bool { return strings.HasPrefix(p, d+"/") })
}

// buildContainer turns a template into the create request. Every containment setting lives
// here; the comment on each says what it stops.
func buildContainer(t template, labels map[string]string) (*container.Config, *container.HostConfig) {
	l := t.limits
	tmpfs := func(exec string) string {
		// Owned by the sandbox user, private to it, size-limited (tmpfs pages count against
		// the memory limit too). nosuid/nodev: nothing placed there gains privileges.
		return fmt.Sprintf("rw,%s,nosuid,nodev,size=%d,uid=10001,gid=10001,mode=0700", exec, l.TmpfsBytes)
	}
	cfg := &container.Config{
		Image:    t.image,
		User:     sandboxUser, // never root, whatever the image says
		Hostname: "sandbox",   // no host or container id leaks through uname
		// An idle process keeps the container alive for the job's execs; Init (tini) is PID 1
		// and reaps orphans so zombies do not eat the pids limit. Entrypoint is set so a
		// derived image's ENTRYPOINT cannot run instead.
		Entrypoint: []string{"sleep"},
		Cmd:        []string{"infinity"},
		WorkingDir: workDir,
		Env:        nil, // the image's PATH/HOME/LANG only; job env is given per exec
		Labels:     labels,
		StopSignal: "SIGKILL",
	}
	secOpt := []string{"no-new-privileges"} // setuid binaries and file caps cannot raise privileges
	if t.seccomp != "" {
		secOpt = append(secOpt, "seccomp="+t.seccomp) // stricter syscall filter than the default
	}
	memSwap := l.MemoryBytes // no swap beyond the memory limit
	if t.noSwap {
		// Without swap accounting the engine drops MemorySwap with a warning on every create;
		// say what it will do anyway. Start logs this once.
		memSwap = -1
	}
	yes := true
	hc := &container.HostConfig{
		NetworkMode:    "none",          // no interfaces but lo: no exfiltration, no lateral movement
		CapDrop:        []string{"ALL"}, // no capabilities, even for a root process
		SecurityOpt:    secOpt,
		ReadonlyRootfs: true, // the image cannot be modified; writes go to the tmpfs dirs only
		Tmpfs: map[string]string{
			workDir: tmpfs("exec"),   // tests run their own scripts from /work
			tmpDir:  tmpfs("noexec"), // nothing is executed from scratch dirs
			homeDir: tmpfs("noexec"), // (noexec is hygiene, not a boundary: interpreters still run files)
		},
		ShmSize:       l.TmpfsBytes, // /dev/shm is one more writable tmpfs: same size cap
		Init:          &yes,
		Runtime:       t.runtime,                           // e.g. runsc (gVisor) for a second boundary
		LogConfig:     container.LogConfig{Type: "none"},   // output comes from exec; no log files on the host
		IpcMode:       "private",                           // no shared memory with other containers
		Privileged:    false,                               // explicit: never
		RestartPolicy: container.RestartPolicy{Name: "no"}, // a dead sandbox stays dead
		// Prefer sandbox processes when the host itself runs out of memory.
		OomScoreAdj: 500,
		Resources: container.Resources{
			Memory:     l.MemoryBytes,
			MemorySwap: memSwap,
			NanoCPUs:   l.NanoCPUs,
			PidsLimit:  &l.Pids, // fork bombs stop here; all sandboxes share one uid, so not nproc
			Ulimits: []*container.Ulimit{
				{Name: "nofile", Soft: l.NoFile, Hard: l.NoFile},
				{Name: "fsize", Soft: l.FileSizeBytes, Hard: l.FileSizeBytes},
				{Name: "core", Soft: 0, Hard: 0}, // no core dumps (host core_pattern may pipe to a host program)
			},
		},
	}
	for _, m := range t.mounts {
		hc.Mounts = append(hc.Mounts, mount.Mount{
			Type:     mount.TypeBind,
			Source:   m.Source,
			Target:   m.Target,
			ReadOnly: true,
			// Non-recursive: host mounts nested under the source stay out (before kernel 5.12
			// read-only is not recursive, so they would be writable).
			BindOptions: &mount.BindOptions{NonRecursive: true, Propagation: mount.PropagationPrivate},
		})
	}
	return cfg, hc
}
