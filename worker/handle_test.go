package worker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// scriptedExec answers every job with res or err.
type scriptedExec struct {
	res *pb.Result
	err error
}

func (e scriptedExec) Execute(context.Context, *pb.Job, string) (*pb.Result, error) {
	if e.err != nil {
		return nil, e.err
	}
	return proto.Clone(e.res).(*pb.Result), nil
}

// fakeResults confirms or fails each result (fail) before PublishResult returns, or later
// from another goroutine as the real publisher does (async), or refuses it outright (refuse),
// and keeps what it was given.
type fakeResults struct {
	fail, refuse error
	async        bool

	mu        sync.Mutex
	published []*pb.Result
	// keys are the result keys the results were published under.
	keys []string
}

func (r *fakeResults) PublishResult(_ context.Context, _, key, _ string, _ int, data []byte, done func(error)) error {
	if r.refuse != nil {
		return r.refuse
	}
	res := &pb.Result{}
	if err := proto.Unmarshal(data, res); err != nil {
		return err
	}
	r.mu.Lock()
	r.published = append(r.published, res)
	r.keys = append(r.keys, key)
	r.mu.Unlock()
	if r.async {
		go done(r.fail)
		return nil
	}
	done(r.fail)
	return nil
}

// TestHandleSettlesEachDeliveryOnce: every way a delivery can end settles it exactly once, the
// right way, and publishes a result exactly when the job must not come back without one.
func TestHandleSettlesEachDeliveryOnce(t *testing.T) {
	digest, bundle := testBundle(t)
	infra := errors.New("sandbox would not start")
	pass := &pb.Result{Verdict: pb.Verdict_VERDICT_PASSED}
	for _, tc := range []struct {
		name    string
		data    []byte // nil: a well-formed job
		attempt int
		exec    scriptedExec
		results *fakeResults
		stopped bool // the worker's forced stop cancelled the job
		// want is how the delivery is settled; verdict the result published ("" for none).
		want    string
		verdict pb.Verdict
		reason  string
	}{
		{name: "result stored: ack", attempt: 1, exec: scriptedExec{res: pass}, results: &fakeResults{},
			want: "ack", verdict: pb.Verdict_VERDICT_PASSED},
		{name: "result not stored: nak", attempt: 1, exec: scriptedExec{res: pass}, results: &fakeResults{fail: errors.New("stream unavailable")},
			want: "nak", verdict: pb.Verdict_VERDICT_PASSED},
		{name: "result refused at once: nak", attempt: 1, exec: scriptedExec{res: pass}, results: &fakeResults{refuse: errors.New("publisher closed")},
			want: "nak"},
		{name: "infrastructure failure before the last attempt: retried later", attempt: 2, exec: scriptedExec{err: infra}, results: &fakeResults{},
			want: "nak-delay"},
		{name: "infrastructure failure on the last attempt: errored, terminated", attempt: 3, exec: scriptedExec{err: infra}, results: &fakeResults{},
			want: "term", verdict: pb.Verdict_VERDICT_ERRORED, reason: "infrastructure failure after 3 attempts"},
		{name: "last attempt whose errored result is not stored: nak", attempt: 3, exec: scriptedExec{err: infra}, results: &fakeResults{fail: errors.New("stream unavailable")},
			want: "nak", verdict: pb.Verdict_VERDICT_ERRORED},
		{name: "last attempt that passes: ack", attempt: 3, exec: scriptedExec{res: pass}, results: &fakeResults{},
			want: "ack", verdict: pb.Verdict_VERDICT_PASSED},
		{name: "forced stop: handed back at once", attempt: 3, exec: scriptedExec{err: context.Canceled}, results: &fakeResults{}, stopped: true,
			want: "nak"},
		{name: "malformed message: terminated", data: []byte("\xff\x00 not a job"), attempt: 1, exec: scriptedExec{res: pass}, results: &fakeResults{},
			want: "term"},
		{name: "job without a run: terminated", data: mustMarshal(t, &pb.Job{Id: "j1"}), attempt: 1, exec: scriptedExec{res: pass}, results: &fakeResults{},
			want: "term"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := New(Config{ID: "w1", CacheDir: t.TempDir(), MaxAttempts: 3, RetryDelay: time.Millisecond}, Deps{
				Lanes: []Lane{newFakeLane("ondemand")}, Results: tc.results, Bundles: bundles{bundle}, Executor: tc.exec,
			})
			if err != nil {
				t.Fatal(err)
			}
			m := newFakeMsg(t, &pb.Job{Id: "j1", RunId: "r1", Skill: "cmd-00000", CaseName: "case-00000", BundleDigest: digest, TimeoutMs: 1000, Secret: []byte("s3cret"), ResultKey: "c0123"})
			m.attempt = tc.attempt
			if tc.data != nil {
				m.data = tc.data
			}
			ctx, cancel := context.WithCancel(context.Background())
			if tc.stopped {
				cancel()
			}
			w.handle(ctx, m)
			cancel()
			w.settling.Wait()

			select {
			case got := <-m.settled:
				if got != tc.want {
					t.Fatalf("settled %q, want %q", got, tc.want)
				}
			default:
				t.Fatalf("not settled, want %q", tc.want)
			}
			if extra := len(m.settled); extra > 0 {
				t.Fatalf("settled %d more times", extra)
			}
			if n := len(w.beats.msgs); n != 0 {
				t.Errorf("%d heartbeats left running", n)
			}
			tc.results.mu.Lock()
			defer tc.results.mu.Unlock()
			if tc.verdict == pb.Verdict_VERDICT_UNSPECIFIED {
				if len(tc.results.published) != 0 {
					t.Fatalf("published %v, want nothing", tc.results.published)
				}
				return
			}
			if len(tc.results.published) != 1 {
				t.Fatalf("published %d results, want 1", len(tc.results.published))
			}
			res := tc.results.published[0]
			if res.GetVerdict() != tc.verdict || !strings.Contains(res.GetReason(), tc.reason) {
				t.Errorf("result %v %q, want %v with %q", res.GetVerdict(), res.GetReason(), tc.verdict, tc.reason)
			}
			if res.GetJobId() != "j1" || res.GetRunId() != "r1" || res.GetAttempt() != int32(tc.attempt) || res.GetWorkerId() != "w1" || string(res.GetSecret()) != "s3cret" {
				t.Errorf("result identifies job %s run %s attempt %d worker %s secret %q", res.GetJobId(), res.GetRunId(), res.GetAttempt(), res.GetWorkerId(), res.GetSecret())
			}
			// Filed under its case's subject, so that its case page finds it alone.
			if tc.results.keys[0] != "c0123" {
				t.Errorf("result published under key %q, want the job's c0123", tc.results.keys[0])
			}
		})
	}
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
