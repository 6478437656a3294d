package worker

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
	"github.com/skillfleet/skillfleet/suite/suitetest"
)

// The fakes below stand in for the queue so the fetch loop's decisions can be watched one by
// one; the real queue is exercised end to end in package local.

// fakeMsg is a delivered job that records how it was settled.
type fakeMsg struct {
	data    []byte
	attempt int
	settled chan string // "ack", "nak", "nak-delay", "term"
	beats   chan struct{}
}

func newFakeMsg(t *testing.T, job *pb.Job) *fakeMsg {
	data, err := proto.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	return &fakeMsg{data: data, attempt: 1, settled: make(chan string, 4), beats: make(chan struct{}, 64)}
}

func (m *fakeMsg) Data() []byte                          { return m.data }
func (m *fakeMsg) Subject() string                       { return "skillfleet.jobs.ondemand.r1" }
func (m *fakeMsg) Attempt() (int, bool, error)           { return m.attempt, false, nil }
func (m *fakeMsg) Ack() error                            { m.settled <- "ack"; return nil }
func (m *fakeMsg) Nak() error                            { m.settled <- "nak"; return nil }
func (m *fakeMsg) NakWithDelay(time.Duration) error      { m.settled <- "nak-delay"; return nil }
func (m *fakeMsg) TermWithReason(string) error           { m.settled <- "term"; return nil }
func (m *fakeMsg) withData(b []byte) *fakeMsg            { m.data = b; return m }
func (m *fakeMsg) wantSettled(t *testing.T, want string) { t.Helper(); wantRecv(t, m.settled, want) }

func (m *fakeMsg) InProgress() error {
	select {
	case m.beats <- struct{}{}:
	default:
	}
	return nil
}

// poll is a blocking fetch in progress; the test answers it.
type poll struct {
	lane   string
	n      int
	answer chan Delivery // a job, or nil for an expired request
}

// fakeLane answers no-wait fetches from its ready queue and hands blocking fetches to the test.
type fakeLane struct {
	name   string
	polls  chan poll
	closed chan struct{} // closed at the end of the test: open polls expire

	mu      sync.Mutex
	ready   []Delivery
	noWaits int
}

func newFakeLane(name string) *fakeLane {
	return &fakeLane{name: name, polls: make(chan poll, 8), closed: make(chan struct{})}
}

func (l *fakeLane) Fetch(n int, wait time.Duration) ([]Delivery, error) {
	if wait <= 0 {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.noWaits++
		k := min(n, len(l.ready))
		out := l.ready[:k]
		l.ready = l.ready[k:]
		return out, nil
	}
	p := poll{lane: l.name, n: n, answer: make(chan Delivery)}
	l.polls <- p
	select {
	case m := <-p.answer:
		if m != nil {
			return []Delivery{m}, nil
		}
	case <-l.closed:
	}
	return nil, nil
}

func (l *fakeLane) put(m Delivery) {
	l.mu.Lock()
	l.ready = append(l.ready, m)
	l.mu.Unlock()
}

// bundles serves one bundle.
type bundles struct{ data []byte }

func (b bundles) GetBundle(_ context.Context, _ string, w io.Writer) error {
	_, err := w.Write(b.data)
	return err
}

// passing is an executor whose every job passes.
type passing struct{ ran chan string }

func (e passing) Execute(_ context.Context, job *pb.Job, _ string) (*pb.Result, error) {
	e.ran <- job.GetId()
	return &pb.Result{Verdict: pb.Verdict_VERDICT_PASSED}, nil
}

// testBundle is a bundle of one command case, and its digest.
func testBundle(t *testing.T) (digest string, data []byte) {
	t.Helper()
	root := t.TempDir()
	if err := suitetest.GenerateCommands(root, 1, 1, "true"); err != nil {
		t.Fatal(err)
	}
	s := suite.Load([]string{root}, skill.Options{})
	var buf bytes.Buffer
	b, err := suite.WriteBundle(&buf, s.Graph, s.Catalog.Skills())
	if err != nil {
		t.Fatal(err)
	}
	return b.Digest, buf.Bytes()
}

// harness runs a worker on fake lanes.
type harness struct {
	lanes   []*fakeLane
	results *fakeResults
	ran     chan string
	digest  string
	stop    context.CancelFunc
	done    chan error
}

func startWorker(t *testing.T, slots int, fail error) *harness {
	t.Helper()
	digest, bundle := testBundle(t)
	h := &harness{
		lanes:   []*fakeLane{newFakeLane("ondemand"), newFakeLane("scheduled")},
		results: &fakeResults{fail: fail, async: true},
		ran:     make(chan string, 16),
		digest:  digest,
		done:    make(chan error, 1),
	}
	w, err := New(Config{ID: "w1", Slots: slots, CacheDir: t.TempDir(), RetryDelay: time.Millisecond}, Deps{
		Lanes:    []Lane{h.lanes[0], h.lanes[1]},
		Results:  h.results,
		Bundles:  bundles{bundle},
		Executor: passing{h.ran},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel
	go func() { h.done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		for _, l := range h.lanes {
			close(l.closed)
		}
		select {
		case err := <-h.done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("worker did not stop")
		}
	})
	return h
}

func (h *harness) job(t *testing.T, id string) *fakeMsg {
	return newFakeMsg(t, &pb.Job{Id: id, RunId: "r1", Skill: "cmd-00000", CaseName: "case-00000", BundleDigest: h.digest, TimeoutMs: 1000})
}

// nextPoll waits for the worker's next blocking fetch on the lane.
func nextPoll(t *testing.T, l *fakeLane) poll {
	t.Helper()
	select {
	case p := <-l.polls:
		return p
	case <-time.After(30 * time.Second):
		t.Fatalf("no long poll on lane %s", l.name)
		return poll{}
	}
}

func wantRecv[T comparable](t *testing.T, ch <-chan T, want T) {
	t.Helper()
	select {
	case got := <-ch:
		if got != want {
			t.Fatalf("got %v, want %v", got, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("nothing received; want %v", want)
	}
}

// An idle worker waits on both lanes at once, so a job on either is picked up as soon as it
// is published; after one arrives, the remaining free slots are filled without waiting.
func TestIdleWorkerPollsEveryLaneAtOnce(t *testing.T) {
	h := startWorker(t, 4, nil)
	od, sc := nextPoll(t, h.lanes[0]), nextPoll(t, h.lanes[1])
	if od.n != 1 || sc.n != 1 {
		t.Fatalf("idle polls ask for %d and %d jobs, want 1 each (never more than the free slots)", od.n, sc.n)
	}
	// A scheduled job arrives while the on-demand poll is still open, and another waits.
	first, second := h.job(t, "j1"), h.job(t, "j2")
	h.lanes[1].put(second)
	sc.answer <- first
	ran := map[string]bool{}
	for range 2 {
		select {
		case id := <-h.ran:
			ran[id] = true
		case <-time.After(30 * time.Second):
			t.Fatalf("ran only %v", ran)
		}
	}
	if !ran["j1"] || !ran["j2"] {
		t.Fatalf("ran %v, want j1 and j2", ran)
	}
	first.wantSettled(t, "ack")
	second.wantSettled(t, "ack")
	// The on-demand poll is still the worker's; when it expires, both lanes are polled again.
	close(od.answer)
	nextPoll(t, h.lanes[0])
	nextPoll(t, h.lanes[1])
}

// A lane whose poll ended is polled again at once, while another lane's poll is still open:
// a worker whose on-demand poll got a job did not poll that lane again until its scheduled
// poll ran out its wait, and a coordinator publishing jobs one by one as slots freed saw each
// wait that long.
func TestLanePolledAgainWhileAnotherPolls(t *testing.T) {
	h := startWorker(t, 4, nil)
	od, sc := nextPoll(t, h.lanes[0]), nextPoll(t, h.lanes[1])
	m := h.job(t, "j1")
	od.answer <- m
	wantRecv(t, h.ran, "j1")
	m.wantSettled(t, "ack")
	// The scheduled poll is still open; the on-demand lane has a new one.
	again := nextPoll(t, h.lanes[0])
	m2 := h.job(t, "j2")
	again.answer <- m2
	wantRecv(t, h.ran, "j2")
	m2.wantSettled(t, "ack")
	select {
	case q := <-h.lanes[1].polls:
		t.Fatalf("a second poll of lane %s while its first is open", q.lane)
	default:
	}
	close(sc.answer)
}

// A single-slot worker cannot hold two polls (a second job would have no slot), so it polls
// the lanes in turn.
func TestSingleSlotWorkerPollsLanesInTurn(t *testing.T) {
	h := startWorker(t, 1, nil)
	p := nextPoll(t, h.lanes[0])
	select {
	case q := <-h.lanes[1].polls:
		t.Fatalf("a second poll (lane %s) while the first is open", q.lane)
	case <-time.After(100 * time.Millisecond):
	}
	close(p.answer)
	p = nextPoll(t, h.lanes[1])
	m := h.job(t, "j1")
	p.answer <- m
	wantRecv(t, h.ran, "j1")
	m.wantSettled(t, "ack")
	nextPoll(t, h.lanes[0])
}

// A job is acked only once its result is stored; a result that cannot be stored hands the job
// back.
func TestJobSettledByItsResult(t *testing.T) {
	for _, tt := range []struct {
		name string
		fail error
		want string
	}{
		{"stored", nil, "ack"},
		{"not stored", errors.New("stream unavailable"), "nak"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := startWorker(t, 2, tt.fail)
			p := nextPoll(t, h.lanes[0])
			m := h.job(t, "j1")
			p.answer <- m
			wantRecv(t, h.ran, "j1")
			m.wantSettled(t, tt.want)
			h.results.mu.Lock()
			defer h.results.mu.Unlock()
			if len(h.results.published) != 1 || h.results.published[0].GetJobId() != "j1" || h.results.published[0].GetWorkerId() != "w1" {
				t.Fatalf("published %v", h.results.published)
			}
		})
	}
}

// A message that is not a job is terminated, not retried.
func TestMalformedJobTerminated(t *testing.T) {
	h := startWorker(t, 2, nil)
	p := nextPoll(t, h.lanes[0])
	m := h.job(t, "x").withData([]byte("\xff\x00 not a job"))
	p.answer <- m
	m.wantSettled(t, "term")
}
