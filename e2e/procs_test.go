package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/internal/testutil"
)

// bins are the binaries under test, built once per test binary.
var bins struct {
	once sync.Once
	dir  string
	err  error
}

// binary returns the path of a freshly built program: skillfleet, coordinator, worker,
// skillfleet-bench (the fleet simulator), or nats-server (built from the module the queue
// package embeds, so the versions agree).
func binary(t *testing.T, name string) string {
	t.Helper()
	bins.once.Do(func() {
		dir, err := os.MkdirTemp("", "skillfleet-e2e-bin-")
		if err != nil {
			bins.err = err
			return
		}
		bins.dir = dir
		cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
			"./cmd/skillfleet", "./cmd/coordinator", "./cmd/worker", "./cmd/skillfleet-bench", "github.com/nats-io/nats-server/v2")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			bins.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if bins.err != nil {
		t.Fatal(bins.err)
	}
	return filepath.Join(bins.dir, name)
}

// TestMain removes the built binaries after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if bins.dir != "" {
		_ = os.RemoveAll(bins.dir)
	}
	os.Exit(code)
}

// proc is a started daemon whose output is kept for the test's failure messages.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *testutil.SyncBuffer
	done chan struct{}
	code int
}

// start runs a daemon until the test ends (then it is killed if still running).
func start(t *testing.T, name, bin string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, cmd: exec.Command(bin, args...), out: &testutil.SyncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		err := p.cmd.Wait()
		p.code = exitCode(err)
		close(p.done)
	}()
	t.Cleanup(func() {
		// SIGTERM first, so a worker removes its sandboxes; SIGKILL if it does not end.
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(30 * time.Second):
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}
		if t.Failed() {
			t.Logf("--- %s output:\n%s", p.name, p.out.String())
		}
	})
	return p
}

// stop sends sig and returns the exit code, failing the test if the process outlives within.
func (p *proc) stop(t *testing.T, sig os.Signal, within time.Duration) int {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %s: %v", p.name, err)
	}
	return p.wait(t, within)
}

// wait returns the exit code once the process has ended by itself.
func (p *proc) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(within):
		t.Fatalf("%s still running after %s", p.name, within)
		return -1
	}
}

func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}

// runCLI runs one skillfleet command to its end and returns its exit code and output.
func runCLI(t *testing.T, timeout time.Duration, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	code, stdout, stderr, err := runCLIBounded(binary(t, "skillfleet"), timeout, args...)
	if err != nil {
		t.Fatal(err)
	}
	return code, stdout, stderr
}

// runCLIBounded is runCLI for a goroutine other than the test's, where t.Fatal would end the
// goroutine and leave its reader waiting forever: a run past timeout is an error.
func runCLIBounded(bin string, timeout time.Duration, args ...string) (code int, stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return 0, out.String(), errb.String(), fmt.Errorf("skillfleet %s: still running after %s\nstderr:\n%s", strings.Join(args, " "), timeout, errb.String())
	}
	return exitCode(runErr), out.String(), errb.String(), nil
}

// waitHTTP polls url until it answers 200 or the process (if not nil) dies.
func waitHTTP(t *testing.T, p *proc, url string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if p != nil && !p.running() {
			t.Fatalf("%s exited with %d before %s answered:\n%s", p.name, p.code, url, p.out.String())
		}
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s did not answer 200 within a minute", url)
}

// scrape returns the sum of a metric's samples whose labels include every label in want
// (`verdict="passed"`, say), from Prometheus text at url.
func scrape(t *testing.T, url, metric string, want ...string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	sum, found := 0.0, false
	for line := range strings.Lines(body.String()) {
		line = strings.TrimSpace(line)
		name, rest, _ := strings.Cut(line, "{")
		if name != metric {
			if n, _, ok := strings.Cut(line, " "); !ok || n != metric {
				continue
			}
		}
		labels, value := "", line[strings.LastIndexByte(line, ' ')+1:]
		if rest != "" {
			labels, _, _ = strings.Cut(rest, "}")
		}
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(labels, w)
		}
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("%s: bad sample %q", url, line)
		}
		sum, found = sum+v, true
	}
	if !found {
		t.Fatalf("%s has no %s%v", url, metric, want)
	}
	return sum
}

// writeFile writes a file under dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
