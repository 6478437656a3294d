package coordinator

import (
	"context"
	"slices"
	"sync"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Listings of the runs (GET /v1/runs, the viewer's runs page) read every kept run: about 4 KB
// allocated a run, 400 MB at 100,000. The listings asked for while one reads the store share
// its read, so that viewers at once hold one listing's memory rather than one each, and the
// store is read once for them all. A listing that joins a read begun before it still shows
// the runs admitted since (the coordinator holds every unfinished run); a run that finished
// meanwhile may read as still running, by at most that read's time.

// listFlight is the read of the stored runs in progress, if any.
type listFlight struct {
	mu  sync.Mutex
	cur *listCall
}

// listCall is one read of the stored runs; out is shared by its callers, read only.
type listCall struct {
	done chan struct{}
	out  []*pb.RunStatus
	err  error
	// callers counts the listings waiting on it (under listFlight.mu).
	callers int
}

// do returns the stored runs from the read in progress, or from one it starts. The read runs
// on base, not on any one caller's context: a caller that leaves does not fail the others.
func (f *listFlight) do(ctx, base context.Context, read func(context.Context) ([]*pb.RunStatus, error)) ([]*pb.RunStatus, error) {
	f.mu.Lock()
	call := f.cur
	if call == nil {
		call = &listCall{done: make(chan struct{})}
		f.cur = call
		go func() {
			out, err := read(base)
			f.mu.Lock()
			call.out, call.err = out, err
			f.cur = nil
			f.mu.Unlock()
			close(call.done)
		}()
	}
	call.callers++
	f.mu.Unlock()
	select {
	case <-call.done:
		return call.out, call.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// List returns every stored run the caller may read, newest first.
func (c *Coordinator) List(ctx context.Context) ([]*pb.RunStatus, error) {
	shared, err := c.listings.do(ctx, c.base, func(ctx context.Context) ([]*pb.RunStatus, error) {
		out, err := c.listStored(ctx)
		for _, st := range out {
			st.JobKey = nil // before it is shared: nobody writes to it after
		}
		return out, err
	})
	if err != nil {
		return nil, err
	}
	read := make(map[string]bool, len(shared))
	for _, st := range shared {
		read[st.GetId()] = true
	}
	// The unfinished runs' live counts, and the runs admitted after the shared read began.
	c.mu.Lock()
	live := make(map[string]*run, len(c.runs))
	var since []*run
	for id, r := range c.runs {
		live[id] = r
		if !read[id] && !r.readOnly {
			since = append(since, r)
		}
	}
	c.mu.Unlock()
	out := visibleRuns(ctx, slices.Clone(shared))
	for i, st := range out {
		if r := live[st.GetId()]; r != nil {
			out[i], _ = public(r.snapshot(), nil)
		}
	}
	if len(since) > 0 {
		added := make([]*pb.RunStatus, 0, len(since))
		for _, r := range since {
			st, _ := public(r.snapshot(), nil)
			added = append(added, st)
		}
		out = append(out, visibleRuns(ctx, added)...)
		sortNewestFirst(out)
	}
	return out, nil
}
