package coordinator

import (
	"context"
	"sync"
	"time"

	"github.com/skillfleet/skillfleet/internal/tenant"
)

// What each team's stored runs and pushed suites hold of the bundle store, for its
// max_bundle_bytes bound and GET /v1/usage. Finding it takes every stored run's state, so
// admission, which used to do that for each submission, cost O(stored runs): 376 ms a
// submission with 10,000 runs stored (BenchmarkSubmitWithStoredRuns), and a retention of
// weeks of an organisation's runs holds hundreds of thousands. It is kept in memory instead: one full look
// when first needed, added to as runs are admitted, and looked at again in full after
// what removes or replaces a bundle's holder (a retention sweep, a suite pushed anew) and at
// least every heldFresh, so that what another coordinator admitted meanwhile is counted.

// heldFresh is how old the last full look may be before the next reader makes another.
const heldFresh = 5 * time.Minute

// heldBundles is the in-memory index; its zero value is empty and asks for a full look.
type heldBundles struct {
	// mu is held across a full look, so an admission recorded meanwhile waits for it and
	// lands in the new index rather than being lost with the old one.
	mu     sync.Mutex
	byTeam map[string]map[string]int64 // team → digest → size; nil: look again
	totals map[string]int64            // team → the sum of its sizes
	looked time.Time
}

// team returns what team holds in all, and whether it holds digest already.
func (h *heldBundles) team(ctx context.Context, c *Coordinator, team, digest string) (total int64, has bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.ensure(ctx, c); err != nil {
		return 0, false, err
	}
	_, has = h.byTeam[team][digest]
	return h.totals[team], has, nil
}

// total returns what each team holds in all.
func (h *heldBundles) total(ctx context.Context, c *Coordinator) (map[string]int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.ensure(ctx, c); err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(h.totals))
	for t, n := range h.totals {
		out[t] = n
	}
	return out, nil
}

// add records that team now holds digest of size bytes: a run or a suite was stored.
func (h *heldBundles) add(team, digest string, size int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byTeam == nil || size <= 0 {
		return // the next reader looks in full, and finds it
	}
	if h.byTeam[team] == nil {
		h.byTeam[team] = map[string]int64{}
	}
	if _, ok := h.byTeam[team][digest]; !ok {
		h.byTeam[team][digest] = size
		h.totals[team] += size
	}
}

// forget makes the next reader look in full.
func (h *heldBundles) forget() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.byTeam, h.totals = nil, nil
}

// ensure makes a full look when there is no index or it is older than heldFresh; h.mu is held.
func (h *heldBundles) ensure(ctx context.Context, c *Coordinator) error {
	if h.byTeam != nil && c.now().Sub(h.looked) < heldFresh {
		return nil
	}
	started := c.now()
	byTeam, err := c.lookHeld(ctx)
	if err != nil {
		return err
	}
	h.byTeam, h.totals, h.looked = byTeam, map[string]int64{}, started
	for t, ds := range byTeam {
		for _, n := range ds {
			h.totals[t] += n
		}
	}
	return nil
}

// lookHeld finds, for each team, the size of each bundle its stored runs and pushed suites
// refer to: one listing of the runs, the suites and the bundles.
func (c *Coordinator) lookHeld(ctx context.Context) (map[string]map[string]int64, error) {
	sizes := map[string]int64{}
	bundles, err := c.bundles.ListBundles(ctx)
	if err != nil {
		return nil, err
	}
	for _, b := range bundles {
		sizes[b.Digest] = int64(b.Size)
	}
	held := map[string]map[string]int64{}
	add := func(team, digest string) {
		if sizes[digest] == 0 {
			return
		}
		if held[team] == nil {
			held[team] = map[string]int64{}
		}
		held[team][digest] = sizes[digest]
	}
	statuses, err := c.listStored(ctx)
	if err != nil {
		return nil, err
	}
	for _, st := range statuses {
		add(teamOfRun(st), st.GetSpec().GetBundleDigest())
	}
	if c.schedules != nil {
		// Every team's suites: the coordinator's own reading, not the caller's.
		suites, err := c.Suites(tenant.With(ctx, tenant.Principal{Name: "coordinator", Role: tenant.Admin}))
		if err != nil {
			return nil, err
		}
		for _, ps := range suites {
			add(tenant.Team(ps.Team), ps.BundleDigest)
		}
	}
	return held, nil
}
