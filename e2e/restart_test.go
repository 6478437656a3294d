package e2e

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/internal/testutil"
)

// TestCoordinatorRestartMidRun stops the coordinator (SIGTERM) in the middle of a run and
// starts it again on the same data directory. Its embedded NATS server goes down and comes
// back with it, the worker reconnects, `submit --follow` waits through the gap, and the run
// ends with the same report as without the restart.
func TestCoordinatorRestartMidRun(t *testing.T) {
	dir := t.TempDir()
	api, natsAddr := testutil.FreeAddr(t), testutil.FreeAddr(t)
	tokenFile := writeFile(t, dir, "api-token", "api-e2e-token-0123456789\n")
	natsToken := writeFile(t, dir, "nats-token", "nats-e2e-token\n")
	coordArgs := []string{"--http", api, "--token-file", tokenFile, "--data", filepath.Join(dir, "coordinator"),
		"--embedded-nats", natsAddr, "--nats-token-file", natsToken}
	coord := start(t, "coordinator", binary(t, "coordinator"), nil, coordArgs...)
	waitHTTP(t, coord, "http://"+api+"/readyz")
	w := start(t, "worker", binary(t, "worker"), []string{"SKILLFLEET_NATS_TOKEN=nats-e2e-token"},
		"--id", fmt.Sprintf("e2e-restart-%d", time.Now().UnixNano()%1e6), "--slots", "1", "--warm-pool", "1",
		"--metrics", "", "--cache", filepath.Join(dir, "bundles"), "--nats", "nats://"+natsAddr)

	done := submitExamples(t, "http://"+api, tokenFile)
	midRun(t, "http://"+api, "api-e2e-token-0123456789")
	if code := coord.stop(t, syscall.SIGTERM, time.Minute); code != 0 {
		t.Fatalf("coordinator exit %d after SIGTERM, want 0", code)
	}
	coord = start(t, "coordinator (restarted)", binary(t, "coordinator"), nil, coordArgs...)
	waitHTTP(t, coord, "http://"+api+"/readyz")
	checkExampleReport(t, <-done, "the restart")
	if !w.running() {
		t.Error("the worker died with the coordinator's NATS server; it must reconnect")
	}
}
