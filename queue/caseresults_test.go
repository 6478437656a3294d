package queue_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

func TestParseResultSubject(t *testing.T) {
	for _, tc := range []struct {
		subject, run, key string
		ok                bool
	}{
		{"skillfleet.results.r1", "r1", "", true},
		{"skillfleet.results.r1.c0123", "r1", "c0123", true},
		{queue.CaseResultSubject("r1", "k"), "r1", "k", true},
		{queue.CaseResultSubject("r1", ""), "r1", "", true},
		{"skillfleet.results.r1.a.b", "", "", false},
		{"skillfleet.results.", "", "", false},
		{"skillfleet.jobs.ondemand.r1", "", "", false},
		{"skillfleet.results.r1.", "", "", false},
	} {
		run, key, ok := queue.ParseResultSubject(tc.subject)
		if run != tc.run || key != tc.key || ok != tc.ok {
			t.Errorf("ParseResultSubject(%q) = %q, %q, %v; want %q, %q, %v", tc.subject, run, key, ok, tc.run, tc.key, tc.ok)
		}
	}
}

// TestReadCaseResults files results of three cases and of a worker older than keys under one
// run, and others under another run: a case's read gives its own, in stored order, and nothing
// of the other cases or run; the legacy read gives the unkeyed ones; a purge removes the run's
// every result and leaves the other run's.
func TestReadCaseResults(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	publish := func(run, key, job string) {
		t.Helper()
		if err := topo.PublishResult(ctx, run, key, job, 1, []byte(run+"/"+key+"/"+job)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		for _, key := range []string{"ca", "cb", "cc"} {
			publish("run1", key, fmt.Sprintf("j%s%d", key, i))
		}
		publish("run2", "ca", fmt.Sprintf("jca%d", i))
	}
	publish("run1", "", "jold")
	read := func(run, key string) []string {
		t.Helper()
		var got []string
		var last uint64
		if err := topo.ReadCaseResults(ctx, run, key, func(m queue.ResultMsg) error {
			if m.Seq <= last || m.Run != run || m.Key != key || m.Bytes <= int64(len(m.Data)) {
				t.Errorf("result %+v out of order or mislabelled", m)
			}
			last = m.Seq
			got = append(got, string(m.Data))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got, want := fmt.Sprint(read("run1", "cb")), "[run1/cb/jcb0 run1/cb/jcb1 run1/cb/jcb2 run1/cb/jcb3]"; got != want {
		t.Errorf("case cb of run1 = %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(read("run1", "")), "[run1//jold]"; got != want {
		t.Errorf("unkeyed results of run1 = %s, want %s", got, want)
	}
	if got := read("run2", ""); len(got) != 0 {
		t.Errorf("unkeyed results of run2 = %v, want none", got)
	}
	if got := read("run1", "cz"); len(got) != 0 {
		t.Errorf("an unknown case = %v, want none", got)
	}
	stop := errors.New("stop")
	if err := topo.ReadCaseResults(ctx, "run1", "ca", func(queue.ResultMsg) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("fn's error = %v, want it returned", err)
	}
	if err := topo.ReadCaseResults(ctx, "run1", "a.b", func(queue.ResultMsg) error { return nil }); err == nil {
		t.Error("a key with a dot was read")
	}
	// Every read above, whole, empty or stopped by fn, deleted its consumer as it ended:
	// case pages are opened at a viewer's pace.
	if n := streamConsumers(t, topo, queue.ResultsStream); n != 0 {
		t.Errorf("%d consumers left on the results stream after the case reads ended, want 0", n)
	}

	// The follower of the whole run sees every case's and the unkeyed result.
	it, err := topo.FollowResults(ctx, "run1")
	if err != nil {
		t.Fatal(err)
	}
	defer it.Stop()
	if it.Backlog() != 13 {
		t.Errorf("run1's backlog = %d, want 13", it.Backlog())
	}
	first, err := it.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if first.Key != "ca" {
		t.Errorf("first result's key = %q, want ca", first.Key)
	}
	got, err := topo.GetResult(ctx, "run1", first.Seq)
	if err != nil || !bytes.Equal(got.Data, first.Data) || got.Key != "ca" {
		t.Errorf("GetResult(%d) = %+v, %v; want %q", first.Seq, got, err, first.Data)
	}
	if _, err := topo.GetResult(ctx, "run2", first.Seq); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("run1's result read as run2's: %v", err)
	}

	if err := topo.PurgeRunResults(ctx, "run1"); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"ca", "cb", ""} {
		if got := read("run1", key); len(got) != 0 {
			t.Errorf("case %q of run1 after the purge = %v", key, got)
		}
	}
	if got := read("run2", "ca"); len(got) != 4 {
		t.Errorf("run2 after run1's purge = %v, want its 4 results", got)
	}
	if _, err := topo.GetResult(ctx, "run1", first.Seq); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("a purged result read: %v", err)
	}
}

// TestRunArtifacts stores the same bytes for two runs: purging one run's documents leaves the
// other's readable; a document stored by a worker older than run subjects is still read.
func TestRunArtifacts(t *testing.T) {
	srv, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	doc := bytes.Repeat([]byte("trajectory "), 60_000)
	a1, err := topo.PutArtifact(ctx, "run1", doc)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := topo.PutArtifact(ctx, "run2", doc)
	if err != nil {
		t.Fatal(err)
	}
	if a1 != a2 {
		t.Fatalf("the same bytes got two references: %v, %v", a1, a2)
	}
	if err := topo.PurgeRunArtifacts(ctx, "run1"); err != nil {
		t.Fatal(err)
	}
	if _, err := topo.GetArtifact(ctx, "run1", a1, 1<<20); !errors.Is(err, queue.ErrArtifactNotFound) {
		t.Errorf("run1's document after its purge: %v, want not found", err)
	}
	if got, err := topo.GetArtifact(ctx, "run2", a2, 1<<20); err != nil || !bytes.Equal(got, doc) {
		t.Errorf("run2's document after run1's purge: %d bytes, %v", len(got), err)
	}
	// An older worker's chunk subject: skillfleet.artifacts.<hex>.<chunk>.
	old := []byte("stored by an older worker")
	sum := sha256.Sum256(old)
	queuetest.Publish(t, srv, queue.ArtifactsSubjectPrefix+"."+hex.EncodeToString(sum[:])+".0", old)
	ref := queue.Artifact{Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(old))}
	if got, err := topo.GetArtifact(ctx, "run3", ref, 1<<10); err != nil || !bytes.Equal(got, old) {
		t.Errorf("a legacy document = %q, %v", got, err)
	}
}

// TestLaneLoad counts a lane's queued, running and waiting jobs.
func TestLaneLoad(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	for i := range 3 {
		if err := topo.PublishJob(ctx, queue.LaneScheduled, "run1", fmt.Sprintf("j%d", i), []byte("job")); err != nil {
			t.Fatal(err)
		}
	}
	lanes := topo.LaneConsumers()
	got, err := lanes[1].Fetch(1, 5*time.Second) // FetchNoWait may answer "none" before a loaded server has the jobs
	if err != nil || len(got) != 1 {
		t.Fatalf("fetch = %d, %v", len(got), err)
	}
	// The consumer's info may still count the answered pull request as waiting for a moment on
	// a loaded server: read it again until it settles, within a bound.
	want := queue.LaneLoad{Queued: 2, Running: 1}
	var load queue.LaneLoad
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		if load, err = topo.LaneLoad(ctx, queue.LaneScheduled); err != nil {
			t.Fatal(err)
		}
		if load == want || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if load != want {
		t.Errorf("scheduled lane = %+v, want 2 queued, 1 running", load)
	}
	if load, err := topo.LaneLoad(ctx, queue.LaneOnDemand); err != nil || load != (queue.LaneLoad{}) {
		t.Errorf("on-demand lane = %+v, %v; want empty", load, err)
	}
	if _, err := topo.LaneLoad(ctx, "nope"); err == nil {
		t.Error("an unknown lane's load read")
	}
}
