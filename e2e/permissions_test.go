package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestLeastPrivilegeNATS runs a fleet whose daemons log in as the users of
// deploy/nats/permissions.conf, and checks that the worker's user is refused what a worker
// must never do.
func TestLeastPrivilegeNATS(t *testing.T) {
	dir := t.TempDir()
	perms, err := os.ReadFile("../deploy/nats/permissions.conf")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "permissions.conf", string(perms))
	addr := freeAddr(t)
	conf := writeFile(t, dir, "nats.conf", fmt.Sprintf("listen: %q\nserver_name: perms\njetstream { store_dir: %q }\ninclude ./permissions.conf\n", addr, filepath.Join(dir, "js")))
	const coordPass, workerPass = "coordinator-e2e-password", "worker-e2e-password"
	ns := start(t, "nats-server", binary(t, "nats-server"), []string{
		"SKILLFLEET_COORDINATOR_PASSWORD=" + coordPass, "SKILLFLEET_WORKER_PASSWORD=" + workerPass,
	}, "-c", conf)
	url := "nats://" + addr
	waitNATS(t, ns, url, nats.UserInfo("skillfleet-worker", workerPass), nats.CustomInboxPrefix("_INBOX_skillfleet_worker"))

	apiToken := "perms-api-token"
	tokenFile := writeFile(t, dir, "api-token", apiToken+"\n")
	httpAddr := freeAddr(t)
	api := "http://" + httpAddr
	coord := start(t, "coordinator", binary(t, "coordinator"), []string{"SKILLFLEET_NATS_PASSWORD=" + coordPass},
		"--http", httpAddr, "--token-file", tokenFile, "--data", filepath.Join(dir, "coordinator"),
		"--nats", url, "--nats-user", "skillfleet-coordinator", "--nats-inbox-prefix", "_INBOX_skillfleet_coordinator")
	waitHTTP(t, coord, api+"/readyz")
	metrics := freeAddr(t)
	w := start(t, "worker", binary(t, "worker"), []string{"SKILLFLEET_NATS_PASSWORD=" + workerPass},
		"--id", fmt.Sprintf("perms-%d", os.Getpid()), "--slots", "2", "--warm-pool", "1", "--metrics", metrics,
		"--cache", filepath.Join(dir, "bundles"), "--nats", url, "--nats-user", "skillfleet-worker",
		"--nats-inbox-prefix", "_INBOX_skillfleet_worker")
	waitHTTP(t, w, "http://"+metrics+"/healthz")

	code, out, errOut := runCLI(t, 5*time.Minute, "submit", "--coordinator", api, "--token", apiToken,
		"--follow", "--skill", "env-selector", "--case", "selects-dev", "--case", "config-*", examples)
	if code != 0 || !strings.Contains(out, "3 cases: 3 passed") {
		t.Fatalf("submit exit %d, want 0 with 3 passed\nstdout:\n%s\nstderr:\n%s\nnats-server:\n%s", code, out, errOut, ns.out.String())
	}
	// A large bundle: its chunks come with flow control, which the worker must answer.
	big := filepath.Join(dir, "big")
	if err := os.CopyFS(filepath.Join(big, "env-selector"), os.DirFS(filepath.Join(examples, "env-selector"))); err != nil {
		t.Fatal(err)
	}
	blob := make([]byte, 48<<20)
	if _, err := rand.Read(blob); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(big, "env-selector", "references", "blob.bin"), blob, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, 5*time.Minute, "submit", "--coordinator", api, "--token", apiToken,
		"--follow", "--case", "selects-dev", big)
	if code != 0 || !strings.Contains(out, "1 cases: 1 passed") && !strings.Contains(out, "1 case: 1 passed") {
		t.Fatalf("submit of a large bundle: exit %d, want 0 with 1 passed\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	// Both roles did their work within their permissions.
	for _, p := range []*proc{coord, w} {
		if s := p.out.String(); strings.Contains(strings.ToLower(s), "permissions violation") {
			t.Errorf("%s hit a permissions violation:\n%s", p.name, s)
		}
	}

	// What a worker's credentials must not allow, even to someone who steals them.
	var mu sync.Mutex
	var denied []string
	nc, err := nats.Connect(url, nats.UserInfo("skillfleet-worker", workerPass), nats.CustomInboxPrefix("_INBOX_skillfleet_worker"),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			mu.Lock()
			denied = append(denied, err.Error())
			mu.Unlock()
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	refused := []struct{ what, subject string }{
		{"publish a job", "skillfleet.jobs.ondemand.r20260101t000000-00000000"},
		{"write run state", "$KV.skillfleet_runs.r20260101t000000-00000000"},
		{"store a bundle chunk", "$O.skillfleet_bundles.C.forged"},
		{"delete the jobs stream", "$JS.API.STREAM.DELETE.SKILLFLEET_JOBS"},
		{"purge the results", "$JS.API.STREAM.PURGE.SKILLFLEET_RESULTS"},
		{"change a lane consumer", "$JS.API.CONSUMER.CREATE.SKILLFLEET_JOBS.workers-ondemand"},
		{"read another stream", "$JS.API.STREAM.MSG.GET.KV_skillfleet_runs"},
	}
	for _, r := range refused {
		if err := nc.Publish(r.subject, []byte("{}")); err != nil {
			t.Fatalf("%s: %v", r.what, err)
		}
	}
	refusedSubs := []struct{ what, subject string }{
		{"read every result", "skillfleet.results.>"},
		{"read the coordinator's replies (run state, results)", "_INBOX_skillfleet_coordinator.>"},
		{"read replies on the default prefix", "_INBOX.>"},
	}
	for _, r := range refusedSubs {
		if _, err := nc.SubscribeSync(r.subject); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		got := strings.Join(denied, "\n")
		mu.Unlock()
		missing := []string{}
		for _, r := range refused {
			if !strings.Contains(got, fmt.Sprintf("Permissions Violation for Publish to %q", r.subject)) {
				missing = append(missing, r.what)
			}
		}
		for _, r := range refusedSubs {
			if !strings.Contains(got, fmt.Sprintf("Permissions Violation for Subscription to %q", r.subject)) {
				missing = append(missing, r.what)
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker's user was not refused: %s\nerrors seen:\n%s", strings.Join(missing, ", "), got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitNATS waits until a client can log in to the server that p runs and use JetStream.
func waitNATS(t *testing.T, p *proc, url string, opts ...nats.Option) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		nc, err := nats.Connect(url, opts...)
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err = nc.RequestWithContext(ctx, "$JS.API.STREAM.INFO.SKILLFLEET_JOBS", nil)
			cancel()
			nc.Close()
			if err == nil {
				return
			}
		}
		if !p.running() || time.Now().After(deadline) {
			t.Fatalf("nats-server not ready: %v\n%s", err, p.out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
