package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/testutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
	"github.com/skillfleet/skillfleet/suite"
)

// TestLeastPrivilegeNATS runs a fleet whose daemons log in as the users of
// deploy/nats/permissions.conf, and checks that the worker's user is refused what a worker
// must never do.
func TestLeastPrivilegeNATS(t *testing.T) {
	dir := t.TempDir()
	ns := startPermsNATS(t)

	apiToken := "perms-api-token-0123456789"
	tokenFile := writeFile(t, dir, "api-token", apiToken+"\n")
	httpAddr := testutil.FreeAddr(t)
	api := "http://" + httpAddr
	coord := start(t, "coordinator", binary(t, "coordinator"), coordinatorEnv, append([]string{
		"--http", httpAddr, "--token-file", tokenFile, "--data", filepath.Join(dir, "coordinator")}, ns.coordinatorFlags()...)...)
	waitHTTP(t, coord, api+"/readyz")
	metrics := testutil.FreeAddr(t)
	w := start(t, "worker", binary(t, "worker"), workerEnv, append([]string{
		"--id", fmt.Sprintf("perms-%d", os.Getpid()), "--slots", "2", "--warm-pool", "1", "--metrics", metrics,
		"--cache", filepath.Join(dir, "bundles")}, ns.workerFlags()...)...)
	waitHTTP(t, w, "http://"+metrics+"/healthz")

	code, out, errOut := runCLI(t, 5*time.Minute, "submit", "--coordinator", api, "--token", apiToken,
		"--follow", "--skill", "env-selector", "--case", "selects-dev", "--case", "config-*", examples)
	if code != 0 || !strings.Contains(out, "3 cases: 3 passed") {
		t.Fatalf("submit exit %d, want 0 with 3 passed\nstdout:\n%s\nstderr:\n%s\nnats-server:\n%s", code, out, errOut, ns.proc.out.String())
	}
	// A large bundle: many chunks, read through the worker's ordered consumer.
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
	worker := ns.worker
	refused := []struct{ what, subject string }{
		{"publish a job", "skillfleet.jobs.ondemand.r20260101t000000-00000000"},
		{"write run state", "$KV.skillfleet_runs.r20260101t000000-00000000"},
		{"store a bundle chunk", "$O.skillfleet_bundles.C.forged"},
		{"delete the jobs stream", "$JS.API.STREAM.DELETE.SKILLFLEET_JOBS"},
		{"purge the results", "$JS.API.STREAM.PURGE.SKILLFLEET_RESULTS"},
		{"change a lane consumer", "$JS.API.CONSUMER.CREATE.SKILLFLEET_JOBS.workers-ondemand"},
		{"read another stream", "$JS.API.STREAM.MSG.GET.KV_skillfleet_runs"},
		// The rate budgets: booked and deferred, never purged or removed.
		{"purge the rate budgets", "$JS.API.STREAM.PURGE.KV_skillfleet_rates"},
		{"delete the rate budgets", "$JS.API.STREAM.DELETE.KV_skillfleet_rates"},
		// Listing run ids: a stream's info with a subjects_filter names every subject, and the
		// jobs, results and run-state streams all have the run id in theirs.
		{"list run ids from the run state", "$JS.API.STREAM.INFO.KV_skillfleet_runs"},
		{"list run ids from the queue", "$JS.API.STREAM.INFO.SKILLFLEET_JOBS"},
		{"list run ids from the results", "$JS.API.STREAM.INFO.SKILLFLEET_RESULTS"},
		{"list bundles from the object store's subjects", "$JS.API.STREAM.INFO.OBJ_skillfleet_bundles"},
		{"read run state (and its job key)", "$JS.API.DIRECT.GET.KV_skillfleet_runs.$KV.skillfleet_runs.r20260101t000000-00000000"},
		// Listing bundles: a consumer on the metadata subjects, or direct gets by sequence.
		{"list bundles through a consumer", "$JS.API.CONSUMER.CREATE.OBJ_skillfleet_bundles.lister.$O.skillfleet_bundles.M.>"},
		{"list bundles through an unfiltered consumer", "$JS.API.CONSUMER.CREATE.OBJ_skillfleet_bundles.lister"},
		{"list bundles through an ephemeral consumer", "$JS.API.CONSUMER.CREATE.OBJ_skillfleet_bundles"},
		{"walk the bundle store by sequence", "$JS.API.DIRECT.GET.OBJ_skillfleet_bundles"},
		{"read other jobs' artifacts", "$JS.API.DIRECT.GET.SKILLFLEET_ARTIFACTS"},
		{"list artifacts", "$JS.API.STREAM.INFO.SKILLFLEET_ARTIFACTS"},
		{"stop another run's running jobs", "skillfleet.cancel.r20260101t000000-00000000"},
		{"withdraw another run's jobs", "skillfleet.withdraw.r20260101t000000-00000000"},
	}
	var missing, seen []string
	for _, r := range refused {
		err := queuetest.PublishAs(t, worker, r.subject, []byte("{}"))
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("Permissions Violation for Publish to %q", r.subject)) {
			missing = append(missing, r.what)
		}
		seen = append(seen, fmt.Sprintf("publish to %s: %v", r.subject, err))
	}
	refusedSubs := []struct{ what, subject string }{
		{"read every result", "skillfleet.results.>"},
		{"read every artifact", "skillfleet.artifacts.>"},
		{"read the coordinator's replies (run state, results)", "_INBOX_skillfleet_coordinator.>"},
		{"read replies on the default prefix", "_INBOX.>"},
	}
	for _, r := range refusedSubs {
		err := queuetest.SubscribeAs(t, worker, r.subject)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("Permissions Violation for Subscription to %q", r.subject)) {
			missing = append(missing, r.what)
		}
		seen = append(seen, fmt.Sprintf("subscribe to %s: %v", r.subject, err))
	}
	if len(missing) > 0 {
		t.Fatalf("the worker's user was not refused: %s\nwhat the server said:\n%s", strings.Join(missing, ", "), strings.Join(seen, "\n"))
	}

	forgeVerdict(t, worker, api, apiToken)
}

// forgeVerdict submits a case that fails (exit 1, after a pause that lets the forgery arrive
// first), and publishes a PASSED result for it with the worker's credentials, as someone who
// stole them and learnt the run id would: job ids are predictable, the job's secret is not.
// The case must still end failed.
func forgeVerdict(t *testing.T, worker queue.ConnectConfig, api, apiToken string) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "forge-target", "tests", "cases"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "forge-target"), "SKILL.md", "---\nname: forge-target\ndescription: A skill whose one case fails. Use when testing forged verdicts.\n---\n\n# Forge target\n")
	writeFile(t, filepath.Join(root, "forge-target", "tests", "cases"), "fails.yaml",
		"name: fails\ninput:\n  command: \"sleep 4; exit 1\"\nexpected:\n  exit-code: 0\n")
	bundle := bytes.NewReader(bundleDir(t, root))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client := coordinator.NewClient(api, apiToken, nil)
	st, err := client.Submit(ctx, bundle, coordinator.SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	run := st.GetId()
	jobID := suite.JobID("forge-target", "fails", suite.KindCommand, 1, "")
	for attempt, secret := range [][]byte{nil, bytes.Repeat([]byte{7}, 32)} {
		data, err := proto.Marshal(&pb.Result{
			JobId: jobID, RunId: run, Skill: "forge-target", CaseName: "fails", Epoch: 1,
			Kind: pb.CaseKind_CASE_KIND_COMMAND, Verdict: pb.Verdict_VERDICT_PASSED, Attempt: int32(attempt + 1),
			Secret: secret, Assertions: []*pb.AssertionResult{{Type: "exit-code", Passed: true, Expected: "0", Actual: "0"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := queuetest.StoreAs(t, worker, queue.ResultSubject(run), data); err != nil {
			t.Fatalf("publishing a result with the worker's credentials: %v", err)
		}
	}
	for {
		st, err = client.Status(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		if st.GetFinishedAt() != nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("run %s did not finish: %v", run, st)
		case <-time.After(200 * time.Millisecond):
		}
	}
	var junit bytes.Buffer
	if err := client.Report(ctx, run, "junit", &junit); err != nil {
		t.Fatal(err)
	}
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(junit.Bytes(), &suites); err != nil {
		t.Fatalf("JUnit: %v\n%s", err, junit.String())
	}
	if st.GetCases().GetFailed() != 1 || suites.Tests != 1 || suites.Failures != 1 {
		t.Fatalf("a forged PASSED result counted: cases %v, JUnit %d tests, %d failures\n%s", st.GetCases(), suites.Tests, suites.Failures, junit.String())
	}
}

// The passwords of the users of deploy/nats/permissions.conf in the tests' nats-servers.
const natsCoordinatorPassword, natsWorkerPassword = "coordinator-e2e-password", "worker-e2e-password"

// permsNATS is a nats-server process with JetStream and the users and permissions of
// deploy/nats/permissions.conf, as a deployment runs it, with the logins of its two roles.
type permsNATS struct {
	// url is its client address, monitor its monitoring URL (/jsz, /varz).
	url, monitor        string
	proc                *proc
	coordinator, worker queue.ConnectConfig
}

// startPermsNATS starts a permissioned nats-server and returns once the coordinator's user
// gets JetStream answers.
func startPermsNATS(t *testing.T) *permsNATS {
	t.Helper()
	dir := t.TempDir()
	perms, err := os.ReadFile("../deploy/nats/permissions.conf")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "permissions.conf", string(perms))
	addr, monitor := testutil.FreeAddr(t), testutil.FreeAddr(t)
	conf := writeFile(t, dir, "nats.conf", fmt.Sprintf("listen: %q\nhttp: %q\nserver_name: perms\njetstream { store_dir: %q }\ninclude ./permissions.conf\n",
		addr, monitor, filepath.Join(dir, "js")))
	ns := &permsNATS{url: "nats://" + addr, monitor: "http://" + monitor}
	ns.coordinator = queue.ConnectConfig{URL: ns.url, User: "skillfleet-coordinator", Password: natsCoordinatorPassword, InboxPrefix: "_INBOX_skillfleet_coordinator"}
	ns.worker = queue.ConnectConfig{URL: ns.url, User: "skillfleet-worker", Password: natsWorkerPassword, InboxPrefix: "_INBOX_skillfleet_worker"}
	ns.proc = start(t, "nats-server", binary(t, "nats-server"), []string{
		"SKILLFLEET_COORDINATOR_PASSWORD=" + natsCoordinatorPassword, "SKILLFLEET_WORKER_PASSWORD=" + natsWorkerPassword,
	}, "-c", conf)
	waitJetStream(t, ns.coordinator, 30*time.Second, ns.proc)
	return ns
}

// coordinatorFlags are the NATS flags of a daemon logged in as the coordinator's user, and
// workerFlags as the worker's; each takes its password from the environment coordinatorEnv
// or workerEnv gives it.
func (ns *permsNATS) coordinatorFlags() []string {
	return []string{"--nats", ns.url, "--nats-user", ns.coordinator.User, "--nats-inbox-prefix", ns.coordinator.InboxPrefix}
}

func (ns *permsNATS) workerFlags() []string {
	return []string{"--nats", ns.url, "--nats-user", ns.worker.User, "--nats-inbox-prefix", ns.worker.InboxPrefix}
}

var (
	coordinatorEnv = []string{"SKILLFLEET_NATS_PASSWORD=" + natsCoordinatorPassword}
	workerEnv      = []string{"SKILLFLEET_NATS_PASSWORD=" + natsWorkerPassword}
)
