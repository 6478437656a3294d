package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

// meteringUpstream is an honest Chat Completions upstream: each answer reports a fixed prompt
// and, as completion, the max output the request allowed (or deflt when it set none), in one
// JSON body or, to a stream request, in a stream's usage chunk. It
// records what it answered and how many requests it held at once.
//
// To make concurrency certain rather than a matter of scheduling, it holds its answers until
// hold requests are in flight at once, or until every one of total client requests is either
// held or done (see clientDone); from then on it answers at once.
type meteringUpstream struct {
	*httptest.Server
	prompt, deflt int64
	hold, total   int
	release       chan struct{}
	done          int

	mu                    sync.Mutex
	bodies                []map[string]any
	reported              int64
	inflight, maxInflight int
}

func newMeteringUpstream(t *testing.T, prompt, deflt int64, hold, total int) *meteringUpstream {
	t.Helper()
	u := &meteringUpstream{prompt: prompt, deflt: deflt, hold: hold, total: total, release: make(chan struct{})}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		completion := u.deflt
		for _, k := range []string{"max_completion_tokens", "max_tokens"} {
			if v, ok := body[k].(float64); ok {
				completion = int64(v)
			}
		}
		u.mu.Lock()
		u.bodies = append(u.bodies, body)
		u.reported += u.prompt + completion
		u.inflight++
		u.maxInflight = max(u.maxInflight, u.inflight)
		u.check()
		u.mu.Unlock()
		defer func() { u.mu.Lock(); u.inflight--; u.mu.Unlock() }()
		select {
		case <-u.release:
		case <-r.Context().Done():
			return
		}
		if body["stream"] == true {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n")
			fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", u.prompt, completion)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"length"}],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`,
			u.prompt, completion, u.prompt+completion)
	}))
	t.Cleanup(u.Close)
	return u
}

// check opens the gate once it may; called with mu held.
func (u *meteringUpstream) check() {
	select {
	case <-u.release:
	default:
		if u.inflight >= u.hold || u.inflight+u.done >= u.total {
			close(u.release)
		}
	}
}

// clientDone counts a client request that got its answer.
func (u *meteringUpstream) clientDone() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.done++
	u.check()
}

// Under concurrency the budget holds: 64 parallel requests against a 1,000-token budget reach
// the upstream only while their reservations fit, and what the upstream reports (what the
// provider bills) never exceeds the budget.
func TestGatewayBudgetHoldsUnderConcurrency(t *testing.T) {
	const budget, parallel = 1000, 64
	tests := []struct {
		name, body string
		deflt      int64 // what the upstream spends on a request without max output
	}{
		{"no max output", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, 990},
		{"max_tokens 100", `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":100}`, 990},
		{"streamed, max_tokens 100", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}],"max_tokens":100}`, 990},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newMeteringUpstream(t, 10, tt.deflt, 4, parallel)
			f := serveGateway(t, up.URL+"/v1", nil)
			s, err := f.g.Open("job", Budget{MaxTokens: budget}, nil)
			if err != nil {
				t.Fatal(err)
			}
			statuses := make([]int, parallel)
			var wg sync.WaitGroup
			for i := range parallel {
				wg.Go(func() {
					defer up.clientDone()
					req, _ := http.NewRequest(http.MethodPost, "http://gateway/v1/chat/completions", strings.NewReader(tt.body))
					req.Header.Set("Authorization", "Bearer "+s.Token())
					resp, err := f.client.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
					statuses[i] = resp.StatusCode
				})
			}
			wg.Wait()
			ok, refused := 0, 0
			for _, st := range statuses {
				switch st {
				case http.StatusOK:
					ok++
				case http.StatusTooManyRequests:
					refused++
				}
			}
			up.mu.Lock()
			forwarded, reported, maxIn := len(up.bodies), up.reported, up.maxInflight
			up.mu.Unlock()
			t.Logf("budget %d, %d parallel: forwarded %d, answered 200 %d, refused 429 %d, upstream-reported tokens %d, metered %d, upstream max in flight %d",
				budget, parallel, forwarded, ok, refused, reported, s.Usage().Total(), maxIn)
			if reported > budget || s.Usage().Total() > budget {
				t.Errorf("the upstream spent %d tokens and the gateway metered %d against a budget of %d", reported, s.Usage().Total(), budget)
			}
			if s.Usage().Total() != reported {
				t.Errorf("metered %d tokens, the upstream reported %d", s.Usage().Total(), reported)
			}
			if r := reservedOf(s); r != 0 {
				t.Errorf("%d tokens still reserved after every request ended", r)
			}
			if maxIn > DefaultMaxInFlight {
				t.Errorf("the upstream held %d requests of one job at once, over the cap of %d", maxIn, DefaultMaxInFlight)
			}
			if forwarded == 0 || ok != forwarded || ok+refused != parallel {
				t.Errorf("forwarded %d, 200 %d, 429 %d of %d: every request is either forwarded and answered or refused with 429", forwarded, ok, refused, parallel)
			}
		})
	}
}

// reservedOf is what a session's requests in flight hold.
func reservedOf(s *Session) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reserved
}

// A job's requests beyond MaxInFlight wait for a slot instead of reaching the upstream, and go
// on when one frees up.
func TestGatewayCapsAJobsRequestsInFlight(t *testing.T) {
	arrived, release := make(chan struct{}, 8), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, chatAnswerBody)
	}))
	t.Cleanup(up.Close)
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	t.Cleanup(open) // before up.Close, which waits for the held requests
	f := serveGateway(t, up.URL+"/v1", func(c *Config) { c.MaxInFlight = 2 })
	waiting := make(chan struct{}, 8)
	f.g.onWait = func() { waiting <- struct{}{} }
	s, err := f.g.Open("job", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	statuses := make([]int, 3)
	for i := range statuses {
		wg.Go(func() { statuses[i] = f.do(t, http.MethodPost, "/v1/chat/completions", s.Token(), chatBody).Status })
	}
	// Two reach the upstream and one waits, in whatever order; a third arrival means no cap.
	arrivals, waits := 0, 0
	for arrivals < 2 || waits < 1 {
		select {
		case <-arrived:
			if arrivals++; arrivals > 2 {
				t.Fatal("a third request of the job reached the upstream while two were in flight (MaxInFlight 2)")
			}
		case <-waiting:
			waits++
		}
	}
	open() // the waiting one gets a slot, and the upstream answers everything now
	wg.Wait()
	if len(arrived) != 1 || !slices.Equal(statuses, []int{200, 200, 200}) {
		t.Errorf("after the release: %d more arrivals, statuses %v; want 1 and all 200", len(arrived), statuses)
	}
}

// TestGatewayClampsAFixedMaxOutputToTheBudget: a CLI that always asks for a large max output
// (Claude Code sends 32,000) is forwarded with what the budget leaves as its max, not refused;
// once the budget is spent, the 429 tells the SDKs not to retry.
func TestGatewayClampsAFixedMaxOutputToTheBudget(t *testing.T) {
	up := newCaptureUpstream(t, func(string) (string, string) {
		return "application/json", `{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":400,"completion_tokens":600}}`
	})
	f := serveGateway(t, up.URL+"/v1", nil)
	s, err := f.g.Open("job", Budget{MaxTokens: 1000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"max_tokens":32000,"messages":[{"role":"user","content":"hi"}]}`
	if r := f.do(t, http.MethodPost, "/v1/chat/completions", s.Token(), body); r.Status != http.StatusOK {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	est := int64((len(body) + bytesPerToken - 1) / bytesPerToken)
	if got := up.last(t).body["max_tokens"]; got != float64(1000-est) {
		t.Errorf("max_tokens %v upstream, want what the budget left: %d", got, 1000-est)
	}
	r := f.do(t, http.MethodPost, "/v1/chat/completions", s.Token(), body)
	if r.Status != http.StatusTooManyRequests || r.Header.Get("X-Should-Retry") != "false" {
		t.Errorf("past the budget: %d, x-should-retry %q; want 429 and false", r.Status, r.Header.Get("X-Should-Retry"))
	}
}
