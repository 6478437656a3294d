package fleet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"google.golang.org/protobuf/proto"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/report"
	"github.com/skillfleet/skillfleet/sandbox"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
	"github.com/skillfleet/skillfleet/worker"
)

// The hostile suite and what its cases expect of the test that runs them.
const (
	hostileSuite = "../examples/hostile"
	// hostileSentinel is the value of SKILLFLEET_HOSTILE_SENTINEL, set in this process: the
	// hostile-secrets cases assert that neither the name nor the value reaches a sandbox.
	hostileSentinel = "sentinel-9f2c4e1a-do-not-leak"
	// hostileMarker is the file hostile-filesystem/write-outside plants wherever it can.
	hostileMarker = "skillfleet-hostile-marker"
	// hostilePort is where this test listens on the host; hostile-network tries to reach it.
	hostilePort = 47613
)

// hostileWant is the verdict containment must produce for one case, and a substring of the
// report's reason where the reason is the evidence.
type hostileWant struct {
	status string
	reason string
}

// hostileVerdicts is every case of the first run (skills hostile-* and neighbour), keyed
// skill/case. The case files' descriptions say why each verdict is the right one.
var hostileVerdicts = map[string]hostileWant{
	// Resources: the limits hold; a hang is killed by the wall clock.
	"hostile-resources/fork-bomb":          {report.StatusPassed, ""},
	"hostile-resources/fork-bomb-forever":  {report.StatusTimedOut, "timed out after 4s: the sandbox was killed"},
	"hostile-resources/memory-bomb":        {report.StatusPassed, ""}, // exit 137; the OOM is checked on the metrics below
	"hostile-resources/disk-fill-work":     {report.StatusPassed, ""},
	"hostile-resources/disk-fill-tmp":      {report.StatusPassed, ""},
	"hostile-resources/pid-storm":          {report.StatusPassed, ""},
	"hostile-resources/fd-exhaustion":      {report.StatusPassed, ""},
	"hostile-resources/sleep-past-timeout": {report.StatusTimedOut, "timed out after 3s: the sandbox was killed"},
	// Output beyond the capture cap cannot prove absence: the not-contains is errored, never
	// passed. (The stored result is trimmed to fit a NATS message; the assertions saw it all.)
	"hostile-resources/output-flood": {report.StatusErrored, "truncated, so the part cut off was not checked"},
	// Network: the none network leaves a private loopback and nothing else.
	"hostile-network/public-dns-tcp": {report.StatusPassed, ""},
	"hostile-network/public-dns-udp": {report.StatusPassed, ""},
	"hostile-network/host-gateway":   {report.StatusPassed, ""},
	"hostile-network/host-loopback":  {report.StatusPassed, ""},
	"hostile-network/cloud-metadata": {report.StatusPassed, ""},
	"hostile-network/dns-lookup":     {report.StatusPassed, ""},
	"hostile-network/interfaces":     {report.StatusPassed, ""},
	// Secrets: the worker's environment never enters a sandbox.
	"hostile-secrets/worker-env":       {report.StatusPassed, ""},
	"hostile-secrets/init-environ":     {report.StatusPassed, ""},
	"hostile-secrets/credential-files": {report.StatusPassed, ""},
	"hostile-secrets/host-processes":   {report.StatusPassed, ""},
	// The container engine is out of reach.
	"hostile-docker/docker-socket":    {report.StatusPassed, ""},
	"hostile-docker/abstract-sockets": {report.StatusPassed, ""},
	"hostile-docker/docker-tcp":       {report.StatusPassed, ""},
	// Files: read-only mounts and root, no privileges.
	"hostile-filesystem/write-skill":    {report.StatusPassed, ""},
	"hostile-filesystem/delete-skill":   {report.StatusPassed, ""},
	"hostile-filesystem/plant-in-skill": {report.StatusPassed, ""},
	"hostile-filesystem/write-etc":      {report.StatusPassed, ""},
	"hostile-filesystem/write-usr":      {report.StatusPassed, ""},
	"hostile-filesystem/remount":        {report.StatusPassed, ""},
	"hostile-filesystem/become-root":    {report.StatusPassed, ""},
	"hostile-filesystem/privileges":     {report.StatusPassed, ""},
	"hostile-filesystem/write-outside":  {report.StatusPassed, ""},
	// The shared kernel: seccomp refuses user namespaces, /proc/sys is read-only, no core dumps.
	"hostile-kernel/user-namespace": {report.StatusPassed, ""},
	"hostile-kernel/core-pattern":   {report.StatusPassed, ""},
	// Init: SIGKILL from inside is dropped; a sandbox that stops itself is errored, not passed.
	"hostile-init/sigkill-init":    {report.StatusPassed, ""},
	"hostile-init/sigterm-init":    {report.StatusErrored, "the sandbox stopped while the command ran"},
	"hostile-init/kill-everything": {report.StatusErrored, "the sandbox stopped while the command ran"},
	// A normal job on the other worker, at the same time.
	"neighbour/echo-ok": {report.StatusPassed, ""},
}

// TestHostileSuite runs examples/hostile through a real local fleet (embedded NATS, the
// coordinator, two workers of one slot) with the real sandbox executor and hardened Docker
// containers, as `skillfleet test` does. Every case must end with the verdict containment
// should produce; afterwards the same fleet runs normal jobs normally, no container of this
// runner is left, and the host is untouched: the suite's files, the mounted bundle, the
// worker's environment, the host's network and its scratch directories.
func TestHostileSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker test; skipped with -short")
	}
	start := time.Now()
	// Secrets in the worker's environment: none may reach a sandbox.
	t.Setenv("SKILLFLEET_HOSTILE_SENTINEL", hostileSentinel)
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "SKILLFLEET_TOKEN", "NATS_PASSWORD"} {
		t.Setenv(k, k+"-"+hostileSentinel)
	}
	sourceBefore := hashTree(t, hostileSuite)
	markersBefore := hostMarkers()
	connects := listenOnHost(t)

	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)).Named(t.Name())
	ctx := context.Background()
	docker, err := sandbox.NewDockerClient(ctx)
	if err != nil {
		t.Fatalf("this test needs a Docker engine: %v", err)
	}
	t.Cleanup(func() { _ = docker.Close() })
	workerID := fmt.Sprintf("test-hostile-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	sandboxReg := prometheus.NewRegistry()
	runner, err := sandbox.New(sandbox.Config{WorkerID: workerID, WarmPool: 1}, docker, log.Named("sandbox"), sandboxReg)
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.Start(ctx); err != nil {
		var missing *sandbox.ImageMissingError
		if errors.As(err, &missing) {
			t.Fatal(missing.Error())
		}
		t.Fatal(err)
	}
	closeRunner := sync.OnceValue(func() error {
		cctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		return runner.Close(cctx)
	})
	t.Cleanup(func() {
		_ = closeRunner()
		// Whatever happened above, leave nothing behind on the engine.
		for _, c := range sandboxContainers(t, docker, workerID) {
			_, _ = docker.ContainerRemove(context.Background(), c.ID, client.ContainerRemoveOptions{Force: true})
		}
	})

	dataDir := t.TempDir()
	q := queue.DefaultConfig()
	q.MaxDeliver = 3
	fleet, err := StartInProcess(ctx, InProcessConfig{
		DataDir: dataDir, Workers: 2, Slots: 1, Queue: q,
		Executor: worker.NewSandboxExecutor(runner, log.Named("executor")),
		Worker:   worker.Config{RetryDelay: 50 * time.Millisecond, FetchWait: 100 * time.Millisecond, DrainGrace: 30 * time.Second},
		Log:      log,
	})
	if err != nil {
		t.Fatal(err)
	}
	closeFleet := sync.OnceValue(func() error { return fleet.Close(context.Background()) })
	t.Cleanup(func() { _ = closeFleet() })

	bundle := hostileBundle(t)

	// The attack: every hostile case, and a normal neighbour next to them.
	rep := runToEnd(t, fleet, bundle, &pb.RunSpec{Name: "hostile", SkillGlobs: []string{"hostile-*", "neighbour"}})
	got := map[string]report.Case{}
	for _, c := range rep.Cases {
		got[c.Skill+"/"+c.Case] = c
	}
	for _, name := range slices.Sorted(maps.Keys(hostileVerdicts)) {
		want := hostileVerdicts[name]
		c, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s: not in the report", name)
		case c.Status != want.status || !strings.Contains(c.Reason, want.reason):
			t.Errorf("%s: %s (reason %q); want %s with reason containing %q%s", name, c.Status, c.Reason, want.status, want.reason, evidence(c))
		default:
			t.Logf("%-40s %-9s %5d ms %s", name, c.Status, c.DurationMS, c.Reason)
		}
	}
	for name := range got {
		if _, ok := hostileVerdicts[name]; !ok {
			t.Errorf("%s: in the report but has no expected verdict in hostileVerdicts", name)
		}
	}

	// The next jobs run normally on the same fleet: the aftermath checks, with the same bundle,
	// that nothing an attack wrote survives; an example skill shows an ordinary suite passes.
	for _, run := range []struct {
		bundle []byte
		spec   *pb.RunSpec
	}{
		{bundle, &pb.RunSpec{Name: "aftermath", SkillGlobs: []string{"aftermath"}}},
		{exampleBundle(t), &pb.RunSpec{Name: "example", SkillGlobs: []string{"logging-standards"}}},
	} {
		rep := runToEnd(t, fleet, run.bundle, run.spec)
		if rep.Summary.Total == 0 || rep.Summary.Passed != rep.Summary.Total {
			t.Errorf("%s after the hostile run: %+v; want every case passed", run.spec.GetName(), rep.Summary)
			for _, c := range rep.Cases {
				if c.Status != report.StatusPassed {
					t.Errorf("  %s/%s: %s %s%s", c.Skill, c.Case, c.Status, c.Reason, evidence(c))
				}
			}
		}
	}

	// A suite's limits (skillfleet.yaml, carried in the run spec) reach its containers, and a
	// suite asking for more than the worker allows gets the worker's maximum.
	limitsBundle := limitsProbeSuite(t)
	for _, probe := range []struct {
		skill  string
		limits *pb.Limits
	}{
		{"limits-asked", &pb.Limits{MemoryBytes: 96 << 20, Pids: 48}},
		{"limits-clamped", &pb.Limits{MemoryBytes: 64 << 30}},
	} {
		lrep := runToEnd(t, fleet, limitsBundle, &pb.RunSpec{Name: probe.skill, SkillGlobs: []string{probe.skill}, Limits: probe.limits})
		if lrep.Summary.Passed != 1 {
			t.Errorf("%s: %+v %s", probe.skill, lrep.Summary, evidence(lrep.Cases[0]))
		}
	}

	// Every byte any hostile case printed (up to the output cap) is in its results: none of it
	// may be a secret of the worker.
	checkNoSecretInResults(t, fleet, rep.Run)

	// What the sandbox layer saw: the memory bomb was an OOM kill (not a crash), the two
	// init cases stopped their containers, two cases hit the wall clock, and no command failed
	// for an infrastructure reason.
	for outcome, want := range map[string]float64{"oom": 1, "exited": 2, "timed_out": 2, "error": 0} {
		if n := counterWith(t, sandboxReg, "skillfleet_sandbox_execs_total", "outcome", outcome); n != want {
			t.Errorf("sandbox execs with outcome %s: %v, want %v", outcome, n, want)
		}
	}

	// Released means removed: only warm pool containers (no job label) may exist before Close,
	// and nothing at all after it.
	for _, c := range sandboxContainers(t, docker, workerID) {
		if c.Labels[sandbox.LabelJob] != "" {
			t.Errorf("job container %.12s (job %s, %s) left after its job ended", c.ID, c.Labels[sandbox.LabelJob], c.State)
		}
	}
	if err := closeFleet(); err != nil {
		t.Errorf("closing the fleet: %v", err)
	}
	if err := closeRunner(); err != nil {
		t.Errorf("closing the sandbox runner: %v", err)
	}
	if left := sandboxContainers(t, docker, workerID); len(left) > 0 {
		for _, c := range left {
			t.Errorf("container %.12s (labels %v, %s) left behind", c.ID, c.Labels, c.State)
		}
	}

	// The host is unaffected.
	if after := hashTree(t, hostileSuite); !maps.Equal(sourceBefore, after) {
		t.Errorf("the hostile suite's files changed on the host during the run")
	}
	checkMountedSkill(t, dataDir)
	if after := hostMarkers(); !slices.Equal(markersBefore, after) {
		t.Errorf("marker files on the host: before %v, after %v", markersBefore, after)
	}
	if n := connects.Load(); n > 0 {
		t.Errorf("the host listener on port %d accepted %d connections from the run", hostilePort, n)
	}
	t.Logf("hostile suite: %d cases, whole test %s", len(rep.Cases), time.Since(start).Round(time.Millisecond))
}

// checkNoSecretInResults reads every stored result of a run, the output of each attempt, and
// fails on the sentinel value (every secret the test set contains it).
func checkNoSecretInResults(t *testing.T, f *InProcess, run string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	it, err := f.Topology.FollowResults(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Stop()
	n := it.Backlog()
	if n == 0 {
		t.Fatalf("run %s has no stored results", run)
	}
	for range n {
		m, err := it.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r := &pb.Result{}
		if err := proto.Unmarshal(m.Data, r); err != nil {
			t.Fatal(err)
		}
		for name, out := range map[string]string{"stdout": r.GetStdout(), "stderr": r.GetStderr(), "output": r.GetOutput()} {
			if strings.Contains(out, hostileSentinel) {
				t.Errorf("%s/%s: the worker's secret is in the case's %s", r.GetSkill(), r.GetCaseName(), name)
			}
		}
	}
}

// hostileBundle loads examples/hostile, which must be a valid suite, and bundles all of it.
func hostileBundle(t *testing.T) []byte {
	t.Helper()
	s := suite.Load([]string{hostileSuite}, skill.Options{})
	if s.Diagnostics.HasErrors() {
		for _, d := range s.Diagnostics {
			t.Error(d.String())
		}
		t.Fatal("examples/hostile is not a valid suite")
	}
	var buf bytes.Buffer
	if _, err := suite.WriteBundle(&buf, s.Graph, s.Catalog.Skills()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// runToEnd submits a run, waits for it to complete and returns its report.
func runToEnd(t *testing.T, f *InProcess, bundle []byte, spec *pb.RunSpec) report.Report {
	t.Helper()
	st, err := f.Coordinator.Submit(context.Background(), bytes.NewReader(bundle), spec)
	if err != nil {
		t.Fatal(err)
	}
	final := wait(t, f.Coordinator, st.GetId())
	if final.GetState() != pb.RunState_RUN_STATE_COMPLETED || final.GetDoneJobs() != final.GetTotalJobs() {
		t.Fatalf("run %s: state %v (%s), %d of %d jobs", spec.GetName(), final.GetState(), final.GetReason(), final.GetDoneJobs(), final.GetTotalJobs())
	}
	rep, err := f.Coordinator.Report(context.Background(), st.GetId())
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// evidence formats what a case printed and its failed assertions, for a failure message.
func evidence(c report.Case) string {
	var b strings.Builder
	for _, a := range c.Assertions {
		if !a.Passed {
			fmt.Fprintf(&b, "\n    %s: %s (actual %s)", a.Type, a.Message, a.Actual)
		}
	}
	for name, s := range map[string]string{"stdout": c.Stdout, "stderr": c.Stderr} {
		if s != "" {
			fmt.Fprintf(&b, "\n    %s: %.600q", name, s)
		}
	}
	return b.String()
}

// sandboxContainers lists every sandbox container (any state) of one worker id.
func sandboxContainers(t *testing.T, docker *client.Client, workerID string) []containerSummary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := docker.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).
		Add("label", sandbox.LabelSandbox).Add("label", sandbox.LabelWorker+"="+workerID)})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	out := make([]containerSummary, 0, len(res.Items))
	for _, c := range res.Items {
		out = append(out, containerSummary{ID: c.ID, Labels: c.Labels, State: string(c.State)})
	}
	return out
}

type containerSummary struct {
	ID     string
	Labels map[string]string
	State  string
}

// counterWith reads one series of a counter vector.
func counterWith(t *testing.T, g prometheus.Gatherer, name, label, value string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no series %s{%s=%q}", name, label, value)
	return 0
}

// hashTree maps every regular file under root to its SHA-256.
func hashTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		out[p] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// hostMarkers lists the marker files present in the host's scratch directories: the places
// a sandbox's writes would land if its tmpfs dirs were the host's.
func hostMarkers() []string {
	var out []string
	for _, dir := range []string{os.TempDir(), "/tmp", "/var/tmp", "/dev/shm", "/work", "/"} {
		p := filepath.Join(dir, hostileMarker)
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// checkMountedSkill compares the bundle the sandboxes had mounted (the workers' extracted
// cache, on the host) with the source: the hostile-filesystem cases tried to overwrite, delete
// and add files there. It also fails on a marker file anywhere under the fleet's data dir.
func checkMountedSkill(t *testing.T, dataDir string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(hostileSuite, "hostile-filesystem", "SKILL.md"))
	if err != nil {
		t.Fatal(err)
	}
	mounted := 0
	err = filepath.WalkDir(dataDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.Name() == hostileMarker || d.Name() == "planted.sh":
			t.Errorf("%s: a sandbox wrote into the host's data dir", p)
		case d.Name() == "SKILL.md" && filepath.Base(filepath.Dir(p)) == "hostile-filesystem":
			mounted++
			if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, src) {
				t.Errorf("%s: the mounted skill file differs from the source (%v)", p, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if mounted == 0 {
		t.Errorf("no extracted hostile-filesystem/SKILL.md under %s: the check above saw nothing", dataDir)
	}
}

// listenOnHost accepts TCP connections on hostilePort on every host address and counts them;
// the hostile-network cases try to reach it through the bridge gateway and loopback. When the
// port is taken the count stays 0 and the test says so (the cases' own assertions still run).
func listenOnHost(t *testing.T) *atomic.Int32 {
	t.Helper()
	var n atomic.Int32
	l, err := net.Listen("tcp", fmt.Sprintf(":%d", hostilePort))
	if err != nil {
		t.Logf("cannot listen on port %d (%v): the host-side network check is off for this run", hostilePort, err)
		return &n
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			_ = c.Close()
		}
	}()
	return &n
}

// limitsProbeSuite is two skills whose command case prints the container's memory and pids
// limits (cgroup v1 or v2) and expects the values the test asks for.
func limitsProbeSuite(t *testing.T) []byte {
	t.Helper()
	root := t.TempDir()
	probe := `cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max; ` +
		`cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max`
	for name, want := range map[string][]string{
		"limits-asked":   {"100663296", "48"},  // 96 MiB and 48 processes, as asked
		"limits-clamped": {"536870912", "256"}, // the worker's maximum (the default 512 MiB), not 64 GiB
	} {
		dir := filepath.Join(root, name, "tests", "cases")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		md := "---\nname: " + name + "\ndescription: Prints its sandbox limits. Use when checking that suite limits reach containers.\nmetadata:\n  version: \"1.0.0\"\n---\n\n# Probe\n"
		kase := fmt.Sprintf("name: limits\ninput:\n  command: %q\nexpected:\n  stdout-contains: [%q, %q]\n", probe, want[0], want[1])
		if err := os.WriteFile(filepath.Join(root, name, "SKILL.md"), []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "limits.yaml"), []byte(kase), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := suite.Load([]string{root}, skill.Options{})
	if s.Diagnostics.HasErrors() {
		t.Fatalf("limits probe suite: %v", s.Diagnostics)
	}
	var buf bytes.Buffer
	if _, err := suite.WriteBundle(&buf, s.Graph, s.Catalog.Skills()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
