package agent

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// RateStore is the rate budget a fleet shares (queue's RateStore, in a fleet): per key, the
// generic cell rate algorithm's state, booked by every worker of every process alike.
type RateStore interface {
	// Reserve books cost cells of key's budget of one cell per interval (burst of them at
	// once) and says how long to wait before sending. A negative cost gives cells back;
	// interval 0 books nothing and reads what Defer set.
	Reserve(ctx context.Context, key string, interval time.Duration, burst int, cost float64, now time.Time) (time.Duration, error)
	// Defer holds key's budget until at least until (now is the caller's clock).
	Defer(ctx context.Context, key string, until, now time.Time) error
	// Probe books one request of key's budget for a caller that does not know its interval
	// and says how long to wait before sending it; booked false says to ask again after wait
	// instead (queue.RateStore.Probe).
	Probe(ctx context.Context, key string, now time.Time) (wait time.Duration, booked bool, err error)
}

// RateLimit is an endpoint's configured rate: requests and tokens per minute (0: none). A
// gate with neither paces to the limit its endpoint announces, if it announces one
// (RateGate.Observe).
type RateLimit struct {
	RequestsPerMinute int
	TokensPerMinute   int
}

// RateGateDeps are a RateGate's collaborators; zero fields get working defaults.
type RateGateDeps struct {
	// Store is the fleet's shared budget; nil paces this process alone at the configured rate.
	Store RateStore
	// StoreTimeout bounds one call to the store (default 1 s); past it, or on an error, the
	// gate paces on its own at the configured rate until the store answers again.
	StoreTimeout time.Duration
	// Log gets the store's outages, once each (default: no logging).
	Log *zap.Logger
	// Now and Sleep are the clock (defaults: time.Now and a timer); tests inject theirs.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

const (
	// paceHeadroom stretches the configured intervals by 2%: paced at exactly the limit, a
	// request that a millisecond less of network or scheduling delay brings closer to the one
	// two before it than the provider's window is refused (against a window of 2 a second,
	// about a third of them were). 2% of the interval absorbs that jitter for 2% of the rate.
	paceHeadroom        = 1.02
	defaultStoreTimeout = time.Second
	// probeEvery is how often a process lets a request go while its endpoint's limit is still
	// unknown (no rate_limit, no answer read yet): each is a chance for an answer to announce
	// the limit, and the start of a fleet cannot burst past it before one has.
	probeEvery = time.Second
	// The most an announced limit may say, as a configured one (config.RateLimit): beyond
	// them a value is not a limit to pace to.
	maxAnnouncedRequests = 1_000_000
	maxAnnouncedTokens   = 1_000_000_000
	// A refusal (429, 529) while pacing widens this process's intervals by widenStep, up to
	// maxStretch; each answer narrows them by narrowStep, back to the headroom alone. Paced
	// at the limit less 2%, a process the machine's load delays by more than 2% of two
	// intervals sends into the window of the request two before it: on 2 cores shared with a
	// load of 20, 8 of 100 were refused. Refusals waste their booking as much as the slack
	// would: a few percent of slack once refusals start costs less than the refusals.
	widenStep  = 0.04
	narrowStep = 0.002
	maxStretch = 1.2
	// storeRetryAfter is how long the gate paces on its own after the store failed before it
	// asks the store again: an outage costs each request nothing once it is noticed.
	storeRetryAfter = 5 * time.Second
)

// MaxRateWait is the longest a gate makes a request wait, whatever its budget says: the longest
// Retry-After the model client honours. The fleet's budget is written by every worker, so
// no value in it, and no deferral, may hold a request past this (queue.RateMaxWait is the
// same bound in the store).
const MaxRateWait = maxRetryAfter

// RateGate paces one endpoint's requests to its configured rate (less a 2% headroom for the
// network's jitter), shared by the whole fleet through a RateStore, and holds every worker back when the provider says its limit is
// reached (Observe). Without a configured rate, it paces to the limit the endpoint announces
// on its answers (Observe), and until the first answer lets one request a second through,
// booked in the shared budget as a probe (RateStore.Probe) so that paced requests make room
// for it. No
// request waits longer than MaxRateWait. Wait before each attempt, Settle once its tokens are
// known. A nil gate lets everything through. It is safe for concurrent use.
type RateGate struct {
	reqKey, tokKey string
	// reqInterval and tokInterval are the time one request and one token are worth at the
	// configured rate (0: no limit of that kind); configured says there is one.
	reqInterval, tokInterval time.Duration
	configured               bool
	store                    RateStore
	timeout                  time.Duration
	log                      *zap.Logger
	now                      func() time.Time
	sleep                    func(context.Context, time.Duration) error

	// announcedReq and announcedTok are the same from the limit the endpoint last announced
	// (nanoseconds, 0: none), used when nothing is configured.
	announcedReq, announcedTok atomic.Int64
	// answered is closed by the first answer read (Observe): from then on the announced limit,
	// or its absence, is known.
	answered     chan struct{}
	answeredOnce sync.Once

	// storeMu serialises this process's calls to the store: its callers then never lose a
	// compare-and-swap to each other, only to other processes.
	storeMu sync.Mutex

	mu sync.Mutex
	// local is the gate's own budget, used while the store cannot be reached.
	local map[string]time.Time
	// down is set from the first failed store call of an outage until one succeeds; retryAt is
	// when the store is asked again.
	down    bool
	retryAt time.Time
	// probeAt is when the next request may go while the limit is unknown.
	probeAt time.Time
	// wakes are the cancels of the sleeps that the first answer ends (sleepUnlessAnswered):
	// called by Observe itself, so that a sleep is over when Observe returns.
	wakes map[*context.CancelFunc]struct{}
	// stretch widens the intervals after refusals (1: the headroom alone).
	stretch float64
}

// NewRateGate makes the gate of the endpoint named endpoint (its budget keys are
// endpoint.requests and endpoint.tokens in the store).
func NewRateGate(endpoint string, lim RateLimit, deps RateGateDeps) *RateGate {
	if deps.Log == nil {
		deps.Log = zap.NewNop()
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Sleep == nil {
		deps.Sleep = sleepCtx
	}
	if deps.StoreTimeout <= 0 {
		deps.StoreTimeout = defaultStoreTimeout
	}
	g := &RateGate{
		reqKey: endpoint + ".requests", tokKey: endpoint + ".tokens",
		store: deps.Store, timeout: deps.StoreTimeout, now: deps.Now, sleep: deps.Sleep,
		log:      deps.Log.With(zap.String("endpoint", endpoint)),
		local:    map[string]time.Time{},
		answered: make(chan struct{}),
		wakes:    map[*context.CancelFunc]struct{}{},
		stretch:  1,
	}
	g.reqInterval = perMinute(lim.RequestsPerMinute)
	g.tokInterval = perMinute(lim.TokensPerMinute)
	g.configured = lim != (RateLimit{})
	return g
}

// perMinute is the time one of n a minute is worth, stretched by the headroom; 0 for n ≤ 0.
func perMinute(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	// At a billion tokens a minute a token is worth 60 ns: never let it round to nothing.
	return max(time.Duration(float64(time.Minute)*paceHeadroom/float64(n)), 1)
}

// intervals are the request and token intervals paced to: the configured ones, else the
// announced ones.
func (g *RateGate) intervals() (req, tok time.Duration) {
	req, tok = g.reqInterval, g.tokInterval
	if !g.configured {
		req, tok = time.Duration(g.announcedReq.Load()), time.Duration(g.announcedTok.Load())
	}
	g.mu.Lock()
	s := g.stretch
	g.mu.Unlock()
	return time.Duration(float64(req) * s), time.Duration(float64(tok) * s)
}

// adapt widens the intervals after a refusal and narrows them after an answer.
func (g *RateGate) adapt(status int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case status == http.StatusTooManyRequests || status == statusOverloaded:
		g.stretch = min(g.stretch+widenStep, maxStretch)
	case status < 300:
		g.stretch = max(g.stretch-narrowStep, 1)
	}
}

// minuteOf is how many tokens a minute of the budget holds at interval (at least 1): the most
// one request books, so that no booking reaches further than the store takes as a fleet's
// (queue.RateStore); a request larger than that cannot be served within the limit anyway.
func minuteOf(interval time.Duration) int64 {
	return max(int64(float64(time.Minute)*paceHeadroom/float64(interval)), 1)
}

// Wait books one request and estimatedTokens tokens and waits until the budget allows them to
// be sent, or ctx ends. Requests go one at a time fleet-wide (a burst of one, so the fleet
// paces evenly); tokens are booked when sent and paid for after, so a request waits only for
// the tokens booked before it. Without a store, or while it cannot be reached, the gate paces
// this process alone at the configured rate.
func (g *RateGate) Wait(ctx context.Context, estimatedTokens int64) error {
	if g == nil {
		return nil
	}
	if booked, err := g.probe(ctx); err != nil || booked {
		return err
	}
	now := g.now()
	reqInterval, tokInterval := g.intervals()
	// A request is always checked against its budget, limited or not: a deferral (Observe)
	// holds it.
	wait := g.reserve(ctx, g.reqKey, reqInterval, 1, 1, now)
	if tokInterval > 0 && estimatedTokens > 0 {
		cost := min(estimatedTokens, minuteOf(tokInterval))
		burst := int(min(cost, math.MaxInt32))
		wait = max(wait, g.reserve(ctx, g.tokKey, tokInterval, burst, float64(cost), now))
	}
	// The store bounds its waits too; this bound holds whatever store, or local budget, the
	// gate paces on.
	wait = min(wait, MaxRateWait)
	if wait <= 0 {
		return ctx.Err()
	}
	return g.sleep(ctx, wait)
}

// probe holds a request back while the endpoint's limit is unknown (no rate_limit, and no
// answer read yet): one request goes at once, then one a second, until an answer says what
// the limit is, or that there is none; the others wait for that answer. Without it, every
// slot of every worker of a fleet starting up would send before anyone could know. With a
// store, the request is booked there (RateStore.Probe): after the paced requests of the
// workers that know the limit, in the slot of the next one; or, before any, one a second for
// the whole fleet, never two at once, the first paced booking after it starting one interval
// after it. booked says the request was booked and its wait is over; it is then sent without
// booking again. A probe waits for the store at most MaxRateWait in all: past it, or while the
// store is down, it goes unbooked, one a second in this process.
func (g *RateGate) probe(ctx context.Context) (booked bool, err error) {
	if g.configured {
		return false, nil
	}
	var deadline time.Time
	for {
		select {
		case <-g.answered:
			return false, nil
		default:
		}
		now := g.now()
		if deadline.IsZero() {
			deadline = now.Add(MaxRateWait)
		}
		g.mu.Lock()
		if now.Before(g.probeAt) {
			d := g.probeAt.Sub(now)
			g.mu.Unlock()
			if err := g.sleepUnlessAnswered(ctx, d); err != nil {
				return false, err
			}
			continue
		}
		g.probeAt = now.Add(probeEvery)
		g.mu.Unlock()
		if now.Before(deadline) && g.useStore(now) {
			sctx, cancel := context.WithTimeout(ctx, g.timeout)
			g.storeMu.Lock()
			wait, ok, err := g.store.Probe(sctx, g.reqKey, now)
			g.storeMu.Unlock()
			cancel()
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			g.noteStore(err)
			if err == nil {
				wait = min(wait, MaxRateWait, max(deadline.Sub(now), 0))
				if !ok {
					// Another probe went less than a second ago and no paced booking has
					// priced it: ask again when its second is up, or go once an answer says
					// the limit.
					g.mu.Lock()
					g.probeAt = now.Add(wait)
					g.mu.Unlock()
					continue
				}
				g.mu.Lock()
				g.probeAt = now.Add(wait + probeEvery)
				g.mu.Unlock()
				if wait <= 0 {
					return true, ctx.Err()
				}
				return true, g.sleep(ctx, wait)
			}
		}
		return false, nil
	}
}

// sleepUnlessAnswered sleeps d, or less if an answer is read meanwhile; it fails only when
// ctx ends.
func (g *RateGate) sleepUnlessAnswered(ctx context.Context, d time.Duration) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g.mu.Lock()
	select {
	case <-g.answered:
		g.mu.Unlock()
		return ctx.Err()
	default:
	}
	g.wakes[&cancel] = struct{}{}
	g.mu.Unlock()
	_ = g.sleep(sctx, d)
	g.mu.Lock()
	delete(g.wakes, &cancel)
	g.mu.Unlock()
	return ctx.Err()
}

// Settle books the difference between a request's actual tokens and the estimate Wait booked:
// more when it used more, less (at most the estimate, never taking the budget below now) when
// it used less, or failed without an answer (actual 0).
func (g *RateGate) Settle(actualTokens, estimated int64) {
	if g == nil {
		return
	}
	_, tokInterval := g.intervals()
	if tokInterval <= 0 {
		return
	}
	// At most the estimate comes back: what Wait booked (at most a minute's tokens, as Wait
	// books), never tokens booked by others.
	most := minuteOf(tokInterval)
	diff := min(max(actualTokens, 0), most) - min(max(estimated, 0), most)
	if diff == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	g.reserve(ctx, g.tokKey, tokInterval, 1, float64(diff), g.now())
}

// Observe reads what an answer says about the endpoint's limits and holds every worker back
// when it says to wait: Retry-After (or Retry-After-Ms) on a 429 or 529; and, on any answer,
// a limit with nothing remaining until its reset (OpenAI's x-ratelimit-remaining-requests and
// -tokens with x-ratelimit-reset-*, durations such as "6m0s"; Anthropic's
// anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-remaining with -reset, RFC
// 3339 times). A hold is capped at a minute, as a Retry-After is. Without a configured rate,
// the limit the answer announces becomes the one paced to (announce).
func (g *RateGate) Observe(status int, h http.Header) {
	if g == nil || h == nil {
		return
	}
	if !g.configured {
		g.announce(h)
	}
	g.adapt(status)
	now := g.now()
	var until time.Time
	later := func(t time.Time) {
		if t.After(until) {
			until = t
		}
	}
	if status == http.StatusTooManyRequests || status == statusOverloaded {
		if d, ok := retryAfter(h, now); ok {
			later(now.Add(d))
		}
	}
	for _, kind := range []string{"requests", "tokens"} {
		if exhausted(h.Get("x-ratelimit-remaining-" + kind)) {
			if d, err := time.ParseDuration(strings.TrimSpace(h.Get("x-ratelimit-reset-" + kind))); err == nil && d > 0 {
				later(now.Add(capRetryAfter(d)))
			}
		}
	}
	for _, kind := range []string{"requests", "tokens", "input-tokens", "output-tokens"} {
		if exhausted(h.Get("anthropic-ratelimit-" + kind + "-remaining")) {
			if t, err := time.Parse(time.RFC3339, strings.TrimSpace(h.Get("anthropic-ratelimit-"+kind+"-reset"))); err == nil {
				later(minTime(t, now.Add(maxRetryAfter)))
			}
		}
	}
	if !until.After(now) {
		return
	}
	g.mu.Lock()
	if until.After(g.local[g.reqKey]) {
		g.local[g.reqKey] = until
	}
	g.mu.Unlock()
	if !g.useStore(now) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	g.storeMu.Lock()
	err := g.store.Defer(ctx, g.reqKey, until, now)
	g.storeMu.Unlock()
	g.noteStore(err)
}

// announce takes the limits an answer announces, per minute: requests from OpenAI's
// x-ratelimit-limit-requests or Anthropic's anthropic-ratelimit-requests-limit, tokens from
// x-ratelimit-limit-tokens or anthropic-ratelimit-tokens-limit (Anthropic's input and output
// limits together, which is what Wait books: the prompt and the most it may write). A kind the
// answer does not name keeps what an earlier answer said. Gemini announces no limit: its
// gate paces only to its Retry-After. The first answer ends the probing (probe), announced
// limit or not.
func (g *RateGate) announce(h http.Header) {
	for _, a := range []struct {
		to      *atomic.Int64
		most    int64
		headers []string
	}{
		{&g.announcedReq, maxAnnouncedRequests, []string{"x-ratelimit-limit-requests", "anthropic-ratelimit-requests-limit"}},
		{&g.announcedTok, maxAnnouncedTokens, []string{"x-ratelimit-limit-tokens", "anthropic-ratelimit-tokens-limit"}},
	} {
		for _, name := range a.headers {
			n, err := strconv.ParseInt(strings.TrimSpace(h.Get(name)), 10, 64)
			if err != nil || n <= 0 || n > a.most {
				continue
			}
			if old := a.to.Swap(int64(perMinute(int(n)))); old != int64(perMinute(int(n))) {
				g.log.Info("pacing to the limit the endpoint announces", zap.String("header", name), zap.Int64("per_minute", n))
			}
			break
		}
	}
	g.answeredOnce.Do(func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		close(g.answered)
		for wake := range g.wakes {
			(*wake)()
		}
	})
}

// exhausted says whether a remaining-count header says nothing remains.
func exhausted(v string) bool {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return err == nil && n <= 0
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// reserve books cost cells of key: in the store when it answers, else in the gate's own
// budget at the same rate. It returns the wait.
func (g *RateGate) reserve(ctx context.Context, key string, interval time.Duration, burst int, cost float64, now time.Time) time.Duration {
	if g.useStore(now) {
		sctx, cancel := context.WithTimeout(ctx, g.timeout)
		g.storeMu.Lock()
		wait, err := g.store.Reserve(sctx, key, interval, burst, cost, now)
		g.storeMu.Unlock()
		cancel()
		if err == nil {
			g.noteStore(nil)
			return wait
		}
		if ctx.Err() != nil {
			return 0 // the caller's context ended, not the store: its sleep says so
		}
		g.noteStore(err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return gcra(g.local, key, interval, burst, cost, now)
}

// useStore says whether to ask the store now: there is one, and it is not in an outage the
// gate noticed less than storeRetryAfter ago.
func (g *RateGate) useStore(now time.Time) bool {
	if g.store == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.down || !now.Before(g.retryAt)
}

// noteStore records a store call's outcome, logging an outage's start and end once each.
func (g *RateGate) noteStore(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err == nil {
		if g.down {
			g.down = false
			g.log.Info("rate store reachable again; pacing with the fleet")
		}
		return
	}
	if !g.down {
		g.down = true
		g.log.Warn("rate store unreachable; pacing this process alone at the configured rate", zap.Error(err))
	}
	g.retryAt = g.now().Add(storeRetryAfter)
}

// gcra is the generic cell rate algorithm on the theoretical arrival times in tats, as the
// store keeps them (queue.RateStore.Reserve): the same arithmetic, one process.
func gcra(tats map[string]time.Time, key string, interval time.Duration, burst int, cost float64, now time.Time) time.Duration {
	base := tats[key]
	if base.Before(now) {
		base = now
	}
	next := base.Add(time.Duration(cost * float64(interval)))
	if cost < 0 {
		if next.Before(now) {
			next = now
		}
		tats[key] = next
		return 0
	}
	tats[key] = next
	return max(next.Sub(now)-time.Duration(burst)*interval, 0)
}

// estimateTokens is a conversation's tokens before it is sent: its size at about four bytes a
// token, plus its max output.
func estimateTokens(c Conversation) int64 {
	n := len(c.System)
	for _, m := range c.Messages {
		n += len(m.Text)
		for _, call := range m.Calls {
			n += len(call.Name) + len(call.Arguments)
		}
	}
	for _, t := range c.Tools {
		n += len(t.Name) + len(t.Description)
		if p, err := json.Marshal(t.Parameters); err == nil {
			n += len(p)
		}
	}
	return int64(n/4) + max(c.MaxOutput, 0)
}
