package coordinator

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/internal/tenant"
	"github.com/skillfleet/skillfleet/internal/testutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// TestListingsShareTheirRead: listings asked for while one reads the store wait for that read
// and share it (one read for five listings), each still filtered to its caller's teams, with
// the runs admitted since the read began, and without job keys.
func TestListingsShareTheirRead(t *testing.T) {
	runs := newFakeRuns()
	c := storeTestCoordinator(runs)
	c.base, c.runs = context.Background(), map[string]*run{}
	base := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	for i, r := range []struct{ id, team string }{
		{"r20261129t000000-aaaaaaaa", "teamA"}, {"r20261129t000000-bbbbbbbb", "teamB"}, {"r20261129t000000-cccccccc", "teamA"},
	} {
		st := runAt(r.id, base.Add(time.Duration(i)*time.Hour))
		st.Spec.Team, st.JobKey = r.team, []byte("secret key")
		b, err := proto.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		runs.values[r.id] = b
	}
	runs.eachEntered, runs.eachGate = make(chan struct{}), make(chan struct{})
	as := func(team string) context.Context {
		return tenant.With(context.Background(), tenant.Principal{Name: team + "-viewer", Team: team, Role: tenant.Viewer})
	}
	callers := []string{"teamA", "teamB", "teamA", "teamB", "teamA"}
	got := make([][]*pb.RunStatus, len(callers))
	errs := make([]error, len(callers))
	var wg sync.WaitGroup
	list := func(i int) { got[i], errs[i] = c.List(as(callers[i])) }
	wg.Go(func() { list(0) })
	<-runs.eachEntered // the read is under way: the others join it
	for i := 1; i < len(callers); i++ {
		wg.Go(func() { list(i) })
	}
	testutil.Eventually(t, 10*time.Second, time.Millisecond, func() bool {
		c.listings.mu.Lock()
		defer c.listings.mu.Unlock()
		return c.listings.cur != nil && c.listings.cur.callers == len(callers)
	}, "all %d listings to wait on the one read", len(callers))
	// A run admitted while the read goes on.
	admitted := runAt("r20261129t050000-dddddddd", base.Add(5*time.Hour))
	admitted.Spec.Team, admitted.JobKey, admitted.State = "teamB", []byte("secret key"), pb.RunState_RUN_STATE_COMPLETED
	c.runs[admitted.GetId()] = &run{id: admitted.GetId(), team: "teamB", status: admitted}
	close(runs.eachGate)
	wg.Wait()

	if runs.calls["each"] != 1 {
		t.Errorf("the store was read %d times for %d listings at once, want once", runs.calls["each"], len(callers))
	}
	want := map[string][]string{
		"teamA": {"r20261129t000000-cccccccc", "r20261129t000000-aaaaaaaa"},
		"teamB": {"r20261129t050000-dddddddd", "r20261129t000000-bbbbbbbb"},
	}
	for i, team := range callers {
		if errs[i] != nil {
			t.Fatalf("listing %d: %v", i, errs[i])
		}
		var ids []string
		for _, st := range got[i] {
			ids = append(ids, st.GetId())
			if st.GetJobKey() != nil {
				t.Errorf("listing %d carries run %s's job key", i, st.GetId())
			}
		}
		if !slices.Equal(ids, want[team]) {
			t.Errorf("listing %d as %s = %v, want %v", i, team, ids, want[team])
		}
	}
	// A listing after the read has ended reads the store again.
	runs.eachEntered = nil
	if _, err := c.List(as("teamA")); err != nil || runs.calls["each"] != 2 {
		t.Errorf("a later listing: %v, the store read %d times; want a read of its own", err, runs.calls["each"])
	}
}
