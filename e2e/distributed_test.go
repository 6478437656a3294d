package e2e

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/internal/testutil"
	skillworker "github.com/skillfleet/skillfleet/worker"
)

const examples = "../examples/skills"

// fleet is a coordinator and a worker started as their own processes.
type fleet struct {
	api, tokenFile  string
	coordinator     *proc
	worker          *proc
	workerMetrics   string
	coordinatorHTTP string
	natsURL         string
}

// startFleet starts a coordinator and a worker against nats: given, a nats-server process; nil,
// the coordinator's embedded server with a token. workerArgs are added to the worker's flags.
func startFleet(t *testing.T, ns *natsServer, workerArgs ...string) *fleet {
	t.Helper()
	return startFleetWith(t, fleetOptions{nats: ns, workerArgs: workerArgs})
}

// fleetOptions are what a test may change of the fleet startFleetWith starts.
type fleetOptions struct {
	// nats is the nats-server process to use; nil, the coordinator's embedded server.
	nats *natsServer
	// tokens is the coordinator's --token-file; "" is the one token every test of the package
	// knows.
	tokens string
	// coordinatorArgs and workerArgs are added to the daemons' flags.
	coordinatorArgs, workerArgs []string
}

// startFleetWith is startFleet with the token file and the flags of both daemons chosen.
func startFleetWith(t *testing.T, o fleetOptions) *fleet {
	t.Helper()
	dir := t.TempDir()
	f := &fleet{coordinatorHTTP: testutil.FreeAddr(t), workerMetrics: testutil.FreeAddr(t)}
	f.api = "http://" + f.coordinatorHTTP
	if o.tokens == "" {
		o.tokens = "api-e2e-token-0123456789\n"
	}
	f.tokenFile = writeFile(t, dir, "api-token", o.tokens)
	natsToken := writeFile(t, dir, "nats-token", "nats-e2e-token\n")
	var coordNATS, workerNATS []string
	if ns := o.nats; ns != nil {
		coordNATS = append(ns.clientFlags(), "--nats-token-file", natsToken)
		workerNATS = ns.clientFlags()
		f.natsURL = ns.URL
	} else {
		addr := testutil.FreeAddr(t)
		f.natsURL = "nats://" + addr
		coordNATS = []string{"--embedded-nats", addr, "--nats-token-file", natsToken}
		workerNATS = []string{"--nats", f.natsURL}
	}
	coordArgs := append([]string{
		"--http", f.coordinatorHTTP, "--token-file", f.tokenFile, "--data", filepath.Join(dir, "coordinator"),
	}, coordNATS...)
	f.coordinator = start(t, "coordinator", binary(t, "coordinator"), nil, append(coordArgs, o.coordinatorArgs...)...)
	waitHTTP(t, f.coordinator, f.api+"/readyz")
	// The worker takes its NATS token from the environment, as a Kubernetes secret would give it.
	f.worker = start(t, "worker", binary(t, "worker"), []string{"SKILLFLEET_NATS_TOKEN=nats-e2e-token"}, append([]string{
		"--id", fmt.Sprintf("e2e-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6), "--slots", "2", "--warm-pool", "1",
		"--metrics", f.workerMetrics, "--cache", filepath.Join(dir, "bundles"), "--drain-grace", "30s",
	}, append(workerNATS, o.workerArgs...)...)...)
	waitHTTP(t, f.worker, "http://"+f.workerMetrics+"/healthz")
	return f
}

// summary is the part of the JSON report these tests read.
type summary struct {
	Run     string `json:"run"`
	Summary struct {
		Total, Passed, Failed, Errored, TimedOut, Skipped int
	} `json:"summary"`
	Cases []struct {
		Skill, Case, Kind, Status, Reason string
	} `json:"cases"`
}

// TestDistributedFleet runs the example suite on daemons that reach a separate nats-server
// over mutual TLS with a token, the way the README's distributed mode sets them up: the
// command cases pass in sandboxes, the prompt cases are errored for want of an agent (never
// passed), the report, JUnit and metrics agree, and SIGTERM stops both daemons cleanly.
func TestDistributedFleet(t *testing.T) {
	ns := startNATS(t)
	f := startFleet(t, ns)
	junit := filepath.Join(t.TempDir(), "report.xml")

	code, out, errOut := runCLI(t, 5*time.Minute, "submit", "--coordinator", f.api, "--token-file", f.tokenFile,
		"--follow", "--format", "json", "--junit", junit, examples)
	if code != 1 {
		t.Fatalf("submit exit %d, want 1 (prompt cases have no agent)\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var rep summary
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("stdout is not a JSON report: %v\n%s", err, out)
	}
	if s := rep.Summary; s.Total != 17 || s.Passed != 11 || s.Errored != 6 || s.Failed+s.TimedOut+s.Skipped != 0 {
		t.Errorf("summary %+v, want 17 cases: 11 passed, 6 errored", s)
	}
	for _, c := range rep.Cases {
		if want := map[string]string{"command": "passed", "prompt": "errored"}[c.Kind]; c.Status != want {
			t.Errorf("%s/%s (%s): %s, want %s (%s)", c.Skill, c.Case, c.Kind, c.Status, want, c.Reason)
		}
	}

	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(data, &suites); err != nil {
		t.Fatalf("JUnit: %v\n%s", err, data)
	}
	if suites.Tests != 17 || suites.Failures != 0 || suites.Errors != 6 {
		t.Errorf("JUnit: %d tests, %d failures, %d errors; want 17, 0, 6", suites.Tests, suites.Failures, suites.Errors)
	}

	code, out, errOut = runCLI(t, time.Minute, "runs", "list", "--coordinator", f.api, "--token-file", f.tokenFile)
	if code != 0 || !strings.Contains(out, rep.Run) {
		t.Errorf("runs list: exit %d, run %s not listed\nstdout:\n%s\nstderr:\n%s", code, rep.Run, out, errOut)
	}
	code, _, errOut = runCLI(t, time.Minute, "runs", "list", "--coordinator", f.api, "--token", "wrong")
	if code == 0 || !strings.Contains(errOut, "401") && !strings.Contains(strings.ToLower(errOut), "token") {
		t.Errorf("runs list with a wrong token: exit %d, stderr %q", code, errOut)
	}
	if n := scrape(t, f.api+"/metrics", "skillfleet_coordinator_auth_failures_total"); n < 1 {
		t.Errorf("the coordinator counted %v wrong tokens after one", n)
	}

	// The worker counted what it ran; the coordinator what it finished.
	workerURL := "http://" + f.workerMetrics + "/metrics"
	if n := scrape(t, workerURL, "skillfleet_worker_jobs_total", `verdict="passed"`, `kind="command"`); n != 11 {
		t.Errorf("worker: %v command jobs passed, want 11", n)
	}
	if n := scrape(t, workerURL, "skillfleet_worker_jobs_total"); n != exampleJobsRun {
		t.Errorf("worker: %v jobs, want the %d of the plan's %d that curtailment leaves", n, exampleJobsRun, exampleJobs)
	}
	if n := scrape(t, f.api+"/metrics", "skillfleet_coordinator_cases_total", `verdict="errored"`); n != 6 {
		t.Errorf("coordinator: %v errored cases, want 6", n)
	}

	// SIGTERM drains and exits 0; the coordinator leaves no run behind to resume.
	if code := f.worker.stop(t, syscall.SIGTERM, time.Minute); code != 0 {
		t.Errorf("worker exit %d after SIGTERM, want 0", code)
	}
	if !strings.Contains(f.worker.out.String(), "worker stopped") {
		t.Errorf("worker did not log its drain:\n%s", f.worker.out.String())
	}
	if code := f.coordinator.stop(t, syscall.SIGTERM, time.Minute); code != 0 {
		t.Errorf("coordinator exit %d after SIGTERM, want 0", code)
	}
}

// TestEmbeddedNATSWithToken is the README's way to try the fleet: the coordinator embeds
// nats-server, which then demands the NATS token of every worker.
func TestEmbeddedNATSWithToken(t *testing.T) {
	f := startFleet(t, nil)
	code, out, errOut := runCLI(t, 5*time.Minute, "submit", "--coordinator", f.api, "--token-file", f.tokenFile,
		"--follow", "--skill", "env-selector", "--case", "selects-dev", "--case", "config-*", examples)
	if code != 0 || !strings.Contains(out, "3 cases: 3 passed") {
		t.Fatalf("submit exit %d, want 0 with 3 passed\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	// A worker without the token is turned away.
	p := start(t, "tokenless worker", binary(t, "worker"), nil, "--id", "e2e-tokenless", "--metrics", "", "--warm-pool", "0",
		"--cache", filepath.Join(t.TempDir(), "cache"), "--nats", f.natsURL)
	if code := p.wait(t, time.Minute); code != 1 || !strings.Contains(strings.ToLower(p.out.String()), "authorization violation") {
		t.Errorf("tokenless worker: exit %d, want 1 with an authorization violation:\n%s", code, p.out.String())
	}
}

// TestDaemonRefusals: a daemon that cannot be set up as asked says why and exits at once, 2
// for a command line that can never work and 1 for a server that says no. None hangs, none
// runs without the credentials it was given.
func TestDaemonRefusals(t *testing.T) {
	ns := startNATS(t)
	dir := t.TempDir()
	goodToken := writeFile(t, dir, "good", ns.Token+"\n")
	badToken := writeFile(t, dir, "bad", "guess\n")
	cache := filepath.Join(dir, "cache")
	worker := func(args ...string) []string {
		return append([]string{"--id", "e2e-refused", "--metrics", "", "--warm-pool", "0", "--cache", cache}, args...)
	}
	tls := ns.clientFlags()
	// A worker with this id is running on the shared directory: this process holds its lock.
	shared := filepath.Join(dir, "shared")
	held, err := skillworker.ClaimDir(shared, "e2e-taken", skillworker.ClaimOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	onShared := func(id string) []string {
		return append([]string{"--id", id, "--metrics", "", "--warm-pool", "0", "--shared-dir", shared, "--nats-token-file", goodToken}, tls...)
	}
	tests := []struct {
		name, bin string
		args      []string
		code      int
		want      string
	}{
		{"worker: wrong NATS token", "worker", worker(append(tls, "--nats-token-file", badToken)...), 1, "authorization violation"},
		{"worker: no client certificate", "worker", worker("--nats", ns.URL, "--nats-tls-ca", ns.PKI.CA, "--nats-token-file", goodToken), 1, "connect to nats"},
		{"worker: server not trusted", "worker", worker("--nats", ns.URL, "--nats-tls-cert", ns.PKI.ClientCert, "--nats-tls-key", ns.PKI.ClientKey, "--nats-token-file", goodToken), 1, "certificate"},
		{"worker: certificate without key", "worker", worker("--nats", ns.URL, "--nats-tls-cert", ns.PKI.ClientCert), 2, "both or neither"},
		{"worker: missing token file", "worker", worker(append(tls, "--nats-token-file", filepath.Join(dir, "absent"))...), 2, "token file"},
		{"worker: two auth methods", "worker", worker(append(tls, "--nats-token", "t", "--nats-user", "u")...), 2, "only one"},
		{"worker: unknown --image-missing", "worker", worker(append(tls, "--nats-token-file", goodToken, "--image-missing", "guess")...), 2, "fail, pull or build"},
		{"worker: image missing and not pullable", "worker", worker(append(tls, "--nats-token-file", goodToken, "--image-missing", "pull", "--image", "skillfleet/absent:0")...), 1, "pull skillfleet/absent:0"},
		{"worker: --shared-dir with --cache", "worker", worker(append(tls, "--nats-token-file", goodToken, "--shared-dir", shared)...), 2, "replaces --cache"},
		{"worker: id taken on the shared directory", "worker", onShared("e2e-taken"), 1, "held by another running worker with id e2e-taken"},
		{"worker: id that cannot name a directory", "worker", onShared(".hidden"), 2, "single path element"},
		{"coordinator: wrong NATS token", "coordinator", append([]string{"--http", testutil.FreeAddr(t), "--data", filepath.Join(dir, "c1")}, append(tls, "--nats-token-file", badToken)...), 1, "authorization violation"},
		{"coordinator: open embedded NATS beyond loopback", "coordinator", []string{"--http", testutil.FreeAddr(t), "--data", filepath.Join(dir, "c2"), "--embedded-nats", "0.0.0.0:0"}, 2, "beyond loopback"},
		{"coordinator: embedded NATS with TLS flags", "coordinator", []string{"--http", testutil.FreeAddr(t), "--data", filepath.Join(dir, "c3"), "--embedded-nats", "127.0.0.1:0", "--nats-tls-ca", ns.PKI.CA}, 2, "token only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := start(t, tt.bin, binary(t, tt.bin), nil, tt.args...)
			if code := p.wait(t, time.Minute); code != tt.code {
				t.Errorf("exit %d, want %d\n%s", code, tt.code, p.out.String())
			}
			if !strings.Contains(strings.ToLower(p.out.String()), tt.want) {
				t.Errorf("output does not say %q:\n%s", tt.want, p.out.String())
			}
		})
	}
}
