package coordinator_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/skillfleet/skillfleet/comparison"
	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/httpserve/httpservetest"
	"github.com/skillfleet/skillfleet/internal/testutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

// largeResultsRun is a completed run of two prompt cases whose trajectories are mb MiB each
// once decoded (a few KiB as stored, gzipped): its results route answers 2·mb MiB and more.
func largeResultsRun(t *testing.T, c *coordinator.Coordinator, topo *queue.Topology, mb int) string {
	t.Helper()
	ctx := context.Background()
	st, err := c.Submit(ctx, bytes.NewReader(twoCaseSuite(t)), &pb.RunSpec{})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("the agent said a great deal. ", mb<<20/29)
	for range 2 {
		job, _ := fetchJob(t, topo)
		publishWith(t, topo, job, 1, job.GetSecret(), &pb.StoredDocument{Data: gzipped(t, big), Encoding: "gzip"})
	}
	eventually(t, "the run to complete", func() bool {
		s, err := c.Status(ctx, st.GetId())
		return err == nil && s.GetState() == pb.RunState_RUN_STATE_COMPLETED
	})
	return st.GetId()
}

// TestDocumentReadsAreBounded: the review's 5 GB. Every request of a run's results (or of a
// trajectory) resolves its documents in the coordinator's memory, and a client that never read
// held them: 200 of them took the coordinator from 70 MB to 5 GB. Such requests take a slot of
// a cap per principal and of a total cap; over one, 429 with Retry-After; another principal is
// still answered; and a client that stops reading is cut off at its write deadline, which gives
// its slot back.
func TestDocumentReadsAreBounded(t *testing.T) {
	c, topo := newCoordinator(t, coordinator.Config{Agents: []string{"fixture-agent"}, StatusEvery: 50 * time.Millisecond})
	id := largeResultsRun(t, c, topo, 12)
	toks := []coordinator.Token{
		{Name: "alice", Secret: "alice-secret-0123456789"}, {Name: "bob", Secret: "bob-secret-0123456789"},
		{Name: "carol", Secret: "carol-secret-0123456789"}, {Name: "dave", Secret: "dave-secret-0123456789"},
	}
	srv := httptest.NewServer(c.Handler(coordinator.APIConfig{
		Tokens: toks, MaxDocumentReads: 3, MaxDocumentReadsPerCaller: 2,
		// Long enough that the stalled requests still hold their slots while the test looks
		// (bob's read of the whole export included, on a busy machine or under the race
		// detector, where 8 s was not); short enough that it sees them given back.
		WriteTimeout: 20 * time.Second,
	}))
	t.Cleanup(srv.Close)
	results := srv.URL + "/v1/runs/" + id + "/results"
	read := func(tok string) (int, string, int) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, results, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		n, _ := io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After"), int(n)
	}
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	alice, bob, carol, dave := toks[0].Secret, toks[1].Secret, toks[2].Secret, toks[3].Secret

	for i := range 2 {
		if code := httpservetest.Stall(t, nil, results, bearer(alice)); code != http.StatusOK {
			t.Fatalf("alice's stalled read %d: %d, want 200", i+1, code)
		}
	}
	if code, retry, _ := read(alice); code != http.StatusTooManyRequests || retry == "" {
		t.Fatalf("alice's third read, her two stalled: %d (Retry-After %q), want 429 with Retry-After", code, retry)
	}
	if code, _, n := read(bob); code != http.StatusOK || n < 24<<20 {
		t.Fatalf("bob's read while alice stalls two: %d, %d bytes; want 200 and the whole export", code, n)
	}
	if code := httpservetest.Stall(t, nil, results, bearer(carol)); code != http.StatusOK {
		t.Fatalf("carol's stalled read: %d, want 200", code)
	}
	if code, retry, _ := read(dave); code != http.StatusTooManyRequests || retry == "" {
		t.Fatalf("dave's read with three stalled (the total cap): %d (Retry-After %q), want 429", code, retry)
	}
	// Nobody reads the stalled answers: at their write deadline the coordinator cuts them and
	// their slots are free again.
	testutil.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
		code, _, _ := read(dave)
		return code == http.StatusOK
	}, "dave's read still refused long after the stalled requests' write deadline")
	for _, tok := range []string{alice, alice} {
		if code, _, n := read(tok); code != http.StatusOK || n < 24<<20 {
			t.Fatalf("alice's read once her stalled ones were cut: %d, %d bytes", code, n)
		}
	}
	// The trajectory route draws on the same slots.
	for range 2 {
		if code := httpservetest.Stall(t, nil, srv.URL+"/v1/runs/"+id+"/trajectory?skill=s&case=a", bearer(alice)); code != http.StatusOK {
			t.Fatalf("alice's stalled trajectory: %d, want 200", code)
		}
	}
	if code, retry, _ := read(alice); code != http.StatusTooManyRequests || retry == "" {
		t.Fatalf("alice's results read with two trajectories stalled: %d (Retry-After %q), want 429", code, retry)
	}
	// So does the records route.
	_, err := coordinator.NewClient(srv.URL, alice, nil).Records(context.Background(), id, "", comparison.ReadLimits{})
	if !isAPIError(err, http.StatusTooManyRequests, "") {
		t.Fatalf("alice's records read with two trajectories stalled: %v, want 429", err)
	}
}

// TestRunListingsAreBounded: a listing of the runs holds every stored run's status while its
// client takes it (about 4 KB a run: 400 MB at 100,000 runs kept), and any token may list. So
// listings take a slot of a cap per principal and of a total cap, as reads of documents do:
// over one, 429 with Retry-After, and another principal is still answered.
func TestRunListingsAreBounded(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := context.Background()
	// 10,000 finished runs whose listing (about 25 MB) cannot hide in the sockets' buffers.
	now := time.Now()
	reason := strings.Repeat("a long reason. ", 150)
	for i := range 10_000 {
		id := fmt.Sprintf("r%05d", i)
		st := &pb.RunStatus{Id: id, State: pb.RunState_RUN_STATE_COMPLETED, FinishedAt: timestamppb.New(now), Reason: reason,
			Spec: &pb.RunSpec{Id: id, Name: "nightly", CreatedAt: timestamppb.New(now)}}
		data, err := proto.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := topo.Runs().Put(ctx, id, data); err != nil {
			t.Fatal(err)
		}
	}
	c := startOn(t, topo, coordinator.Config{})
	toks := []coordinator.Token{
		{Name: "alice", Secret: "alice-secret-0123456789"}, {Name: "bob", Secret: "bob-secret-0123456789"},
		{Name: "carol", Secret: "carol-secret-0123456789"},
	}
	srv := httptest.NewServer(c.Handler(coordinator.APIConfig{Tokens: toks, WriteTimeout: 20 * time.Second}))
	t.Cleanup(srv.Close)
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	list := func(tok string) ([]*pb.RunStatus, error) {
		return coordinator.NewClient(srv.URL, tok, nil).List(ctx)
	}
	alice, bob, carol := toks[0].Secret, toks[1].Secret, toks[2].Secret

	for i := range coordinator.MaxRunListingsPerCaller {
		if code := httpservetest.Stall(t, nil, srv.URL+"/v1/runs", bearer(alice)); code != http.StatusOK {
			t.Fatalf("alice's stalled listing %d: %d, want 200", i+1, code)
		}
	}
	if _, err := list(alice); !isAPIError(err, http.StatusTooManyRequests, "listings of runs") {
		t.Fatalf("alice's listing with %d of hers stalled: %v, want 429 naming the listings", coordinator.MaxRunListingsPerCaller, err)
	}
	if runs, err := list(bob); err != nil || len(runs) != 10_000 {
		t.Fatalf("bob's listing while alice stalls hers: %d runs, %v; want all 10,000", len(runs), err)
	}
	for i := coordinator.MaxRunListingsPerCaller; i < coordinator.MaxRunListings; i++ {
		if code := httpservetest.Stall(t, nil, srv.URL+"/v1/runs", bearer(bob)); code != http.StatusOK {
			t.Fatalf("bob's stalled listing: %d, want 200", code)
		}
	}
	if _, err := list(carol); !isAPIError(err, http.StatusTooManyRequests, "listings of runs") {
		t.Fatalf("carol's listing with %d stalled (the total cap): %v, want 429", coordinator.MaxRunListings, err)
	}
}
