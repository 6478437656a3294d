package coordinator_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/skillfleet/skillfleet/coordinator"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

// TestTeamBundleBound: a team's runs and suites hold bundles up to its max_bundle_bytes.
// Admission keeps what each team holds in memory rather than reading every stored run for
// each submission, so the test walks what changes it: runs admitted (counted at once), a
// bundle held already (free), another team (unaffected), a retention sweep (what it removed
// no longer counts), a run stored by another coordinator (counted within heldFresh), and a
// suite pushed anew (its old bundle no longer counts).
func TestTeamBundleBound(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := context.Background()
	base := time.Now()
	clk := &clock{now: base}
	s1, s2, s3 := commandSuite(t, 1), commandSuite(t, 2), commandSuite(t, 3)
	size := func(b ...[]byte) int64 {
		var n int64
		for _, x := range b {
			n += int64(len(x))
		}
		return n
	}
	c, err := coordinator.New(coordinator.Config{
		DataDir: t.TempDir(), StatusEvery: 20 * time.Millisecond, Retention: time.Hour,
		// s1 and s2 fit; s3 beside them does not.
		TeamDefaults: coordinator.TeamPolicy{MaxBundleBytes: size(s1, s2) + size(s3)/2},
	}, coordinator.Deps{Queue: topo, Runs: topo.Runs(), Bundles: topo, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(ctx) })
	submit := func(team string, suite []byte) error {
		t.Helper()
		_, err := c.Submit(member(team), bytes.NewReader(suite), &pb.RunSpec{Name: team + "-suite"})
		return err
	}
	held := func(team string) int64 {
		t.Helper()
		u, err := c.Usage(member(team), "")
		if err != nil || len(u) != 1 {
			t.Fatalf("usage of %s: %+v, %v", team, u, err)
		}
		return u[0].Bundles
	}
	overBound := func(err error) bool {
		var q *coordinator.QuotaError
		return errors.As(err, &q) && strings.Contains(err.Error(), "max_bundle_bytes")
	}

	for _, s := range [][]byte{s1, s2, s1} {
		if err := submit("teamA", s); err != nil {
			t.Fatalf("team a's run within its bound: %v", err)
		}
	}
	if got, want := held("teamA"), size(s1, s2); got != want {
		t.Errorf("team a holds %d bytes of bundles, want %d (s1 and s2, s1 once)", got, want)
	}
	if err := submit("teamA", s3); !overBound(err) {
		t.Errorf("team a's third bundle: %v, want a QuotaError naming max_bundle_bytes", err)
	}
	if err := submit("teamB", s3); err != nil {
		t.Errorf("team b refused while team a is at its bound: %v", err)
	}
	if got, want := held("teamB"), size(s3); got != want {
		t.Errorf("team b holds %d bytes of bundles, want %d", got, want)
	}

	// Team a's runs finish and leave retention: it holds nothing, and s3 fits.
	for answer(t, topo, 10, 3*time.Second) != nil {
	}
	list, err := c.List(member("teamA"))
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range list {
		eventually(t, "team a's runs to finish", func() bool {
			s, err := c.Status(ctx, st.GetId())
			return err == nil && s.GetState() == pb.RunState_RUN_STATE_COMPLETED
		})
	}
	clk.Set(base.Add(2 * time.Hour))
	// Read now, the index is fresh when the sweep runs: only the sweep can make it look again.
	if got, want := held("teamA"), size(s1, s2); got != want {
		t.Errorf("team a holds %d bytes of bundles before the sweep, want %d", got, want)
	}
	if swept, err := c.Sweep(ctx); err != nil || swept.Runs < 3 {
		t.Fatalf("sweep: %+v, %v; want team a's 3 runs (and team b's) removed", swept, err)
	}
	if got := held("teamA"); got != 0 {
		t.Errorf("team a holds %d bytes of bundles once its runs were swept, want 0", got)
	}
	if err := submit("teamA", s3); err != nil {
		t.Errorf("team a's bundle once its runs were swept: %v", err)
	}

	// A run stored by another coordinator is counted once the index is older than heldFresh.
	st := &pb.RunStatus{Id: "relsewhere", State: pb.RunState_RUN_STATE_RUNNING, Spec: &pb.RunSpec{
		Id: "relsewhere", Team: "teamC", BundleDigest: digestOfSuite(t, topo, s1), CreatedAt: timestamppb.New(clk.Now()),
	}}
	b, err := proto.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := topo.Runs().Put(ctx, st.GetId(), b); err != nil {
		t.Fatal(err)
	}
	clk.Set(base.Add(2*time.Hour + 6*time.Minute))
	if got, want := held("teamC"), size(s1); got != want {
		t.Errorf("team c holds %d bytes of bundles 6 minutes after another coordinator stored its run, want %d", got, want)
	}

	// A suite pushed anew holds its new bundle, not its old one.
	for _, s := range [][]byte{s1, s2} {
		if _, err := c.PushSuite(member("teamD"), "teamD", "nightly", bytes.NewReader(s)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := held("teamD"), size(s2); got != want {
		t.Errorf("team d holds %d bytes of bundles after pushing its suite twice, want %d (the latest push's)", got, want)
	}
}

// digestOfSuite stores suite as a bundle (a no-op when stored already) and returns its digest.
func digestOfSuite(t *testing.T, topo *queue.Topology, suite []byte) string {
	t.Helper()
	d, err := topo.PutBundle(context.Background(), bytes.NewReader(suite))
	if err != nil {
		t.Fatal(err)
	}
	return d
}
