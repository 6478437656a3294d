package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/internal/modelmetrics"
)

// ClientDeps are a Client's collaborators; zero fields get working defaults.
type ClientDeps struct {
	// HTTP carries the requests (default: a client on a clone of http.DefaultTransport).
	HTTP *http.Client
	// Log gets retries and give-ups, never the API key (default: no logging).
	Log *zap.Logger
	// Registry gets the client's metrics (nil: not registered). Clients of several endpoints
	// may share one registry.
	Registry prometheus.Registerer
	// Sleep waits between retries; it returns early with ctx's error (default: a timer).
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock for latencies and Retry-After dates (default: time.Now).
	Now func() time.Time
	// Rate paces requests to the endpoint's rate budget, shared by the fleet (nil: none);
	// give it the same clock.
	Rate *RateGate
}

// Client is the model client of one endpoint, shared by the built-in agent and the judge,
// whatever protocol the endpoint speaks (Endpoint.API; see model.go). It is safe for
// concurrent use; the adaptive concurrency limit is per Client, so make one Client per
// endpoint and share it.
type Client struct {
	ep    Endpoint
	p     provider
	lim   *limiter
	m     *modelmetrics.Metrics
	log   *zap.Logger
	sleep func(context.Context, time.Duration) error
	now   func() time.Time
	rate  *RateGate
}

// NewClient makes the client of ep, speaking ep.API (openai when empty).
func NewClient(ep Endpoint, deps ClientDeps) (*Client, error) {
	ep = ep.withDefaults()
	if ep.Name == "" {
		return nil, errors.New("agent: endpoint has no name")
	}
	if ep.Model == "" {
		return nil, fmt.Errorf("agent: endpoint %q has no model", ep.Name)
	}
	u, err := url.Parse(ep.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("agent: endpoint %q: base URL must be an absolute http(s) URL", ep.Name)
	}
	if deps.HTTP == nil {
		t, _ := http.DefaultTransport.(*http.Transport)
		if t != nil {
			deps.HTTP = &http.Client{Transport: t.Clone()}
		} else {
			deps.HTTP = &http.Client{}
		}
	}
	if deps.Log == nil {
		deps.Log = zap.NewNop()
	}
	if deps.Sleep == nil {
		deps.Sleep = sleepCtx
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	m, err := modelmetrics.New(deps.Registry)
	if err != nil {
		return nil, fmt.Errorf("agent: metrics: %w", err)
	}
	var p provider
	switch ep.API {
	case "", APIOpenAI:
		p = newOpenAIProvider(ep, deps.HTTP)
	case APIAnthropic:
		p = newAnthropicProvider(ep, deps.HTTP)
	case APIGemini:
		if p, err = newGeminiProvider(ep, deps.HTTP); err != nil {
			return nil, fmt.Errorf("agent: endpoint %q: %w", ep.Name, err)
		}
	default:
		return nil, fmt.Errorf("agent: endpoint %q: api %q: want openai, anthropic or gemini", ep.Name, ep.API)
	}
	c := &Client{
		ep:    ep,
		p:     p,
		m:     m,
		log:   deps.Log.With(zap.String("endpoint", ep.Name)),
		sleep: deps.Sleep,
		now:   deps.Now,
		rate:  deps.Rate,
	}
	gauge := m.Limit.WithLabelValues(ep.Name)
	c.lim = newLimiter(ep.MaxConcurrency, gauge.Set)
	return c, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Model is the endpoint's model.
func (c *Client) Model() string { return c.ep.Model }

// Endpoint is the endpoint's config name.
func (c *Client) Endpoint() string { return c.ep.Name }

// ConcurrencyLimit is the current adaptive concurrency limit (fractional; its floor is how many
// requests may be in flight).
func (c *Client) ConcurrencyLimit() float64 { return c.lim.current() }

// attempt is the outcome of one HTTP exchange.
type attempt struct {
	status    int // 0: no HTTP answer
	class     string
	retryable bool
	header    http.Header
	err       error
}

// Converse sends one turn of a conversation to the endpoint's model. It retries 408, 409,
// 429, 5xx and the provider's own retryable errors (Anthropic's 529), per-attempt timeouts
// and connection errors up to MaxRetries times, waiting what Retry-After says (capped at a
// minute) or an exponential backoff with jitter; it never retries other statuses. Usage is the
// answer's tokens and their cost. A failure is an *Error, or ctx's error when ctx ended.
func (c *Client) Converse(ctx context.Context, conv Conversation) (*Answer, Usage, error) {
	model := cmp.Or(conv.Model, c.ep.Model)
	conv.Model = model
	conv.MaxOutput = cmp.Or(max(conv.MaxOutput, 0), c.ep.MaxOutput)
	est := estimateTokens(conv)
	for n := 0; ; n++ {
		ans, u, a := c.do(ctx, conv, est)
		c.rate.Settle(u.Total(), est)
		if a.err == nil {
			c.m.Requests.WithLabelValues(c.ep.Name, model, "ok", a.class).Inc()
			u.Cost = c.ep.Price.CostOf(u)
			c.m.Tokens.WithLabelValues(c.ep.Name, model, "prompt").Add(float64(u.PromptTokens))
			c.m.Tokens.WithLabelValues(c.ep.Name, model, "completion").Add(float64(u.CompletionTokens))
			if u.CacheReadTokens > 0 {
				c.m.Tokens.WithLabelValues(c.ep.Name, model, "cache_read").Add(float64(u.CacheReadTokens))
			}
			if u.CacheWriteTokens > 0 {
				c.m.Tokens.WithLabelValues(c.ep.Name, model, "cache_write").Add(float64(u.CacheWriteTokens))
			}
			c.m.Cost.WithLabelValues(c.ep.Name, model).Add(u.Cost)
			return ans, u, nil
		}
		if ctx.Err() != nil {
			c.m.Requests.WithLabelValues(c.ep.Name, model, "failed", a.class).Inc()
			return nil, Usage{}, fmt.Errorf("model endpoint %q: %w", c.ep.Name, ctx.Err())
		}
		if u.Total() > 0 {
			// An answer that was paid for but cannot be used (no choices): its tokens count.
			u.Cost = c.ep.Price.CostOf(u)
			c.m.Requests.WithLabelValues(c.ep.Name, model, "failed", a.class).Inc()
			return nil, u, &Error{Endpoint: c.ep.Name, StatusCode: a.status, Attempts: n + 1, Err: a.err}
		}
		if !a.retryable || n >= c.ep.MaxRetries {
			c.m.Requests.WithLabelValues(c.ep.Name, model, "failed", a.class).Inc()
			err := &Error{Endpoint: c.ep.Name, StatusCode: a.status, Attempts: n + 1, Err: a.err,
				Message: c.serverMessage(a.err)}
			c.log.Debug("model request failed", zap.String("model", model), zap.Int("status", a.status),
				zap.Int("attempts", n+1), zap.Bool("retryable", a.retryable), zap.Error(err))
			return nil, Usage{}, err
		}
		c.m.Requests.WithLabelValues(c.ep.Name, model, "retried", a.class).Inc()
		delay, ok := retryAfter(a.header, c.now())
		if !ok {
			delay = backoff(n)
		}
		c.log.Debug("retrying model request", zap.String("model", model), zap.Int("status", a.status),
			zap.Int("attempt", n+1), zap.Duration("delay", delay), zap.Bool("retry_after", ok))
		if err := c.sleep(ctx, delay); err != nil {
			return nil, Usage{}, fmt.Errorf("model endpoint %q: waiting to retry: %w", c.ep.Name, err)
		}
	}
}

// do makes one attempt within a concurrency slot and classifies its outcome. It waits for
// the rate budget (est tokens) before it takes the slot, so a paced request holds no slot
// another could use.
func (c *Client) do(ctx context.Context, conv Conversation, est int64) (*Answer, Usage, attempt) {
	if err := c.rate.Wait(ctx, est); err != nil {
		return nil, Usage{}, attempt{class: "transport", err: err}
	}
	if err := c.lim.acquire(ctx); err != nil {
		return nil, Usage{}, attempt{class: "transport", err: err}
	}
	actx, cancel := context.WithTimeout(ctx, c.ep.RequestTimeout)
	defer cancel()
	start := c.now()
	ans, u, raw, err := c.p.send(actx, conv, conv.Model)
	c.m.Latency.WithLabelValues(c.ep.Name, conv.Model).Observe(c.now().Sub(start).Seconds())

	var a attempt
	switch {
	case err == nil:
		a = attempt{status: http.StatusOK, class: "2xx"}
		if raw != nil {
			a.status = raw.StatusCode
		}
		if ans == nil {
			a.err = fmt.Errorf("%w: empty body", ErrMalformedResponse)
		}
	case raw != nil && raw.StatusCode < 400:
		// An HTTP answer the provider could not read, or one without an answer in it.
		a = attempt{status: raw.StatusCode, class: modelmetrics.StatusClass(raw.StatusCode), header: raw.Header, err: err}
		if !errors.Is(err, ErrMalformedResponse) {
			a.err = fmt.Errorf("%w: %w", ErrMalformedResponse, err)
		}
	case raw != nil:
		// An HTTP answer: the status decides, whatever error the SDK made of the body.
		a = attempt{status: raw.StatusCode, class: modelmetrics.StatusClass(raw.StatusCode), header: raw.Header, err: err,
			retryable: c.p.retryable(raw.StatusCode, err)}
	case ctx.Err() == nil && actx.Err() != nil:
		a = attempt{class: "timeout", retryable: true,
			err: fmt.Errorf("attempt timed out after %s: %w", c.ep.RequestTimeout, err)}
	default:
		a = attempt{class: "transport", retryable: ctx.Err() == nil, err: err}
	}
	sig := signalNone
	switch {
	case a.err == nil:
		sig = signalSuccess
	case a.status == http.StatusTooManyRequests || a.status == statusOverloaded:
		sig = signalOverload
	}
	c.lim.release(sig)
	if raw != nil {
		c.rate.Observe(a.status, raw.Header)
	}
	return ans, u, a
}

// statusOverloaded is Anthropic's "overloaded" status: the same signal to the concurrency
// limit as a 429.
const statusOverloaded = 529

// serverMessage is the API error's message, clipped, with the key redacted in case a proxy
// echoes it.
func (c *Client) serverMessage(err error) string {
	msg := strings.TrimSpace(c.p.message(err))
	if msg == "" {
		return ""
	}
	if c.ep.APIKey != "" {
		msg = strings.ReplaceAll(msg, c.ep.APIKey, "[redacted]")
	}
	if utf8.RuneCountInString(msg) > 300 {
		msg = string([]rune(msg)[:300]) + "…"
	}
	return msg
}
