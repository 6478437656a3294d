package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/testutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
	"github.com/skillfleet/skillfleet/suite/suitetest"
)

// The fleet shared between teams (issue 30), on what a deployment runs: a nats-server process
// with deploy/nats/permissions.conf, the built coordinator with a token per team, and the
// fleet simulator (skillfleet-bench fleet) as its own process, logged in as the worker's user
// and running the worker's own code with a simulated executor. Suites of generated command
// cases go through the API. Nothing here asserts a time: what a team waited is counted in
// the other team's jobs that started meanwhile, from the results' timings.
//
// SKILLFLEET_E2E_FAIRSHARE_COORDINATOR names a coordinator binary these tests run instead of
// the one built from the tree. It is there for one purpose: to watch them fail on a
// coordinator from before the fair share (commit 71099e9). Such a binary lacks --teams-file
// and --max-result-bytes-per-team (found from its --help): it is started without them, and
// its answer to GET /v1/usage (404) fails the check that reads it.
const fairShareCoordinatorEnv = "SKILLFLEET_E2E_FAIRSHARE_COORDINATOR"

// The tokens of the shared fleet: a member of each of five teams.
const (
	tokShareA = "fairshare-e2e-teamA-member-00001"
	tokShareB = "fairshare-e2e-teamB-member-00002"
	tokShareC = "fairshare-e2e-teamC-member-00003"
	tokShareD = "fairshare-e2e-teamD-member-00004"
	tokShareE = "fairshare-e2e-teamE-member-00005"
)

// shareTokens is the shared fleet's --token-file.
const shareTokens = "# one member of each team\n" +
	"ann " + tokShareA + " team=teamA\n" +
	"ben " + tokShareB + " team=teamB\n" +
	"cat " + tokShareC + " team=teamC\n" +
	"dan " + tokShareD + " team=teamD\n" +
	"eve " + tokShareE + " team=teamE\n"

// shareFleet is a permissioned nats-server, a coordinator and the fleet simulator, each its
// own process.
type shareFleet struct {
	api              string
	nats             *permsNATS
	coordinator, sim *proc
	// slots is every simulated worker's slots together.
	slots int
	// bounds says the coordinator has teams files and byte bounds per team (false: one from
	// before them, named by fairShareCoordinatorEnv).
	bounds bool
}

// shareOptions are what a test chooses of its shared fleet.
type shareOptions struct {
	// teams is the coordinator's --teams-file ("": none).
	teams string
	// coordinatorArgs are flags every coordinator has; boundArgs those of a coordinator with
	// byte bounds per team only.
	coordinatorArgs, boundArgs []string
	// The simulator: workers × slots, each job taking jobTime and printing outputBytes.
	workers, slots int
	jobTime        time.Duration
	outputBytes    int
	// workersLater leaves the simulator to the test: startWorkers starts it.
	workersLater bool
}

// startShareFleet starts the three processes (the simulator later with o.workersLater) and
// waits until the coordinator is ready and every simulated worker is connected.
func startShareFleet(t *testing.T, o shareOptions) *shareFleet {
	t.Helper()
	dir := t.TempDir()
	bin, bounds := fairShareCoordinator(t)
	pn := startPermsNATS(t)
	addr := testutil.FreeAddr(t)
	f := &shareFleet{api: "http://" + addr, nats: pn, slots: o.workers * o.slots, bounds: bounds}
	args := append([]string{"--http", addr, "--token-file", writeFile(t, dir, "tokens", shareTokens),
		"--data", filepath.Join(dir, "coordinator")}, pn.coordinatorFlags()...)
	args = append(args, o.coordinatorArgs...)
	switch {
	case bounds:
		if o.teams != "" {
			args = append(args, "--teams-file", writeFile(t, dir, "teams", o.teams))
		}
		args = append(args, o.boundArgs...)
	case o.teams != "" || len(o.boundArgs) > 0:
		t.Logf("the coordinator has no teams file or byte bounds per team: started without --teams-file %q %v", o.teams, o.boundArgs)
	}
	f.coordinator = start(t, "coordinator", bin, coordinatorEnv, args...)
	waitHTTP(t, f.coordinator, f.api+"/readyz")
	if !o.workersLater {
		f.startWorkers(t, o)
	}
	return f
}

// startWorkers starts the fleet simulator of o and waits until every simulated worker is
// connected.
func (f *shareFleet) startWorkers(t *testing.T, o shareOptions) {
	t.Helper()
	metrics := testutil.FreeAddr(t)
	f.sim = start(t, "skillfleet-bench fleet", binary(t, "skillfleet-bench"), workerEnv, append([]string{"fleet",
		"--workers", strconv.Itoa(o.workers), "--slots", strconv.Itoa(o.slots), "--id-prefix", "fairshare-",
		"--job-time", o.jobTime.String(), "--output-bytes", strconv.Itoa(o.outputBytes),
		"--metrics", metrics, "--drain-grace", "5s", "--log-level", "warn"}, f.nats.workerFlags()...)...)
	waitHTTP(t, f.sim, "http://"+metrics+"/healthz")
}

// fairShareCoordinator is the coordinator binary under test, and whether it has byte bounds
// per team.
func fairShareCoordinator(t *testing.T) (bin string, bounds bool) {
	t.Helper()
	bin = os.Getenv(fairShareCoordinatorEnv)
	if bin == "" {
		return binary(t, "coordinator"), true
	}
	help, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("$%s=%s --help: %v\n%s", fairShareCoordinatorEnv, bin, err, help)
	}
	bounds = strings.Contains(string(help), "--teams-file")
	t.Logf("coordinator from $%s: %s (teams file and byte bounds: %v)", fairShareCoordinatorEnv, bin, bounds)
	return bin, bounds
}

// client is the API as the holder of tok.
func (f *shareFleet) client(tok string) *coordinator.Client {
	return coordinator.NewClient(f.api, tok, nil)
}

// commandSuite bundles skills × cases generated command cases of one epoch each (the command
// `true`, expecting exit code 0): one job per case.
func commandSuite(t *testing.T, skills, cases int) []byte {
	t.Helper()
	root := t.TempDir()
	if err := suitetest.GenerateCommands(root, skills, cases, "true"); err != nil {
		t.Fatal(err)
	}
	return bundleDir(t, root)
}

// bundleDir bundles the suite under root as skillfleet submit does.
func bundleDir(t *testing.T, root string) []byte {
	t.Helper()
	s := suite.Load([]string{root}, skill.Options{})
	if s.Diagnostics.HasErrors() {
		t.Fatalf("suite %s: %v", root, s.Diagnostics)
	}
	var b bytes.Buffer
	if _, err := suite.WriteBundle(&b, s.Graph, s.Catalog.Skills()); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// submit submits bundle as a run named name.
func submit(ctx context.Context, c *coordinator.Client, name string, bundle []byte) (*pb.RunStatus, error) {
	return c.Submit(ctx, bytes.NewReader(bundle), coordinator.SubmitOptions{Name: name})
}

// ended reports whether a run in state s has ended.
func ended(s pb.RunState) bool {
	switch s {
	case pb.RunState_RUN_STATE_UNSPECIFIED, pb.RunState_RUN_STATE_PENDING, pb.RunState_RUN_STATE_RUNNING:
		return false
	}
	return true
}

// waitEnded waits, within a bound, until run id has ended, and returns its status.
func waitEnded(t *testing.T, ctx context.Context, c *coordinator.Client, id string, within time.Duration) *pb.RunStatus {
	t.Helper()
	var st *pb.RunStatus
	testutil.Eventually(t, within, 100*time.Millisecond, func() bool {
		var err error
		if st, err = c.Status(ctx, id); err != nil {
			t.Fatalf("status of run %s: %v", id, err)
		}
		return ended(st.GetState())
	}, "run %s to end (%v)", id, lazy(func() string {
		// What the team holds of the lanes says whether it is still fed.
		usage := "no usage"
		if u, err := c.Usage(ctx); err == nil {
			b, _ := json.Marshal(u)
			usage = "usage " + string(b)
		}
		return fmt.Sprintf("it reads %v, %d of %d jobs done; %s", st.GetState(), st.GetDoneJobs(), st.GetTotalJobs(), usage)
	}))
	return st
}

// lazy is a failure message's part that is written when the message is.
type lazy func() string

func (l lazy) String() string { return l() }

// span is when a job ran on its worker: from the worker's receipt of it (its result's
// finished_at less its total_ms) to its result.
type span struct{ start, end time.Time }

// within is how much of s lies between from and to.
func (s span) within(from, to time.Time) time.Duration {
	start, end := s.start, s.end
	if start.Before(from) {
		start = from
	}
	if end.After(to) {
		end = to
	}
	return max(end.Sub(start), 0)
}

// spans reads the run's counted results through the API and returns when each job that a
// worker ran started and ended (a result no worker stamped, such as a cancelled run's
// skipped job, has none).
func spans(t *testing.T, ctx context.Context, c *coordinator.Client, id string) []span {
	t.Helper()
	var out []span
	if err := c.Results(ctx, id, func(r *pb.Result) error {
		if r.GetWorkerId() == "" || r.GetFinishedAt() == nil || r.GetTimings() == nil {
			return nil
		}
		end := r.GetFinishedAt().AsTime()
		out = append(out, span{start: end.Add(-time.Duration(r.GetTimings().GetTotalMs()) * time.Millisecond), end: end})
		return nil
	}); err != nil {
		t.Fatalf("results of run %s: %v", id, err)
	}
	return out
}

// TestFairShare: a team's job submitted behind another team's 600 queued jobs starts after
// at most two rounds of the workers (issue 30's second finding: it waited 313 s behind all
// of them, in one FIFO per lane), and three teams of weights 1:1:2 submitting at once hold the
// workers' slots 1:1:2 within 10% while all three have jobs waiting. Both are read from the
// results' timings: the first as how many of the other team's jobs started between the
// submission and the job's start, the second as the slot-seconds each team's jobs held in
// that window (the jobs each started there are logged beside them).
func TestFairShare(t *testing.T) {
	const jobTime = 300 * time.Millisecond
	f := startShareFleet(t, shareOptions{
		teams:   "teamA weight=1\nteamB weight=1\nteamC weight=1\nteamD weight=1\nteamE weight=2\n",
		workers: 2, slots: 4, jobTime: jobTime, outputBytes: 256,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	t.Run("a job behind another team's 600", func(t *testing.T) {
		a, b := f.client(tokShareA), f.client(tokShareB)
		big, err := submit(ctx, b, "teamB-nightly", commandSuite(t, 20, 30))
		if err != nil {
			t.Fatalf("teamB's 600-job run: %v", err)
		}
		// The rest of teamB's run is not needed once teamA's job has run; nor, if the test
		// stops early, by the next part.
		stopB := func() {
			if _, err := b.Cancel(ctx, big.GetId()); err != nil {
				t.Errorf("cancel teamB's run: %v", err)
			}
			waitEnded(t, ctx, b, big.GetId(), time.Minute)
		}
		stopped := false
		defer func() {
			if !stopped {
				stopB()
			}
		}()
		// teamB's jobs are queued and a round of the workers has run them.
		testutil.Eventually(t, time.Minute, 50*time.Millisecond, func() bool {
			st, err := b.Status(ctx, big.GetId())
			if err != nil {
				t.Fatalf("status of teamB's run: %v", err)
			}
			return int(st.GetDoneJobs()) >= f.slots
		}, "teamB's run to get going")

		submitted := time.Now()
		one, err := submit(ctx, a, "teamA-one", commandSuite(t, 1, 1))
		if err != nil {
			t.Fatalf("teamA's one-job run: %v", err)
		}
		st := waitEnded(t, ctx, a, one.GetId(), 2*time.Minute)
		if st.GetState() != pb.RunState_RUN_STATE_COMPLETED || st.GetDoneJobs() != 1 {
			t.Errorf("teamA's run ended %v with %d of %d jobs done, want completed with 1 (%s)", st.GetState(), st.GetDoneJobs(), st.GetTotalJobs(), st.GetReason())
		}
		ran := spans(t, ctx, a, one.GetId())
		if len(ran) != 1 {
			t.Fatalf("teamA's run has %d results a worker ran, want 1", len(ran))
		}
		aStart := ran[0].start
		stopB()
		stopped = true
		between := 0
		for _, s := range spans(t, ctx, b, big.GetId()) {
			if s.start.After(submitted) && s.start.Before(aStart) {
				between++
			}
		}
		t.Logf("teamA's job started %d ms after its submission; %d of teamB's jobs started in between (%d slots, jobs of %s)",
			aStart.Sub(submitted).Milliseconds(), between, f.slots, jobTime)
		if between > 2*f.slots {
			t.Errorf("%d of teamB's jobs started between teamA's submission and its one job's start, want at most %d (two rounds of %d slots)",
				between, 2*f.slots, f.slots)
		}
	})

	t.Run("weights 1:1:2", func(t *testing.T) {
		teams := []struct {
			name, tok string
			weight    int
			skills    int
		}{
			// Jobs in proportion to the weights, so that the three stay backlogged together.
			{"teamC", tokShareC, 1, 10},
			{"teamD", tokShareD, 1, 10},
			{"teamE", tokShareE, 2, 20},
		}
		bundles := make([][]byte, len(teams))
		for i, tm := range teams {
			bundles[i] = commandSuite(t, tm.skills, 10)
		}
		runs := make([]*pb.RunStatus, len(teams))
		errs := make([]error, len(teams))
		var wg sync.WaitGroup
		for i, tm := range teams {
			wg.Go(func() {
				runs[i], errs[i] = submit(ctx, f.client(tm.tok), tm.name+"-nightly", bundles[i])
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("submissions: %v", err)
		}
		ran := make([][]span, len(teams))
		for i, tm := range teams {
			c := f.client(tm.tok)
			st := waitEnded(t, ctx, c, runs[i].GetId(), 3*time.Minute)
			if st.GetState() != pb.RunState_RUN_STATE_COMPLETED || st.GetDoneJobs() != st.GetTotalJobs() {
				t.Errorf("%s's run ended %v with %d of %d jobs done (%s)", tm.name, st.GetState(), st.GetDoneJobs(), st.GetTotalJobs(), st.GetReason())
			}
			ran[i] = spans(t, ctx, c, runs[i].GetId())
		}
		// The window: from the moment all three are running (the last of them starts its
		// first job: the room the first one admitted took before the others came is behind
		// by then) until the first of them starts its last job (it then has none waiting).
		var from, to time.Time
		var late, early string
		for i, tm := range teams {
			if len(ran[i]) == 0 {
				t.Fatalf("%s's run has no results a worker ran", tm.name)
			}
			byStart := func(a, b span) int { return a.start.Compare(b.start) }
			first, last := slices.MinFunc(ran[i], byStart).start, slices.MaxFunc(ran[i], byStart).start
			if i == 0 || first.After(from) {
				from, late = first, tm.name
			}
			if i == 0 || last.Before(to) {
				to, early = last, tm.name
			}
		}
		if !to.After(from) {
			t.Fatalf("the three teams never ran together: %s started its first job %d ms after %s had started its last",
				late, from.Sub(to).Milliseconds(), early)
		}
		held := make([]float64, len(teams))
		started := make([]int, len(teams))
		var total float64
		weights := 0
		for i, tm := range teams {
			weights += tm.weight
			for _, s := range ran[i] {
				held[i] += s.within(from, to).Seconds()
				if !s.start.Before(from) && !s.start.After(to) {
					started[i]++
				}
			}
			total += held[i]
		}
		var got []string
		for i, tm := range teams {
			got = append(got, fmt.Sprintf("%s (weight %d) %.1f slot-s, %.3f, %d jobs started", tm.name, tm.weight, held[i], held[i]/total, started[i]))
		}
		t.Logf("over the %.1f s all three had jobs waiting (%d slots): %s", to.Sub(from).Seconds(), f.slots, strings.Join(got, "; "))
		for i, tm := range teams {
			want := float64(tm.weight) / float64(weights)
			if share := held[i] / total; share < 0.9*want || share > 1.1*want {
				t.Errorf("%s (weight %d) held %.3f of the slot-seconds while all three had jobs waiting, want %.3f ±10%%", tm.name, tm.weight, share, want)
			}
		}
	})
}

// TestFairShareFlood: a team whose run floods the results stream stops only itself (issue
// 30's first finding: teamB's ordinary 600-job run with large outputs filled the stream and
// teamA got 507 on every new run for up to the results' max age). Over its byte bound, teamB
// is refused with 429 naming the bound, GET /v1/usage says so, teamA's run is admitted and
// completes with every job counted, and teamB's run ends, stopped with the reason.
func TestFairShareFlood(t *testing.T) {
	const (
		// Each result carries outputBytes of stdout: teamB's 600 are about 20 MiB, more than
		// the stream holds, and its bound holds about 48.
		streamMax   = 12 << 20
		teamBound   = "1536KiB"
		outputBytes = 32 << 10
	)
	f := startShareFleet(t, shareOptions{
		coordinatorArgs: []string{"--results-max-bytes", strconv.Itoa(streamMax)},
		boundArgs:       []string{"--max-result-bytes-per-team", teamBound},
		// Jobs long enough that teamB, once over, still holds jobs for a few polls of its
		// usage before they end and its run is stopped.
		workers: 2, slots: 4, jobTime: 200 * time.Millisecond, outputBytes: outputBytes,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	a, b := f.client(tokShareA), f.client(tokShareB)

	flood, err := submit(ctx, b, "teamB-nightly", commandSuite(t, 20, 30))
	if err != nil {
		t.Fatalf("teamB's 600-job run: %v", err)
	}
	// Until teamB's run stops making progress (over its bound; or the stream is full; three
	// seconds without a result, once results have begun, say so) or ends: as soon as its team
	// reads over its bound, teamB submits again. Before the first result the wait is the
	// workers' start on the bundle, which a loaded machine stretches past three seconds.
	var (
		sawOver, again    bool
		usageErr, refusal error
		lastDone          int32 = -1
		lastProgress            = time.Now()
	)
	testutil.Eventually(t, 2*time.Minute, 50*time.Millisecond, func() bool {
		if !again {
			u, err := b.Usage(ctx)
			usageErr = err
			if err == nil && len(u.Teams) == 1 && u.Teams[0].Team == "teamB" && strings.Contains(u.Teams[0].Over, "max_result_bytes") {
				sawOver = true
				t.Logf("GET /v1/usage as teamB: %s", u.Teams[0].Over)
				_, refusal = submit(ctx, b, "teamB-again", commandSuite(t, 1, 1))
				again = true
			}
		}
		st, err := b.Status(ctx, flood.GetId())
		if err != nil {
			t.Fatalf("status of teamB's run: %v", err)
		}
		if st.GetDoneJobs() != lastDone {
			lastDone, lastProgress = st.GetDoneJobs(), time.Now()
		}
		return ended(st.GetState()) || (lastDone > 0 && time.Since(lastProgress) > 3*time.Second)
	}, "teamB's run to stop making progress or end")
	if !sawOver {
		t.Errorf("GET /v1/usage as teamB never said it was over max_result_bytes while its run held %d results (last answer: %v)", lastDone, usageErr)
	}
	if !again {
		_, refusal = submit(ctx, b, "teamB-again", commandSuite(t, 1, 1))
	}
	var ae *coordinator.APIError
	switch {
	case refusal == nil:
		t.Errorf("teamB's further run was admitted once its run's results had passed its bound, want 429 naming max_result_bytes")
	case !errors.As(refusal, &ae) || ae.Status != http.StatusTooManyRequests || !strings.Contains(ae.Message, "max_result_bytes"):
		t.Errorf("teamB's further run: %v, want 429 naming max_result_bytes", refusal)
	default:
		t.Logf("teamB's further run refused: %v", refusal)
	}
	if used, _, err := f.nats.streamState(ctx, queue.ResultsStream); err == nil {
		t.Logf("teamB's run stopped making progress at %d results; the results stream holds %d of %d bytes", lastDone, used, streamMax)
	}

	// teamA's run is admitted and completes with every job counted.
	one, err := submit(ctx, a, "teamA-nightly", commandSuite(t, 2, 5))
	if err != nil {
		t.Errorf("teamA's run after teamB's flood: %v, want it admitted", err)
	} else {
		st := waitEnded(t, ctx, a, one.GetId(), 2*time.Minute)
		if st.GetState() != pb.RunState_RUN_STATE_COMPLETED || st.GetDoneJobs() != 10 || st.GetTotalJobs() != 10 {
			t.Errorf("teamA's run ended %v with %d of %d jobs done, want completed with 10 (%s)", st.GetState(), st.GetDoneJobs(), st.GetTotalJobs(), st.GetReason())
		}
		counted := map[string]int{}
		if err := a.Results(ctx, one.GetId(), func(r *pb.Result) error { counted[r.GetJobId()]++; return nil }); err != nil {
			t.Fatal(err)
		}
		for job, n := range counted {
			if n != 1 {
				t.Errorf("teamA's job %s has %d counted results", job, n)
			}
		}
		if len(counted) != 10 || st.GetCases().GetPassed() != 10 {
			t.Errorf("teamA's run: %d jobs with a counted result and %d cases passed, want 10 of each", len(counted), st.GetCases().GetPassed())
		}
	}

	// teamB's run ends: stopped with the reason, or finished.
	st := waitEnded(t, ctx, b, flood.GetId(), time.Minute)
	switch st.GetState() {
	case pb.RunState_RUN_STATE_COMPLETED:
	case pb.RunState_RUN_STATE_CANCELLED:
		if !strings.Contains(st.GetReason(), "max_result_bytes") {
			t.Errorf("teamB's run was cancelled without naming its bound: %q", st.GetReason())
		}
	default:
		t.Errorf("teamB's run ended %v (%s), want stopped for its bound or completed", st.GetState(), st.GetReason())
	}
	t.Logf("teamB's run ended %v with %d of %d jobs done: %s", st.GetState(), st.GetDoneJobs(), st.GetTotalJobs(), st.GetReason())
	// Nothing is left waiting: every run of both teams has ended, and teamB is under its
	// bound again.
	for _, c := range []*coordinator.Client{a, b} {
		list, err := c.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range list {
			waitEnded(t, ctx, c, r.GetId(), time.Minute)
		}
	}
	if f.bounds {
		testutil.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
			u, err := b.Usage(ctx)
			return err == nil && len(u.Teams) == 1 && u.Teams[0].Over == ""
		}, "teamB to be under its bound once its run stopped")
	}
	// The workers' bundle reads, under the worker's permissions, deleted their consumers as
	// they ended rather than leaving one per read for nats.go's 5 idle minutes.
	if _, n, err := f.nats.streamState(ctx, "OBJ_"+queue.BundlesBucket); err != nil || n != 0 {
		t.Errorf("the bundles' stream has %d consumers (%v) once every run has ended, want 0", n, err)
	}
}

// streamState reads how many bytes and consumers the named stream has from the server's
// monitoring port.
func (pn *permsNATS) streamState(ctx context.Context, stream string) (bytes uint64, consumers int, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, pn.monitor+"/jsz?accounts=true&streams=true", nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	var jsz struct {
		Accounts []struct {
			Streams []struct {
				Name  string `json:"name"`
				State struct {
					Bytes     uint64 `json:"bytes"`
					Consumers int    `json:"consumer_count"`
				} `json:"state"`
			} `json:"stream_detail"`
		} `json:"account_details"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&jsz); err != nil {
		return 0, 0, err
	}
	for _, a := range jsz.Accounts {
		for _, s := range a.Streams {
			if s.Name == stream {
				return s.State.Bytes, s.State.Consumers, nil
			}
		}
	}
	return 0, 0, fmt.Errorf("no stream %s in /jsz", stream)
}
