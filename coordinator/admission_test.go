package coordinator_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/fleet"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
	"github.com/skillfleet/skillfleet/suite/suitetest"
)

// newCoordinator is a coordinator on a fresh embedded server, with no workers.
func newCoordinator(t testing.TB, cfg coordinator.Config) (*coordinator.Coordinator, *queue.Topology) {
	t.Helper()
	return newCoordinatorOn(t, cfg, queue.DefaultConfig())
}

// newCoordinatorOn is newCoordinator on a topology of qcfg.
func newCoordinatorOn(t testing.TB, cfg coordinator.Config, qcfg queue.Config) (*coordinator.Coordinator, *queue.Topology) {
	t.Helper()
	_, _, topo := queuetest.StartConfig(t, qcfg, queue.EmbeddedConfig{})
	return startOn(t, topo, cfg), topo
}

// startOn starts a coordinator of cfg on topo (a data directory of the test's when cfg names
// none), closed when the test ends: a second one on the same topology is the first restarted.
func startOn(t testing.TB, topo *queue.Topology, cfg coordinator.Config) *coordinator.Coordinator {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	c, err := coordinator.New(cfg, coordinator.Deps{Queue: topo, Runs: topo.Runs(), Bundles: topo})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// assertNothingStored fails when a refused submission left a bundle, a run, or anything in
// the coordinator's data directory beyond the empty bundle cache.
func assertNothingStored(t *testing.T, c *coordinator.Coordinator, topo *queue.Topology, dataDir string) {
	t.Helper()
	ctx := context.Background()
	if b, err := topo.ListBundles(ctx); err != nil || len(b) != 0 {
		t.Errorf("object store holds %d bundles after refusals (%v)", len(b), err)
	}
	if runs, err := c.List(ctx); err != nil || len(runs) != 0 {
		t.Errorf("KV holds %d runs after refusals (%v)", len(runs), err)
	}
	var left []string
	_ = filepath.WalkDir(dataDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && p != dataDir && p != filepath.Join(dataDir, "bundles") {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("data directory holds %q after refusals", left)
	}
}

// largeCaseSuite has one prompt case, on line 2 of its cases file, whose input alone is over
// the server's max payload.
func largeCaseSuite(t *testing.T, size int) string {
	return writeFiles(t, map[string]string{
		"s/SKILL.md":   okSkill,
		"s/cases.yaml": "cases:\n  - name: big\n    input: " + strings.Repeat("x", size) + "\n    assertions:\n      output_contains: [x]\n",
	})
}

// TestSubmitAdmission: each admission limit refuses a submission with a PlanError (422 on the
// API) naming what is wrong, before anything is stored.
func TestSubmitAdmission(t *testing.T) {
	dataDir := t.TempDir()
	// Jobs of at most 256 KiB: a case file (at most 1 MiB) can then hold a case whose job
	// is too large for the queue.
	qcfg := queue.DefaultConfig()
	qcfg.JobsMaxMsgSize = 256 << 10
	c, topo := newCoordinatorOn(t, coordinator.Config{
		DataDir: dataDir, MaxJobsPerRun: 1000, MaxDeadline: 24 * time.Hour,
		Agents: []string{"a"}, KnownAgents: []string{"a", "b"},
	}, qcfg)
	bomb := t.TempDir()
	if err := suitetest.GenerateRuns(bomb, 2, 10, 1000); err != nil { // 20,000 jobs
		t.Fatal(err)
	}
	good := bundleOf(t, examples)
	for _, tc := range []struct {
		name   string
		bundle []byte
		spec   *pb.RunSpec
		msg    string
		// file, line and rule of the diagnostic wanted, if any.
		file, rule string
		line       int
	}{
		// The second case (line 7) takes the count from 1,000 to 2,000.
		{name: "too many jobs", bundle: bundleOf(t, bomb), spec: &pb.RunSpec{}, msg: "suite has 1 error(s)",
			file: "runs-00000/cases.yaml", line: 7, rule: "plan.maxJobs"},
		{name: "plan error", bundle: bundleOf(t, badCaseSuite(t)), spec: &pb.RunSpec{}, msg: "suite has 1 error(s)",
			file: "s/cases.yaml", line: 5, rule: "assertion.unknownKey"},
		{name: "not a tar", bundle: []byte("this is not a tar archive"), spec: &pb.RunSpec{}, msg: "read bundle: unexpected EOF"},
		{name: "deadline over the maximum", bundle: good, spec: &pb.RunSpec{DeadlineMs: (10 * 365 * 24 * time.Hour).Milliseconds()}, msg: "exceeds this coordinator's maximum of 24h0m0s"},
		{name: "unknown agent", bundle: good, spec: &pb.RunSpec{Agents: []string{"a", "nope"}}, msg: `unknown agent "nope": this fleet runs a, b`},
		{name: "agent twice", bundle: good, spec: &pb.RunSpec{Agents: []string{"a", "b", "a"}}, msg: `agent "a" is named twice`},
		{name: "job over max payload", bundle: bundleOf(t, largeCaseSuite(t, 512<<10)), spec: &pb.RunSpec{}, msg: "suite has 1 error(s)",
			file: "s/cases.yaml", line: 2, rule: "job.tooLarge"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Submit(context.Background(), bytes.NewReader(tc.bundle), tc.spec)
			var pe *coordinator.PlanError
			if !errors.As(err, &pe) {
				t.Fatalf("Submit = %v, want a *PlanError", err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("message %q, want it to contain %q", err, tc.msg)
			}
			if tc.rule == "" {
				return
			}
			if len(pe.Diagnostics) != 1 {
				t.Fatalf("diagnostics %v, want one", pe.Diagnostics)
			}
			if d := pe.Diagnostics[0]; d.File != tc.file || d.Line != tc.line || d.Rule != tc.rule {
				t.Errorf("diagnostic %s, want %s:%d %s", d, tc.file, tc.line, tc.rule)
			}
		})
	}
	// An upload over the bundle limit is cut off at the limit (413 on the API).
	c2, topo2 := newCoordinator(t, coordinator.Config{DataDir: t.TempDir(), MaxBundleBytes: 1024})
	_, err := c2.Submit(context.Background(), bytes.NewReader(good), &pb.RunSpec{})
	var tooBig *http.MaxBytesError
	if !errors.As(err, &tooBig) {
		t.Errorf("oversized upload: %v, want an *http.MaxBytesError", err)
	}
	_ = topo2
	assertNothingStored(t, c, topo, dataDir)

	// Within every limit, it is admitted, stored and planned from the extracted upload.
	st, err := c.Submit(context.Background(), bytes.NewReader(good), &pb.RunSpec{Agents: []string{"b"}})
	if err != nil {
		t.Fatal(err)
	}
	if st.GetTotalJobs() != exampleJobs {
		t.Errorf("%d jobs, want %d", st.GetTotalJobs(), exampleJobs)
	}
	// Stored: the bundle, and the catalog its prompt jobs name, each under the digest the
	// run's spec gives.
	var stored []string
	b, err := topo.ListBundles(context.Background())
	for _, o := range b {
		stored = append(stored, o.Digest)
	}
	slices.Sort(stored)
	wantStored := []string{st.GetSpec().GetBundleDigest(), st.GetSpec().GetCatalogDigest()}
	slices.Sort(wantStored)
	if err != nil || st.GetSpec().GetCatalogDigest() == "" || !slices.Equal(stored, wantStored) {
		t.Errorf("objects after an admitted submission: %v (%v), want the bundle and the catalog %v", stored, err, wantStored)
	}
	// The extracted upload went into the bundle cache, and nothing else stayed behind.
	entries, err := os.ReadDir(filepath.Join(dataDir, "bundles"))
	if err != nil {
		t.Fatal(err)
	}
	want := "sha256-" + strings.TrimPrefix(st.GetSpec().GetBundleDigest(), "sha256:")
	if len(entries) != 1 || entries[0].Name() != want {
		t.Errorf("bundle cache after an admitted submission: %v, want only %s", entries, want)
	}
}

// TestSubmitJobsPerPrincipal: the jobs of one caller's unfinished runs are capped; a finished
// (here: cancelled) run gives its jobs back.
func TestSubmitJobsPerPrincipal(t *testing.T) {
	a := startAPI(t, func(cfg *fleet.InProcessConfig, _ *coordinator.APIConfig) {
		cfg.Coordinator.MaxJobsPerPrincipal = exampleJobs + 5
	})
	good := bundleOf(t, examples)
	// Held: the fake executor holds jobs planned for an agent until it is released.
	first := a.submit(t, "agent=held", good)
	resp, body := a.do(t, http.MethodPost, "/v1/runs?agent=held", token, good)
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("second submission: %d, want 422: %s", resp.StatusCode, body)
	}
	if e := decodeError(t, body); !strings.Contains(e.Error, fmt.Sprintf("over the limit of %d", exampleJobs+5)) {
		t.Errorf("message %q does not name the limit", e.Error)
	}
	if _, err := a.client().Cancel(context.Background(), first.GetId()); err != nil {
		t.Fatal(err)
	}
	a.wait(t, first.GetId())
	a.submit(t, "agent=held", good)
}

// slowReader yields the bundle a chunk at a time, one per value on next, so a test decides
// when the upload goes on.
type slowReader struct {
	data []byte
	next chan struct{}
}

func (s *slowReader) Read(p []byte) (int, error) {
	if len(s.data) == 0 {
		return 0, io.EOF
	}
	if _, ok := <-s.next; !ok {
		return 0, io.ErrUnexpectedEOF
	}
	n := copy(p[:min(len(p), 512)], s.data)
	s.data = s.data[n:]
	return n, nil
}

// TestSlowUploadBlocksNothing: while one client trickles its upload, the retention sweep and
// another submission go through.
func TestSlowUploadBlocksNothing(t *testing.T) {
	c, _ := newCoordinator(t, coordinator.Config{})
	good := bundleOf(t, examples)
	slow := &slowReader{data: good, next: make(chan struct{})}
	slowDone := make(chan error, 1)
	go func() {
		_, err := c.Submit(context.Background(), slow, &pb.RunSpec{})
		slowDone <- err
	}()
	// Once a chunk has been taken, the slow submission is reading its upload.
	slow.next <- struct{}{}
	slow.next <- struct{}{}

	// Bounded waits: a blocked call fails the test instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sweep := make(chan error, 1)
	go func() { _, err := c.Sweep(ctx); sweep <- err }()
	select {
	case err := <-sweep:
		if err != nil {
			t.Fatalf("sweep: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the retention sweep is blocked by a slow upload")
	}
	if _, err := c.Submit(ctx, bytes.NewReader(good), &pb.RunSpec{}); err != nil {
		t.Fatalf("a second submission during a slow upload: %v", err)
	}
	close(slow.next) // the slow client goes away
	if err := <-slowDone; err == nil {
		t.Error("a cut-off upload was admitted")
	}
}

// TestJobBombRefusedInBoundedMemory: a 1.3 MB bundle that expands into 10,000,000 jobs is
// refused having allocated a bounded amount: the jobs are counted, never made. (Before the cap
// the submission allocated 3.8 GB; see BenchmarkSubmitJobBomb.) Memory, not time, is asserted.
func TestJobBombRefusedInBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a 10,000-case suite")
	}
	root := t.TempDir()
	if err := suitetest.GenerateRuns(root, 100, 100, 1000); err != nil {
		t.Fatal(err)
	}
	bundle := bundleOf(t, root)
	c, _ := newCoordinator(t, coordinator.Config{})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := c.Submit(context.Background(), bytes.NewReader(bundle), &pb.RunSpec{})
	runtime.ReadMemStats(&after)
	var pe *coordinator.PlanError
	if !errors.As(err, &pe) || len(pe.Diagnostics) != 1 || pe.Diagnostics[0].Rule != "plan.maxJobs" {
		t.Fatalf("Submit = %v, want refused with plan.maxJobs", err)
	}
	// Loading 10,000 cases takes about 40 MB; 10,000,000 jobs would take gigabytes.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
		t.Errorf("refusing the suite allocated %d MB, want under 256 MB", alloc>>20)
	}
}

// BenchmarkSubmitJobBomb submits a bundle of 10,000 cases of runs: 1000 (10,000,000 jobs,
// about 1 MB of tar) to a coordinator with the default limits: it is refused after counting.
// Run with -benchtime=1x under /usr/bin/time -v for the process's peak memory.
func BenchmarkSubmitJobBomb(b *testing.B) {
	root := b.TempDir()
	if err := suitetest.GenerateRuns(root, 100, 100, 1000); err != nil {
		b.Fatal(err)
	}
	bundle := bundleOf(b, root)
	c, _ := newCoordinator(b, coordinator.Config{})
	b.ReportAllocs()
	for b.Loop() {
		_, err := c.Submit(context.Background(), bytes.NewReader(bundle), &pb.RunSpec{})
		var pe *coordinator.PlanError
		if !errors.As(err, &pe) {
			b.Fatalf("Submit = %v, want the plan refused", err)
		}
	}
	b.ReportMetric(float64(len(bundle)), "bundle-bytes")
}
