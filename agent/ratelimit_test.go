package agent

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/skillfleet/skillfleet/agent/agenttest"
)

// memStore is a RateStore in memory with the store's arithmetic; broken makes every call fail,
// hang makes every call wait for its context.
type memStore struct {
	mu       sync.Mutex
	tats     map[string]time.Time
	defers   map[string]time.Time
	booked   map[string]float64
	probes   map[string]int
	calls    int
	broken   bool
	hang     bool
	failures int
}

func newMemStore() *memStore {
	return &memStore{tats: map[string]time.Time{}, defers: map[string]time.Time{}, booked: map[string]float64{}, probes: map[string]int{}}
}

func (s *memStore) fail(ctx context.Context) error {
	s.calls++
	if s.hang {
		s.mu.Unlock()
		<-ctx.Done()
		s.mu.Lock()
		s.failures++
		return ctx.Err()
	}
	if s.broken {
		s.failures++
		return errors.New("nats: no responders available for request")
	}
	return nil
}

func (s *memStore) Reserve(ctx context.Context, key string, interval time.Duration, burst int, cost float64, now time.Time) (time.Duration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fail(ctx); err != nil {
		return 0, err
	}
	s.booked[key] += cost
	return gcra(s.tats, key, interval, burst, cost, now), nil
}

// Probe books every probe at once (queue's RateStore orders them; fleet's tests run it).
func (s *memStore) Probe(ctx context.Context, key string, _ time.Time) (time.Duration, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fail(ctx); err != nil {
		return 0, false, err
	}
	s.probes[key]++
	return 0, true, nil
}

func (s *memStore) Defer(ctx context.Context, key string, until, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fail(ctx); err != nil {
		return err
	}
	s.defers[key] = until
	if until.After(s.tats[key]) {
		s.tats[key] = until
	}
	return nil
}

// fakeClock is a clock that moves only when slept on.
type fakeClock struct {
	mu     sync.Mutex
	t      time.Time
	slept  []time.Duration
	frozen bool // sleeps are recorded, the clock stays
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slept = append(c.slept, d)
	if !c.frozen {
		c.t = c.t.Add(d)
	}
	return ctx.Err()
}

func (c *fakeClock) sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.slept...)
}

// paced is d stretched by the gate's headroom.
func paced(d time.Duration) time.Duration { return time.Duration(float64(d) * paceHeadroom) }

func newGate(store RateStore, lim RateLimit, clk *fakeClock, log *zap.Logger) *RateGate {
	deps := RateGateDeps{Now: clk.now, Sleep: clk.sleep, Log: log}
	if store != nil {
		deps.Store = store
	}
	return NewRateGate("ep", lim, deps)
}

func TestRateGatePacesRequests(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store bool
	}{{"through the store", true}, {"without a store", false}} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{t: testNow, frozen: true}
			var store RateStore
			if tc.store {
				store = newMemStore()
			}
			g := newGate(store, RateLimit{RequestsPerMinute: 120}, clk, nil)
			for range 4 {
				if err := g.Wait(context.Background(), 0); err != nil {
					t.Fatal(err)
				}
			}
			// 120 a minute is one each 500 ms (510 with the headroom); the first goes at once,
			// and no sleep is asked for it.
			want := []time.Duration{paced(500 * time.Millisecond), paced(time.Second), paced(1500 * time.Millisecond)}
			if got := clk.sleeps(); !equalDurations(got, want) {
				t.Errorf("sleeps %v, want %v", got, want)
			}
		})
	}
}

// TestRateGateTokens: tokens are booked at their estimate and paid after, Settle books the
// difference, and a refund gives back at most the estimate.
func TestRateGateTokens(t *testing.T) {
	clk := &fakeClock{t: testNow, frozen: true}
	store := newMemStore()
	g := newGate(store, RateLimit{TokensPerMinute: 60000}, clk, nil) // a token a millisecond
	ctx := context.Background()
	if err := g.Wait(ctx, 2000); err != nil {
		t.Fatal(err)
	}
	if got := clk.sleeps(); len(got) != 0 {
		t.Fatalf("the first request waited %v: its tokens are paid after", got)
	}
	g.Settle(1500, 2000) // 500 come back
	if err := g.Wait(ctx, 100); err != nil {
		t.Fatal(err)
	}
	if got, want := clk.sleeps(), []time.Duration{paced(1500 * time.Millisecond)}; !equalDurations(got, want) {
		t.Fatalf("sleeps %v, want %v (the first request's 1,500 tokens)", got, want)
	}
	g.Settle(0, 100)     // failed without an answer: all 100 back
	g.Settle(-5, 10_000) // a refund beyond what was booked: only the estimate, and never past now
	if got := store.booked["ep.tokens"]; got != 2000-500+100-100-10_000 {
		t.Errorf("booked %v tokens", got)
	}
	if err := g.Wait(ctx, 100); err != nil {
		t.Fatal(err)
	}
	if got := clk.sleeps(); len(got) != 1 {
		t.Errorf("sleeps %v: the budget was given back down to now, the next request goes at once", got)
	}
}

func TestRateGateObserve(t *testing.T) {
	reset := testNow.Add(20 * time.Second).Format(time.RFC3339)
	for _, tc := range []struct {
		name   string
		status int
		header http.Header
		want   time.Duration // 0: no hold
	}{
		{"429 Retry-After", 429, http.Header{"Retry-After": {"3"}}, 3 * time.Second},
		{"529 Retry-After-Ms", 529, http.Header{"Retry-After-Ms": {"250"}}, 250 * time.Millisecond},
		{"Retry-After capped", 429, http.Header{"Retry-After": {"3600"}}, time.Minute},
		{"Retry-After on a 200 is not a hold", 200, http.Header{"Retry-After": {"3"}}, 0},
		{"Retry-After on a 503 is the retry's, not the fleet's", 503, http.Header{"Retry-After": {"3"}}, 0},
		{"OpenAI requests exhausted", 200, http.Header{"X-Ratelimit-Remaining-Requests": {"0"}, "X-Ratelimit-Reset-Requests": {"120ms"}}, 120 * time.Millisecond},
		{"OpenAI tokens exhausted", 200, http.Header{"X-Ratelimit-Remaining-Tokens": {"0"}, "X-Ratelimit-Reset-Tokens": {"6m0s"}}, time.Minute},
		{"OpenAI the later of two", 429, http.Header{"X-Ratelimit-Remaining-Requests": {"0"}, "X-Ratelimit-Reset-Requests": {"1s"},
			"X-Ratelimit-Remaining-Tokens": {"0"}, "X-Ratelimit-Reset-Tokens": {"1.5s"}, "Retry-After": {"1"}}, 1500 * time.Millisecond},
		{"OpenAI some remaining", 200, http.Header{"X-Ratelimit-Remaining-Requests": {"4"}, "X-Ratelimit-Reset-Requests": {"1s"}}, 0},
		{"OpenAI a reset it cannot read", 200, http.Header{"X-Ratelimit-Remaining-Requests": {"0"}, "X-Ratelimit-Reset-Requests": {"soon"}}, 0},
		{"Anthropic requests", 200, http.Header{"Anthropic-Ratelimit-Requests-Remaining": {"0"}, "Anthropic-Ratelimit-Requests-Reset": {reset}}, 20 * time.Second},
		{"Anthropic input tokens", 429, http.Header{"Anthropic-Ratelimit-Input-Tokens-Remaining": {"0"}, "Anthropic-Ratelimit-Input-Tokens-Reset": {reset}}, 20 * time.Second},
		{"Anthropic output tokens", 200, http.Header{"Anthropic-Ratelimit-Output-Tokens-Remaining": {"0"}, "Anthropic-Ratelimit-Output-Tokens-Reset": {reset}}, 20 * time.Second},
		{"Anthropic tokens", 200, http.Header{"Anthropic-Ratelimit-Tokens-Remaining": {"0"}, "Anthropic-Ratelimit-Tokens-Reset": {reset}}, 20 * time.Second},
		{"Anthropic a reset past", 200, http.Header{"Anthropic-Ratelimit-Tokens-Remaining": {"0"}, "Anthropic-Ratelimit-Tokens-Reset": {testNow.Add(-time.Second).Format(time.RFC3339)}}, 0},
		{"Anthropic some remaining", 200, http.Header{"Anthropic-Ratelimit-Requests-Remaining": {"10"}, "Anthropic-Ratelimit-Requests-Reset": {reset}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{t: testNow, frozen: true}
			store := newMemStore()
			g := newGate(store, RateLimit{}, clk, nil)
			g.Observe(tc.status, tc.header)
			until, held := store.defers["ep.requests"]
			switch {
			case tc.want == 0 && held:
				t.Fatalf("held until %s, want no hold", until)
			case tc.want != 0 && until.Sub(testNow) != tc.want:
				t.Fatalf("held %s (held %v), want %s", until.Sub(testNow), held, tc.want)
			}
			// Whoever waits next, in this process or another, waits out the hold.
			if err := g.Wait(context.Background(), 0); err != nil {
				t.Fatal(err)
			}
			var want []time.Duration
			if tc.want != 0 {
				want = []time.Duration{tc.want}
			}
			if got := clk.sleeps(); !equalDurations(got, want) {
				t.Errorf("next Wait slept %v, want %v", got, want)
			}
		})
	}
}

// TestRateGateStoreOutage: while the store fails, or does not answer within its bound, the gate
// paces at the configured rate on its own, logs the outage once, asks the store again a while
// later and logs its return.
func TestRateGateStoreOutage(t *testing.T) {
	for _, mode := range []string{"error", "no answer"} {
		t.Run(mode, func(t *testing.T) {
			clk := &fakeClock{t: testNow, frozen: true}
			store := newMemStore()
			store.broken, store.hang = mode == "error", mode == "no answer"
			core, logs := observer.New(zapcore.InfoLevel)
			g := NewRateGate("ep", RateLimit{RequestsPerMinute: 60}, RateGateDeps{Store: store, StoreTimeout: time.Millisecond,
				Now: clk.now, Sleep: clk.sleep, Log: zap.New(core)})
			for range 5 {
				if err := g.Wait(context.Background(), 0); err != nil {
					t.Fatal(err)
				}
			}
			want := []time.Duration{paced(time.Second), paced(2 * time.Second), paced(3 * time.Second), paced(4 * time.Second)}
			if got := clk.sleeps(); !equalDurations(got, want) {
				t.Errorf("sleeps %v, want %v: the configured rate, 60 a minute", got, want)
			}
			if store.calls != 1 {
				t.Errorf("the store was asked %d times during the outage, want once until the retry", store.calls)
			}
			// Still down when asked again: no second log line.
			clk.t = clk.t.Add(storeRetryAfter)
			if err := g.Wait(context.Background(), 0); err != nil {
				t.Fatal(err)
			}
			if store.calls != 2 {
				t.Errorf("the store was asked %d times, want again after %s", store.calls, storeRetryAfter)
			}
			// Back: asked after the next retry, used, and logged once.
			store.mu.Lock()
			store.broken, store.hang = false, false
			store.mu.Unlock()
			clk.t = clk.t.Add(storeRetryAfter)
			for range 2 {
				if err := g.Wait(context.Background(), 0); err != nil {
					t.Fatal(err)
				}
			}
			if store.calls != 4 || store.booked["ep.requests"] != 2 {
				t.Errorf("after the outage: %d calls, %v booked in the store; want 4 and 2", store.calls, store.booked["ep.requests"])
			}
			var msgs []string
			for _, e := range logs.All() {
				msgs = append(msgs, e.Level.String()+": "+e.Message)
			}
			wantLogs := []string{"warn: rate store unreachable; pacing this process alone at the configured rate", "info: rate store reachable again; pacing with the fleet"}
			if len(msgs) != len(wantLogs) || msgs[0] != wantLogs[0] || msgs[1] != wantLogs[1] {
				t.Errorf("logs %q, want %q", msgs, wantLogs)
			}
		})
	}
}

// TestRateGateHoldsWithoutAStoreToo: a 429's Retry-After holds this process's next request
// when the gate has no store.
func TestRateGateHoldsWithoutAStoreToo(t *testing.T) {
	clk := &fakeClock{t: testNow, frozen: true}
	g := newGate(nil, RateLimit{}, clk, nil)
	g.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"2"}})
	if err := g.Wait(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if got := clk.sleeps(); !equalDurations(got, []time.Duration{2 * time.Second}) {
		t.Errorf("sleeps %v, want [2s]", got)
	}
}

func TestNilRateGate(t *testing.T) {
	var g *RateGate
	if err := g.Wait(context.Background(), 100); err != nil {
		t.Fatal(err)
	}
	g.Settle(1, 2)
	g.Observe(429, http.Header{"Retry-After": {"1"}})
}

// TestClientWaitsOnItsRateGate: the client waits on its gate before each attempt, books the
// conversation's estimated tokens and settles them to the answer's usage, and a 429's
// Retry-After becomes a hold in the shared store.
func TestClientWaitsOnItsRateGate(t *testing.T) {
	srv := agenttest.NewScript(t,
		agenttest.Fail(http.StatusTooManyRequests, "Retry-After", "2"),
		agenttest.Text("one", 300, 20),
		agenttest.Text("two", 300, 20),
	)
	clk := &fakeClock{t: testNow}
	store := newMemStore()
	gate := NewRateGate("test", RateLimit{RequestsPerMinute: 60, TokensPerMinute: 600_000}, RateGateDeps{Store: store, Now: clk.now, Sleep: clk.sleep})
	c, err := NewClient(Endpoint{Name: "test", BaseURL: srv.BaseURL(), Model: "m"}, ClientDeps{Now: clk.now, Sleep: clk.sleep, Rate: gate})
	if err != nil {
		t.Fatal(err)
	}
	conv := Conversation{Messages: []Message{{Role: RoleUser, Text: string(make([]byte, 400))}}, MaxOutput: 100}
	if est := estimateTokens(conv); est != 200 {
		t.Fatalf("estimate %d, want 400/4 + 100", est)
	}
	for i := range 2 {
		if _, _, err := c.Converse(context.Background(), conv); err != nil {
			t.Fatalf("Converse %d: %v", i, err)
		}
	}
	if until := store.defers["test.requests"]; !until.Equal(testNow.Add(2 * time.Second)) {
		t.Errorf("the 429 held the fleet until %s, want now+2s", until)
	}
	// Three attempts booked; two answers of 320 tokens settled, the refused one given back.
	if got := store.booked["test.requests"]; got != 3 {
		t.Errorf("%v requests booked, want 3", got)
	}
	if got := store.booked["test.tokens"]; got != 640 {
		t.Errorf("%v tokens booked, want 640", got)
	}
	// The retry slept the Retry-After; the gate then let it through at once (the hold was
	// over), booking a second (60 a minute) widened by the refusal, and held the next request
	// that long.
	widened := time.Duration(float64(paced(time.Second)) * (1 + widenStep))
	if got, want := clk.sleeps(), []time.Duration{2 * time.Second, widened}; !equalDurations(got, want) {
		t.Errorf("sleeps %v, want %v", got, want)
	}
}

// TestRateGateAnnouncedLimit: without a configured rate, the gate paces requests to the limit
// an answer announces, per minute, whichever provider's header names it; a value that is no
// limit is ignored, and a configured rate wins.
func TestRateGateAnnouncedLimit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lim    RateLimit
		header http.Header
		pace   time.Duration // between requests after the answer; 0: not paced
	}{
		{"OpenAI", RateLimit{}, http.Header{"X-Ratelimit-Limit-Requests": {"120"}}, paced(500 * time.Millisecond)},
		{"Anthropic", RateLimit{}, http.Header{"Anthropic-Ratelimit-Requests-Limit": {"60"}}, paced(time.Second)},
		{"Gemini announces nothing", RateLimit{}, http.Header{"Content-Type": {"application/json"}}, 0},
		{"zero", RateLimit{}, http.Header{"X-Ratelimit-Limit-Requests": {"0"}}, 0},
		{"negative", RateLimit{}, http.Header{"X-Ratelimit-Limit-Requests": {"-120"}}, 0},
		{"garbage", RateLimit{}, http.Header{"X-Ratelimit-Limit-Requests": {"plenty"}}, 0},
		{"beyond any limit", RateLimit{}, http.Header{"X-Ratelimit-Limit-Requests": {"1000001"}}, 0},
		{"a configured rate wins", RateLimit{RequestsPerMinute: 60}, http.Header{"X-Ratelimit-Limit-Requests": {"120"}}, paced(time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{t: testNow, frozen: true}
			g := newGate(newMemStore(), tc.lim, clk, nil)
			g.Observe(http.StatusOK, tc.header)
			for range 3 {
				if err := g.Wait(context.Background(), 0); err != nil {
					t.Fatal(err)
				}
			}
			var want []time.Duration
			if tc.pace > 0 {
				want = []time.Duration{tc.pace, 2 * tc.pace}
			}
			if got := clk.sleeps(); !equalDurations(got, want) {
				t.Errorf("sleeps %v, want %v", got, want)
			}
		})
	}
}

// TestRateGateAnnouncedTokens: an announced token limit paces tokens as a configured one does.
func TestRateGateAnnouncedTokens(t *testing.T) {
	for _, name := range []string{"X-Ratelimit-Limit-Tokens", "Anthropic-Ratelimit-Tokens-Limit"} {
		t.Run(name, func(t *testing.T) {
			clk := &fakeClock{t: testNow, frozen: true}
			g := newGate(newMemStore(), RateLimit{}, clk, nil)
			g.Observe(http.StatusOK, http.Header{name: {"60000"}}) // a token a millisecond
			for _, est := range []int64{2000, 100} {
				if err := g.Wait(context.Background(), est); err != nil {
					t.Fatal(err)
				}
			}
			if got, want := clk.sleeps(), []time.Duration{paced(2 * time.Second)}; !equalDurations(got, want) {
				t.Errorf("sleeps %v, want %v (the first request's 2,000 tokens)", got, want)
			}
		})
	}
}

// TestRateGateProbes: while the limit is unknown, one request goes at once and one a second
// after; once an answer is read, announcing nothing, requests go unpaced.
func TestRateGateProbes(t *testing.T) {
	clk := &fakeClock{t: testNow}
	g := newGate(newMemStore(), RateLimit{}, clk, nil)
	for range 2 {
		if err := g.Wait(context.Background(), 0); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := clk.sleeps(), []time.Duration{probeEvery}; !equalDurations(got, want) {
		t.Fatalf("before any answer: sleeps %v, want %v", got, want)
	}
	store := g.store.(*memStore)
	if store.probes["ep.requests"] != 2 || store.booked["ep.requests"] != 0 {
		t.Fatalf("%d probes, %v requests booked; want 2 probes booked as probes, nothing else", store.probes["ep.requests"], store.booked["ep.requests"])
	}
	g.Observe(http.StatusOK, http.Header{})
	for range 3 {
		if err := g.Wait(context.Background(), 0); err != nil {
			t.Fatal(err)
		}
	}
	if got := clk.sleeps(); len(got) != 1 {
		t.Errorf("after an answer announcing nothing: sleeps %v, want none more", got)
	}
}

// TestRateGateProbeEndsWithTheAnswer: a request held back while the limit is unknown goes as
// soon as an answer is read, not when its second is up.
func TestRateGateProbeEndsWithTheAnswer(t *testing.T) {
	asleep := make(chan struct{}, 1)
	g := NewRateGate("ep", RateLimit{}, RateGateDeps{Store: newMemStore(), Now: func() time.Time { return testNow },
		Sleep: func(ctx context.Context, d time.Duration) error {
			asleep <- struct{}{}
			<-ctx.Done() // a second that never ends: only the answer can wake it
			return ctx.Err()
		}})
	if err := g.Wait(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- g.Wait(context.Background(), 0) }()
	<-asleep
	g.Observe(http.StatusOK, http.Header{"X-Ratelimit-Limit-Requests": {"6000"}})
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the held request was not woken by the answer")
	}
}

// answerStore answers every Reserve with one wait, as a store holding a poisoned value might.
type answerStore struct{ wait time.Duration }

func (s answerStore) Reserve(context.Context, string, time.Duration, int, float64, time.Time) (time.Duration, error) {
	return s.wait, nil
}
func (answerStore) Defer(context.Context, string, time.Time, time.Time) error { return nil }
func (s answerStore) Probe(context.Context, string, time.Time) (time.Duration, bool, error) {
	return s.wait, true, nil
}

// TestRateGateBoundsWaits: whatever the store says, a request waits at most MaxRateWait; and
// no request books more than a minute of the token budget, so none pushes the shared budget
// further than the store takes as a fleet's.
func TestRateGateBoundsWaits(t *testing.T) {
	clk := &fakeClock{t: testNow, frozen: true}
	g := newGate(answerStore{wait: 10 * time.Hour}, RateLimit{RequestsPerMinute: 60}, clk, nil)
	if err := g.Wait(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if got, want := clk.sleeps(), []time.Duration{MaxRateWait}; !equalDurations(got, want) {
		t.Errorf("sleeps %v, want %v", got, want)
	}

	store := newMemStore()
	g = newGate(store, RateLimit{TokensPerMinute: 60000}, clk, nil)
	if err := g.Wait(context.Background(), 1_000_000); err != nil {
		t.Fatal(err)
	}
	if got := store.booked["ep.tokens"]; got != 60000 {
		t.Errorf("a request of a million tokens booked %v, want a minute's 60,000", got)
	}
	g.Settle(1_000_000, 1_000_000) // as booked: nothing to settle
	g.Settle(10, 1_000_000)        // 10 used: the rest of the minute's booking back
	if got := store.booked["ep.tokens"]; got != 10 {
		t.Errorf("booked %v after settling, want 10", got)
	}
}

// TestRateGateWidensAfterRefusals: each refusal widens the pace by widenStep, up to maxStretch;
// each answer narrows it by narrowStep, never below the headroom alone.
func TestRateGateWidensAfterRefusals(t *testing.T) {
	for _, tc := range []struct {
		name     string
		statuses []int
		stretch  float64
	}{
		{"a refusal", []int{429}, 1 + widenStep},
		{"an overload", []int{529}, 1 + widenStep},
		{"bounded", []int{429, 429, 429, 429, 429, 429, 429, 429, 429, 429}, maxStretch},
		{"an answer narrows", []int{429, 200}, 1 + widenStep - narrowStep},
		{"never below the headroom", []int{200, 200}, 1},
		{"other errors change nothing", []int{500, 400}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{t: testNow, frozen: true}
			g := newGate(newMemStore(), RateLimit{RequestsPerMinute: 60}, clk, nil)
			for _, st := range tc.statuses {
				g.Observe(st, http.Header{})
			}
			for range 2 {
				if err := g.Wait(context.Background(), 0); err != nil {
					t.Fatal(err)
				}
			}
			want := time.Duration(float64(paced(time.Second)) * tc.stretch)
			if got := clk.sleeps(); len(got) != 1 || got[0]-want > time.Microsecond || want-got[0] > time.Microsecond {
				t.Errorf("sleeps %v, want [%s]", got, want)
			}
		})
	}
}

// heldProbes answers every probe to ask again after wait, as a store holding a probe that is
// never priced would (or a poisoned one).
type heldProbes struct {
	answerStore
	probes int
}

func (*heldProbes) Reserve(context.Context, string, time.Duration, int, float64, time.Time) (time.Duration, error) {
	return 0, nil
}

func (s *heldProbes) Probe(context.Context, string, time.Time) (time.Duration, bool, error) {
	s.probes++
	return s.wait, false, nil
}

// TestRateGateProbeWaitsAtMostMaxRateWait: a store that keeps a probe waiting holds it at
// most MaxRateWait in all; the request then goes unbooked.
func TestRateGateProbeWaitsAtMostMaxRateWait(t *testing.T) {
	clk := &fakeClock{t: testNow}
	store := &heldProbes{answerStore: answerStore{wait: 25 * time.Second}}
	g := NewRateGate("ep", RateLimit{}, RateGateDeps{Store: store, Now: clk.now, Sleep: clk.sleep})
	if err := g.Wait(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if got, want := clk.sleeps(), []time.Duration{25 * time.Second, 25 * time.Second, 10 * time.Second}; !equalDurations(got, want) {
		t.Errorf("sleeps %v, want %v", got, want)
	}
	if store.probes != 3 {
		t.Errorf("asked %d times, want 3", store.probes)
	}
}
