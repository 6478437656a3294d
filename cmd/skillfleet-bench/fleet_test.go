package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/fleet"
	"github.com/skillfleet/skillfleet/internal/cmdutil"
	"github.com/skillfleet/skillfleet/internal/testutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
	verdictpkg "github.com/skillfleet/skillfleet/verdict"
)

const (
	testCoordinatorPassword = "coordinator-fleetsim-password"
	testWorkerPassword      = "worker-fleetsim-password"
	testAPIToken            = "fleetsim-api-token-0123456789"
	testMetricsToken        = "fleetsim-metrics-token-0123456789"
)

// permissionedNATS starts an embedded nats-server with the users and permissions of
// deploy/nats/permissions.conf and a monitoring port; it returns its client and monitoring
// URLs.
func permissionedNATS(t *testing.T, log *zap.Logger) (url, monitor string) {
	t.Helper()
	monitorAddr := testutil.FreeAddr(t)
	conf := queuetest.PermissionsConfig(t, "../../deploy/nats/permissions.conf", fmt.Sprintf("http: %q", monitorAddr))
	t.Setenv("SKILLFLEET_COORDINATOR_PASSWORD", testCoordinatorPassword)
	t.Setenv("SKILLFLEET_WORKER_PASSWORD", testWorkerPassword)
	srv, err := queue.StartEmbedded(queue.EmbeddedConfig{StoreDir: t.TempDir(), Port: -1, ConfigFile: conf}, log.Named("nats"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return srv.ClientURL(), "http://" + monitorAddr
}

// startCoordinator runs the coordinator daemon in this process, logged in as the coordinator's
// user, with an API token and a metrics token, until the test ends; it returns its URL.
func startCoordinator(t *testing.T, natsURL string, log *zap.Logger) string {
	t.Helper()
	addr := testutil.FreeAddr(t)
	d, err := fleet.NewCoordinatorDaemon(fleet.CoordinatorConfig{
		HTTPAddr: addr, MetricsToken: testMetricsToken, DataDir: t.TempDir(),
		NATS: queue.ConnectConfig{URL: natsURL, User: "skillfleet-coordinator", Password: testCoordinatorPassword,
			InboxPrefix: "_INBOX_skillfleet_coordinator"},
		Queue: queue.DefaultConfig(),
		API:   coordinator.APIConfig{Tokens: []coordinator.Token{{Name: "ops", Secret: testAPIToken}}},
	}, log.Named("coordinator"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("coordinator: %v", err)
		}
	})
	url := "http://" + addr
	testutil.Eventually(t, 30*time.Second, 50*time.Millisecond, func() bool {
		resp, err := http.Get(url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, "the coordinator is not ready")
	return url
}

// TestFleetSimulatorRun runs 3 simulated workers × 4 slots, logged in as the worker user of
// deploy/nats/permissions.conf, against an in-process coordinator daemon on a permissioned
// nats-server, and drives a 300-job suite through the API with a fifth of the jobs failing:
// every job is counted at most once, each job counted failed is one the simulator failed and
// none it failed is counted passed, and the jobs the run withdrew (cases settled by a failed
// epoch) account for the rest.
func TestFleetSimulatorRun(t *testing.T) {
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	natsURL, monitor := permissionedNATS(t, log)
	api := startCoordinator(t, natsURL, log)
	// A file per command case, and a skill's prompt cases in one file (the suites of 100,000
	// cases), each answered by the simulated executor its own way.
	for _, kind := range []string{"command", "prompt"} {
		t.Run(kind, func(t *testing.T) { checkFleetRun(t, natsURL, monitor, api, kind, log) })
	}
}

// checkFleetRun drives a 300-job suite of kind through the fleet simulator and checks it.
func checkFleetRun(t *testing.T, natsURL, monitor, api, kind string, log *zap.Logger) {
	t.Helper()
	dir := t.TempDir()
	tokenFile := testutil.WriteFile(t, dir, "metrics-token", testMetricsToken+"\n")
	out := filepath.Join(dir, "BENCHMARKS.md")

	o := fleetOptions{
		nats:    cmdutil.NATSFlags{URL: natsURL, User: "skillfleet-worker", Password: testWorkerPassword, InboxPrefix: "_INBOX_skillfleet_worker"},
		workers: 3, slots: 4, idPrefix: "sim-", outputBytes: 512, failRate: 0.2, seed: 7, drainGrace: 10 * time.Second,
		submit: true, coordinator: api, token: testAPIToken, coordMetricsTokenFile: tokenFile, natsMonitor: monitor,
		skills: 10, cases: 10, runs: 3, kind: kind, name: "fleetsim-test-" + kind, poll: 50 * time.Millisecond, sampleEach: 100 * time.Millisecond,
		out: out,
	}
	if err := o.check(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	fr, err := runFleet(ctx, o, "skillfleet-bench fleet (test)", nil, &stdout, &stderr, log)
	if err != nil {
		t.Fatalf("runFleet: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("stdout:\n%s", stdout.String())
	m, exec := fr.m, fr.sim.exec
	st := m.Status
	// The run is curtailed: a case settled by a failed epoch has its other epochs withdrawn.
	withdrawn := int(st.GetWithdrawnJobs())
	jobs := 300 - withdrawn
	if st.GetState() != pb.RunState_RUN_STATE_COMPLETED || !st.GetCurtailed() || int(st.GetDoneJobs()) != jobs || int(st.GetTotalJobs()) != jobs {
		t.Fatalf("run %s ended %v (curtailed %v) with %d of %d jobs done, want completed with 300 less the %d withdrawn", st.GetId(), st.GetState(), st.GetCurtailed(), st.GetDoneJobs(), st.GetTotalJobs(), withdrawn)
	}

	// Every job's result, as the API serves the report's results, counted once.
	client := coordinator.NewClient(api, testAPIToken, nil)
	perJob := map[string]int{}
	failedCases := map[string]bool{}
	var passed, failed, other int
	if err := client.Results(ctx, st.GetId(), func(r *pb.Result) error {
		perJob[r.GetJobId()]++
		v, _ := verdictpkg.Counted(r)
		switch v {
		case pb.Verdict_VERDICT_PASSED:
			passed++
			if exec.madeToFail(st.GetId(), r.GetJobId()) {
				t.Errorf("job %s is counted passed, but the simulator failed it", r.GetJobId())
			}
		case pb.Verdict_VERDICT_FAILED:
			failed++
			failedCases[r.GetSkill()+"/"+r.GetCaseName()] = true
			if !exec.madeToFail(st.GetId(), r.GetJobId()) {
				t.Errorf("job %s is counted failed, but the simulator did not fail it", r.GetJobId())
			}
		default:
			other++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Withdrawn jobs come back skipped if they were published, and not at all if not.
	if len(perJob) < jobs || len(perJob) > 300 || other > withdrawn {
		t.Errorf("%d jobs have a counted result (%d neither passed nor failed), want %d to 300 with at most the %d withdrawn skipped", len(perJob), other, jobs, withdrawn)
	}
	for job, n := range perJob {
		if n != 1 {
			t.Errorf("job %s has %d counted results", job, n)
		}
	}
	made := exec.failedJobs(st.GetId())
	if made == 0 || made == 300 {
		t.Fatalf("the simulator failed %d of 300 jobs at a fail rate of 0.2", made)
	}
	// A job made to fail may have been withdrawn, and stopped, while it ran.
	if failed > made || made-failed > withdrawn || passed+failed < jobs {
		t.Errorf("results: %d passed, %d failed, %d other; the simulator failed %d of 300, %d withdrawn", passed, failed, other, made, withdrawn)
	}
	if c := st.GetCases(); int(c.GetFailed()) != len(failedCases) || int(c.GetPassed()) != 100-len(failedCases) {
		t.Errorf("cases: %d passed, %d failed; %d of 100 cases have a failed epoch", c.GetPassed(), c.GetFailed(), len(failedCases))
	}
	// The driver's own tally agrees, and it measured the processes it was pointed at.
	if m.Results.Jobs != len(perJob) || m.Results.Duplicates != 0 || m.Results.ByVerdict[pb.Verdict_VERDICT_FAILED] != failed || m.Results.PassedButMadeToFail != 0 {
		t.Errorf("the driver's tally %+v disagrees", m.Results)
	}
	if m.Coord.Samples == 0 || m.Coord.Peak <= 0 {
		t.Errorf("no coordinator RSS measured: %+v", m.Coord)
	}
	if m.NATS.Samples == 0 || m.NATS.Peak <= 0 {
		t.Errorf("no NATS memory measured: %+v", m.NATS)
	}
	if m.StoredErr != nil || int(m.Stored.Msgs) < jobs || m.Stored.Last.IsZero() {
		t.Errorf("results stream read from /jsz: %+v, %v", m.Stored, m.StoredErr)
	}
	// The case's and the run's pages were read once the run was final; a command case has no
	// trajectory to read.
	if len(m.Pages) != 5 {
		t.Errorf("%d pages timed, want 5", len(m.Pages))
	}
	for _, p := range m.Pages {
		if p.Err != nil && !(kind == "command" && strings.Contains(p.Name, "trajectory")) {
			t.Errorf("%s: %v", p.Name, p.Err)
		}
	}
	md, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Fleet simulator: 300 jobs, 3 workers × 4 slots", "| coordinator peak RSS |", "| last result stored → run final |", "/jsz last_ts"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("--out lacks %q:\n%s", want, md)
		}
	}
	if !strings.Contains(stdout.String(), "fleet simulator: 3 workers × 4 slots ran") {
		t.Errorf("no simulator summary:\n%s", stdout.String())
	}
}
