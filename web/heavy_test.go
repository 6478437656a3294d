package web

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/internal/httpserve/httpservetest"
	"github.com/skillfleet/skillfleet/internal/testutil"

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

// TestHeavySlotsAreSharedPerPrincipal: the review's 503s. One viewer holding every heavy-page
// slot (four requests that never finish) made every team's case pages answer 503. A principal
// now holds at most its share of the slots (one of the default four): its own further heavy
// pages get 503, another principal's case page is served; and the total stays bounded.
func TestHeavySlotsAreSharedPerPrincipal(t *testing.T) {
	src := &blockingSource{fakeSource: newFake(), entered: make(chan struct{}, 16), release: make(chan struct{})}
	st, rep, res := bigRun("r1", 3, pb.RunState_RUN_STATE_COMPLETED, false, "")
	src.add(st, rep, res)
	var ops []Token
	for i := range 6 {
		ops = append(ops, Token{Name: fmt.Sprintf("user%d", i), Secret: fmt.Sprintf("secret-of-user-%d", i)})
	}
	s, err := New(Config{Operators: ops, Now: func() time.Time { return t0 }}, Deps{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Cases[0]
	page := "/runs/r1/cases?skill=" + c.Skill + "&case=" + c.Case
	var held sync.WaitGroup
	t.Cleanup(func() { close(src.release); held.Wait() })
	// open asks for the case page as user i and reports whether it got a slot (it is then held
	// until the test ends) or the code it was answered at once.
	open := func(i int) (slot bool, code int) {
		t.Helper()
		cookie := login(t, s, ops[i].Secret)
		answered := make(chan int, 1)
		held.Add(1)
		go func() {
			defer held.Done()
			answered <- do(s, "GET", page, nil, cookie).Code
		}()
		select {
		case <-src.entered:
			return true, 0
		case code := <-answered:
			return false, code
		}
	}
	// user0 asks for four, as the review's viewer did: one slot, three 503s.
	if slot, code := open(0); !slot {
		t.Fatalf("user0's first heavy page: %d, want a slot", code)
	}
	for range 3 {
		if slot, code := open(0); slot || code != http.StatusServiceUnavailable {
			t.Fatalf("user0's further heavy page while it holds its share: slot %v, code %d; want 503", slot, code)
		}
	}
	// Another principal's case page is served.
	if slot, code := open(1); !slot {
		t.Fatalf("user1's case page while user0 holds its share: %d, want it served", code)
	}
	// The total stays bounded: four principals hold the four slots, a fifth gets 503.
	for i := 2; i < 4; i++ {
		if slot, code := open(i); !slot {
			t.Fatalf("user%d's case page: %d, want a slot", i, code)
		}
	}
	if slot, code := open(4); slot || code != http.StatusServiceUnavailable {
		t.Fatalf("a fifth principal with every slot held: slot %v, code %d; want 503", slot, code)
	}
}

// TestHeavyPageWriteDeadline: a heavy page's client that stops reading is cut off at the
// write deadline, which gives its slot back; before, it held the slot for the server's whole
// WriteTimeout, or for good without one.
func TestHeavyPageWriteDeadline(t *testing.T) {
	src := newFake()
	st, rep, res := bigRun("r1", 1, pb.RunState_RUN_STATE_COMPLETED, true, "")
	res[0].Kind = pb.CaseKind_CASE_KIND_PROMPT
	res[0].Trajectory = &pb.StoredDocument{Data: bytes.Repeat([]byte(" "), 64<<20), Encoding: "json"}
	src.add(st, rep, res)
	s, err := New(Config{Operators: []Token{{Name: "ops", Secret: operatorToken}}, Now: func() time.Time { return t0 },
		MaxHeavy: 1, WriteTimeout: time.Second}, Deps{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	cookie := login(t, s, operatorToken)
	c := rep.Cases[0]
	trajectory := "/runs/r1/trajectory?skill=" + c.Skill + "&case=" + c.Case + "&epoch=1"
	get := func(path string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.AddCookie(cookie)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	// A client that asks for the 64 MiB trajectory and reads only its status line.
	if code := httpservetest.Stall(t, nil, srv.URL+trajectory, http.Header{"Cookie": {cookie.Name + "=" + cookie.Value}}); code != http.StatusOK {
		t.Fatalf("the stalled download: %d, want 200", code)
	}
	if code := get("/runs/r1/cases?skill=" + c.Skill + "&case=" + c.Case); code != http.StatusServiceUnavailable {
		t.Fatalf("a heavy page while the stalled download holds the one slot: %d, want 503", code)
	}
	testutil.Eventually(t, 30*time.Second, 100*time.Millisecond, func() bool {
		return get("/runs/r1/cases?skill="+c.Skill+"&case="+c.Case) == http.StatusOK
	}, "the stalled download still held its slot long after the write deadline")
}
