package web

import (
	"context"
	"net/http"
	"sync"
	"testing"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// blockingSource holds every read of a run's results until release is closed.
type blockingSource struct {
	*fakeSource
	entered chan struct{}
	release chan struct{}
}

func (b *blockingSource) AcceptedResults(ctx context.Context, id string, fn func(*pb.Result) error) error {
	b.entered <- struct{}{}
	<-b.release
	return b.fakeSource.AcceptedResults(ctx, id, fn)
}

func (b *blockingSource) CaseResults(ctx context.Context, id, skill, caseName string, fn func(*pb.Result) error) error {
	b.entered <- struct{}{}
	<-b.release
	return b.fakeSource.CaseResults(ctx, id, skill, caseName, fn)
}

// TestHeavyPagesAreBounded: the review found no bound on the pages that read a run's results
// back. With MaxHeavy 1, a second case page while the first is being read gets 503 at once
// (with Retry-After), and is served once the first is done; light pages are never held.
func TestHeavyPagesAreBounded(t *testing.T) {
	src := &blockingSource{fakeSource: newFake(), entered: make(chan struct{}, 4), release: make(chan struct{})}
	st, rep, res := bigRun("r1", 3, pb.RunState_RUN_STATE_COMPLETED, false, "")
	src.add(st, rep, res)
	s, err := New(Config{MaxHeavy: 1}, Deps{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Cases[0]
	page := "/runs/r1/cases?skill=" + c.Skill + "&case=" + c.Case
	var wg sync.WaitGroup
	wg.Add(1)
	first := 0
	go func() {
		defer wg.Done()
		first = do(s, "GET", page, nil, nil, "Host", "127.0.0.1:8080").Code
	}()
	<-src.entered // the first request holds the one heavy slot
	w := do(s, "GET", page, nil, nil, "Host", "127.0.0.1:8080")
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Errorf("a second heavy page while one is served: %d (Retry-After %q), want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
	if w := do(s, "GET", "/runs/r1", nil, nil, "Host", "127.0.0.1:8080"); w.Code != http.StatusOK {
		t.Errorf("a light page while a heavy one is served: %d, want 200", w.Code)
	}
	close(src.release)
	wg.Wait()
	if first != http.StatusOK {
		t.Errorf("the first heavy page: %d, want 200", first)
	}
	if w := do(s, "GET", page, nil, nil, "Host", "127.0.0.1:8080"); w.Code != http.StatusOK {
		t.Errorf("a heavy page after the first is done: %d, want 200", w.Code)
	}
}
