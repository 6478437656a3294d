package coordinator_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/skillfleet/skillfleet/coordinator"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

// clock is a settable time source.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

func TestSweepKeepsWhatReportsNeed(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := context.Background()
	base := time.Now() // the server stamps uploads with its own clock
	clk := &clock{now: base}
	c, err := coordinator.New(coordinator.Config{DataDir: t.TempDir(), Retention: 7 * 24 * time.Hour},
		coordinator.Deps{Queue: topo, Runs: topo.Runs(), Bundles: topo, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	bundle := map[string]string{}
	for _, name := range []string{"old", "shared", "active", "orphan", "old catalog", "recent catalog"} {
		d, err := topo.PutBundle(ctx, bytes.NewReader([]byte("bundle "+name)))
		if err != nil {
			t.Fatal(err)
		}
		bundle[name] = d
	}
	day := 24 * time.Hour
	runs := []struct {
		id       string
		state    pb.RunState
		finished time.Time // zero: not finished
		bundle   string
		catalog  string // the stored catalog its prompt jobs name, if any
	}{
		{"rold", pb.RunState_RUN_STATE_COMPLETED, base, "old", "old catalog"},
		{"rcancelled", pb.RunState_RUN_STATE_CANCELLED, base, "shared", ""},
		{"rrecent", pb.RunState_RUN_STATE_COMPLETED, base.Add(2 * day), "shared", "recent catalog"},
		{"rrunning", pb.RunState_RUN_STATE_RUNNING, time.Time{}, "active", ""},
	}
	for _, r := range runs {
		st := &pb.RunStatus{Id: r.id, State: r.state, Spec: &pb.RunSpec{Id: r.id, BundleDigest: bundle[r.bundle], CatalogDigest: bundle[r.catalog], CreatedAt: timestamppb.New(base)}}
		if !r.finished.IsZero() {
			st.FinishedAt = timestamppb.New(r.finished)
		}
		b, err := proto.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := topo.Runs().Put(ctx, r.id, b); err != nil {
			t.Fatal(err)
		}
	}

	// Nothing is old yet, and the orphan bundle was uploaded moments ago: all stays.
	if got, err := c.Sweep(ctx); err != nil || got != (coordinator.Swept{}) {
		t.Fatalf("first sweep = %+v, %v; want nothing removed", got, err)
	}

	// Eight days on: the runs that finished at base are past retention; the one that finished
	// two days later is not, and a running run is never swept.
	clk.Set(base.Add(8 * day))
	got, err := c.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (coordinator.Swept{Runs: 2, Bundles: 3}); got != want {
		t.Fatalf("sweep = %+v, want %+v", got, want)
	}
	for _, r := range runs {
		_, err := c.Status(ctx, r.id)
		gone := errors.Is(err, coordinator.ErrNotFound)
		if wantGone := r.id == "rold" || r.id == "rcancelled"; gone != wantGone {
			t.Errorf("run %s: Status error %v, want gone=%v", r.id, err, wantGone)
		}
	}
	left, err := topo.ListBundles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, b := range left {
		for name, d := range bundle {
			if d == b.Digest {
				kept = append(kept, name)
			}
		}
	}
	slices.Sort(kept)
	if !slices.Equal(kept, []string{"active", "recent catalog", "shared"}) {
		t.Fatalf("objects kept: %v, want active, shared and the recent run's catalog (old and its catalog lost their run, orphan had none)", kept)
	}

	// A second sweep finds nothing more.
	if got, err := c.Sweep(ctx); err != nil || got != (coordinator.Swept{}) {
		t.Fatalf("second sweep = %+v, %v; want nothing removed", got, err)
	}
}
