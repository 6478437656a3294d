package e2e

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	skillworker "github.com/skillfleet/skillfleet/worker"
)

// docker runs the docker CLI and returns its trimmed output, failing the test on an error.
func docker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := dockerErr(args...)
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func dockerErr(args ...string) (string, error) {
	cmd := exec.Command("docker", args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

// dockerSocket is the engine's Unix socket on this host, to hand to a worker container.
func dockerSocket(t *testing.T) string {
	t.Helper()
	p := "/var/run/docker.sock"
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		u, err := url.Parse(h)
		if err != nil || u.Scheme != "unix" {
			t.Fatalf("DOCKER_HOST=%s: a worker container needs the engine's Unix socket", h)
		}
		p = u.Path
	}
	return p
}

// daemonImage builds deploy/docker/Dockerfile the way `make image` does and returns its tag.
func daemonImage(t *testing.T) string {
	t.Helper()
	ctx := t.TempDir()
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", ctx+string(filepath.Separator), "./cmd/...")
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ca, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if err != nil {
		t.Fatalf("the image carries the build host's CA bundle: %v", err)
	}
	writeFile(t, ctx, "ca-certificates.crt", string(ca))
	tag := fmt.Sprintf("skillfleet/skillfleet:e2e-%d", os.Getpid())
	docker(t, "build", "-q", "-f", "../deploy/docker/Dockerfile", "-t", tag, ctx)
	t.Cleanup(func() { _, _ = dockerErr("rmi", "-f", tag) })
	return tag
}

// TestContainerizedFleet runs the daemons' image as a deployment would: a coordinator
// container with its embedded NATS server (token required, listening on a private network),
// and a worker container that reaches the coordinator by name and the host's Docker engine
// through its socket, with the bundle cache at the same path on the host and in the container
// (sandboxes bind-mount bundles from there). The CLI on the host submits through the published
// API port. `docker stop` drains both and they exit 0.
func TestContainerizedFleet(t *testing.T) {
	image := daemonImage(t)
	id := fmt.Sprintf("e2e-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	network := "skillfleet-" + id
	docker(t, "network", "create", network)
	t.Cleanup(func() { _, _ = dockerErr("network", "rm", network) })
	run := func(name string, args ...string) string {
		t.Helper()
		docker(t, append([]string{"run", "-d", "--name", name, "--network", network}, args...)...)
		t.Cleanup(func() {
			if t.Failed() {
				logs, _ := dockerErr("logs", name)
				t.Logf("--- %s logs:\n%s", name, logs)
			}
			_, _ = dockerErr("rm", "-f", name)
		})
		return name
	}
	const apiToken, natsToken = "api-e2e-token-0123456789", "nats-e2e-token"

	coordinator := run("coordinator-"+id, "--network-alias", "coordinator", "-p", "127.0.0.1::8080",
		"--tmpfs", "/data:uid=65532,gid=65532", "-e", "SKILLFLEET_TOKEN="+apiToken, "-e", "SKILLFLEET_NATS_TOKEN="+natsToken,
		image, "coordinator", "--http", "0.0.0.0:8080", "--embedded-nats", "0.0.0.0:4222", "--data", "/data")
	hostPort := docker(t, "port", coordinator, "8080/tcp")
	api := "http://" + strings.Split(hostPort, "\n")[0]
	waitHTTP(t, nil, api+"/readyz")

	// The node path that worker pods on one engine share (Helm's host mode), with the
	// directories of a pod that is gone and of one that runs (this process holds its lock).
	shared := filepath.Join(t.TempDir(), "shared")
	live, err := skillworker.ClaimDir(shared, "live-pod", skillworker.ClaimOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Release()
	gone := filepath.Join(shared, "gone-pod")
	if err := os.MkdirAll(filepath.Join(gone, "bundles"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gone, ".lock"), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	// The worker's user is 65532: it may lock and remove what is there, as on a node.
	for _, p := range []string{shared, gone, filepath.Join(gone, "bundles"), live.Dir} {
		if err := os.Chmod(p, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(live.Dir, ".lock"), 0o666); err != nil {
		t.Fatal(err)
	}
	sock := dockerSocket(t)
	var st syscall.Stat_t
	if err := syscall.Stat(sock, &st); err != nil {
		t.Fatal(err)
	}
	worker := run("worker-"+id, "-v", sock+":/var/run/docker.sock", "--group-add", fmt.Sprint(st.Gid),
		"-v", shared+":"+shared, "-e", "SKILLFLEET_NATS_TOKEN="+natsToken,
		image, "worker", "--nats", "nats://coordinator:4222", "--id", "ctr-"+id, "--slots", "2", "--warm-pool", "1",
		"--shared-dir", shared, "--metrics", "0.0.0.0:9090", "--drain-grace", "30s")

	code, out, errOut := runCLI(t, 5*time.Minute, "submit", "--coordinator", api, "--token", apiToken,
		"--follow", "--skill", "env-selector", "--case", "selects-dev", "--case", "config-*", examples)
	if code != 0 || !strings.Contains(out, "3 cases: 3 passed") {
		t.Fatalf("submit exit %d, want 0 with 3 passed\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	// The worker ran the jobs from its own directory, pruned the gone pod's and left the
	// running pod's alone: the lock held out here counts inside the container.
	if ents, err := os.ReadDir(filepath.Join(shared, "ctr-"+id, "bundles")); err != nil || len(ents) == 0 {
		t.Errorf("the worker's bundle cache under the shared directory is empty (%v)", err)
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("the gone pod's directory is still there (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(live.Dir, ".lock")); err != nil {
		t.Errorf("the running pod's directory was touched: %v", err)
	}

	for _, name := range []string{worker, coordinator} {
		docker(t, "stop", "-t", "60", name)
		if code := docker(t, "inspect", "-f", "{{.State.ExitCode}}", name); code != "0" {
			logs, _ := dockerErr("logs", name)
			t.Errorf("%s exited with %s after docker stop, want 0\n%s", name, code, logs)
		}
	}
}
