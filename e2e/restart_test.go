package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/coordinator"
)

// TestCoordinatorRestartMidRun stops the coordinator (SIGTERM) in the middle of a run and
// starts it again on the same data directory. Its embedded NATS server goes down and comes
// back with it, the worker reconnects, `submit --follow` waits through the gap, and the run
// ends with the same report as without the restart.
func TestCoordinatorRestartMidRun(t *testing.T) {
	dir := t.TempDir()
	api, natsAddr := freeAddr(t), freeAddr(t)
	tokenFile := writeFile(t, dir, "api-token", "api-e2e-token\n")
	natsToken := writeFile(t, dir, "nats-token", "nats-e2e-token\n")
	coordArgs := []string{"--http", api, "--token-file", tokenFile, "--data", filepath.Join(dir, "coordinator"),
		"--embedded-nats", natsAddr, "--nats-token-file", natsToken}
	coord := start(t, "coordinator", binary(t, "coordinator"), nil, coordArgs...)
	waitHTTP(t, coord, "http://"+api+"/readyz")
	w := start(t, "worker", binary(t, "worker"), []string{"SKILLFLEET_NATS_TOKEN=nats-e2e-token"},
		"--id", fmt.Sprintf("e2e-restart-%d", time.Now().UnixNano()%1e6), "--slots", "1", "--warm-pool", "1",
		"--metrics", "", "--cache", filepath.Join(dir, "bundles"), "--nats", "nats://"+natsAddr)

	type outcome struct {
		code        int
		out, errOut string
	}
	done := make(chan outcome, 1)
	go func() {
		code, out, errOut := runCLI(t, 5*time.Minute, "submit", "--coordinator", "http://"+api, "--token-file", tokenFile,
			"--follow", "--format", "json", examples)
		done <- outcome{code, out, errOut}
	}()

	client := coordinator.NewClient("http://"+api, "api-e2e-token", nil)
	restarted := false
	for deadline := time.Now().Add(2 * time.Minute); !restarted && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		runs, err := client.List(context.Background())
		if err != nil || len(runs) == 0 || runs[0].GetDoneJobs() < 3 {
			continue
		}
		if n := runs[0].GetDoneJobs(); n >= 20 {
			t.Fatal("the run finished before the restart; the test proves nothing")
		}
		if code := coord.stop(t, syscall.SIGTERM, time.Minute); code != 0 {
			t.Fatalf("coordinator exit %d after SIGTERM, want 0", code)
		}
		coord = start(t, "coordinator (restarted)", binary(t, "coordinator"), nil, coordArgs...)
		waitHTTP(t, coord, "http://"+api+"/readyz")
		restarted = true
	}
	if !restarted {
		t.Fatal("the run never got under way")
	}

	res := <-done
	if res.code != 1 {
		t.Fatalf("submit exit %d, want 1 (prompt cases have no agent)\nstdout:\n%s\nstderr:\n%s", res.code, res.out, res.errOut)
	}
	var rep summary
	if err := json.Unmarshal([]byte(res.out), &rep); err != nil {
		t.Fatalf("stdout is not a JSON report: %v\n%s", err, res.out)
	}
	if s := rep.Summary; s.Total != 16 || s.Passed != 11 || s.Errored != 5 || s.Failed+s.TimedOut+s.Skipped != 0 {
		t.Errorf("summary after the restart: %+v, want 16 cases: 11 passed, 5 errored", s)
	}
	if !w.running() {
		t.Error("the worker died with the coordinator's NATS server; it must reconnect")
	}
}
