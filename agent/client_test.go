package agent

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/skillfleet/skillfleet/agent/agenttest"
)

// fakeSleep records the waits a Client asks for and returns at once.
type fakeSleep struct {
	mu     sync.Mutex
	delays []time.Duration
	// limits are the client's concurrency limits seen at each wait.
	limits []float64
	c      *Client
}

func (f *fakeSleep) sleep(ctx context.Context, d time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delays = append(f.delays, d)
	if f.c != nil {
		f.limits = append(f.limits, f.c.ConcurrencyLimit())
	}
	return ctx.Err()
}

func (f *fakeSleep) got() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.delays...)
}

var testNow = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

type clientFixture struct {
	c     *Client
	sleep *fakeSleep
	reg   *prometheus.Registry
}

func newTestClient(t *testing.T, baseURL string, edit func(*Endpoint)) clientFixture {
	t.Helper()
	ep := Endpoint{Name: "test", BaseURL: baseURL, APIKey: "sk-configured", Model: "agent-model",
		Price: Price{PromptPerMTok: 2, CompletionPerMTok: 8}}
	if edit != nil {
		edit(&ep)
	}
	fs := &fakeSleep{}
	reg := prometheus.NewRegistry()
	c, err := NewClient(ep, ClientDeps{Registry: reg, Sleep: fs.sleep, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	fs.c = c
	return clientFixture{c: c, sleep: fs, reg: reg}
}

func userParams(text string) Conversation {
	return Conversation{Messages: []Message{{Role: RoleUser, Text: text}}}
}

func TestChatHonoursRetryAfter(t *testing.T) {
	tests := []struct {
		name   string
		header []string
		want   time.Duration
	}{
		{"seconds", []string{"Retry-After", "3"}, 3 * time.Second},
		{"fractional seconds", []string{"Retry-After", "1.5"}, 1500 * time.Millisecond},
		{"HTTP date", []string{"Retry-After", testNow.Add(7 * time.Second).Format(http.TimeFormat)}, 7 * time.Second},
		{"HTTP date in the past", []string{"Retry-After", testNow.Add(-time.Hour).Format(http.TimeFormat)}, 0},
		{"capped seconds", []string{"Retry-After", "3600"}, maxRetryAfter},
		{"capped date", []string{"Retry-After", testNow.Add(time.Hour).Format(http.TimeFormat)}, maxRetryAfter},
		{"milliseconds header wins", []string{"Retry-After-Ms", "250", "Retry-After", "9"}, 250 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := agenttest.NewScript(t,
				agenttest.Fail(http.StatusTooManyRequests, tt.header...),
				agenttest.Fail(http.StatusTooManyRequests, tt.header...),
				agenttest.Fail(http.StatusTooManyRequests, tt.header...),
				agenttest.Text("hello", 10, 2))
			f := newTestClient(t, srv.BaseURL(), nil)
			comp, _, err := f.c.Converse(context.Background(), userParams("hi"))
			if err != nil {
				t.Fatal(err)
			}
			if got := comp.Text; got != "hello" {
				t.Errorf("content = %q", got)
			}
			want := []time.Duration{tt.want, tt.want, tt.want}
			if got := f.sleep.got(); !equalDurations(got, want) {
				t.Errorf("delays = %v, want %v", got, want)
			}
			if srv.Count() != 4 {
				t.Errorf("requests = %d, want 4", srv.Count())
			}
			if got := testutil.ToFloat64(f.c.m.Requests.WithLabelValues("test", "agent-model", "retried", "429")); got != 3 {
				t.Errorf("retried 429 attempts = %v, want 3", got)
			}
			if got := testutil.ToFloat64(f.c.m.Requests.WithLabelValues("test", "agent-model", "ok", "2xx")); got != 1 {
				t.Errorf("ok attempts = %v, want 1", got)
			}
		})
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestChatRetriesServerErrorsWithBackoff(t *testing.T) {
	srv := agenttest.NewScript(t,
		agenttest.Fail(http.StatusInternalServerError),
		agenttest.Fail(http.StatusBadGateway),
		agenttest.Fail(http.StatusServiceUnavailable),
		agenttest.Reply{Status: http.StatusInternalServerError, Body: "plain text, not JSON"},
		agenttest.Text("ok", 1, 1))
	f := newTestClient(t, srv.BaseURL(), nil)
	if _, _, err := f.c.Converse(context.Background(), userParams("hi")); err != nil {
		t.Fatal(err)
	}
	got := f.sleep.got()
	if len(got) != 4 {
		t.Fatalf("delays = %v, want 4", got)
	}
	for n, d := range got {
		full := backoffBase << n
		if d < full/2 || d > full {
			t.Errorf("delay %d = %v, want within [%v, %v]", n, d, full/2, full)
		}
	}
	// 5xx is no news about capacity: the limit is untouched until the success grows it.
	if got := f.c.ConcurrencyLimit(); got != 4.25 {
		t.Errorf("limit = %v, want 4.25", got)
	}
}

func TestChatGivesUpAfterMaxRetries(t *testing.T) {
	srv := agenttest.NewFunc(t, func(int, agenttest.Request) agenttest.Reply {
		return agenttest.Fail(http.StatusServiceUnavailable)
	})
	f := newTestClient(t, srv.BaseURL(), func(ep *Endpoint) { ep.MaxRetries = 2 })
	_, _, err := f.c.Converse(context.Background(), userParams("hi"))
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v, want *Error", err)
	}
	if e.StatusCode != http.StatusServiceUnavailable || e.Attempts != 3 {
		t.Errorf("status %d attempts %d, want 503 and 3", e.StatusCode, e.Attempts)
	}
	if !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "scripted 503") {
		t.Errorf("message %q lacks the status and the server's message", err)
	}
	if srv.Count() != 3 || len(f.sleep.got()) != 2 {
		t.Errorf("requests %d sleeps %d, want 3 and 2", srv.Count(), len(f.sleep.got()))
	}
	if got := testutil.ToFloat64(f.c.m.Requests.WithLabelValues("test", "agent-model", "failed", "5xx")); got != 1 {
		t.Errorf("failed attempts = %v, want 1", got)
	}
}

func TestChatNegativeMaxRetriesMeansNone(t *testing.T) {
	srv := agenttest.NewScript(t, agenttest.Fail(http.StatusInternalServerError))
	f := newTestClient(t, srv.BaseURL(), func(ep *Endpoint) { ep.MaxRetries = -1 })
	if _, _, err := f.c.Converse(context.Background(), userParams("hi")); err == nil {
		t.Fatal("want an error")
	}
	if srv.Count() != 1 {
		t.Errorf("requests = %d, want 1", srv.Count())
	}
}

func TestChatDoesNotRetryClientErrors(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404, 422} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			srv := agenttest.NewScript(t, agenttest.Fail(status))
			f := newTestClient(t, srv.BaseURL(), nil)
			_, _, err := f.c.Converse(context.Background(), userParams("hi"))
			var e *Error
			if !errors.As(err, &e) || e.StatusCode != status || e.Attempts != 1 {
				t.Fatalf("err = %v, want *Error with status %d after 1 attempt", err, status)
			}
			if srv.Count() != 1 || len(f.sleep.got()) != 0 {
				t.Errorf("requests %d sleeps %d, want 1 and 0", srv.Count(), len(f.sleep.got()))
			}
		})
	}
}

func TestChatRedactsKeyEchoedByServer(t *testing.T) {
	srv := agenttest.NewScript(t, agenttest.Reply{Status: 401, Header: map[string]string{"Content-Type": "application/json"},
		Body: `{"error":{"message":"Incorrect API key provided: sk-configured","type":"auth"}}`})
	f := newTestClient(t, srv.BaseURL(), nil)
	_, _, err := f.c.Converse(context.Background(), userParams("hi"))
	if err == nil || strings.Contains(err.Error(), "sk-configured") || !strings.Contains(err.Error(), "[redacted]") {
		t.Fatalf("err = %v, want the key redacted", err)
	}
}

func TestChatRetriesConnectionErrors(t *testing.T) {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		first := n == 1
		mu.Unlock()
		if first {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		rep := agenttest.Text("after reset", 1, 1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(rep.Body))
	}))
	t.Cleanup(srv.Close)
	f := newTestClient(t, srv.URL+"/v1", nil)
	comp, _, err := f.c.Converse(context.Background(), userParams("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if comp.Text != "after reset" || len(f.sleep.got()) != 1 {
		t.Errorf("content %q after %d waits, want a retry", comp.Text, len(f.sleep.got()))
	}
	if got := testutil.ToFloat64(f.c.m.Requests.WithLabelValues("test", "agent-model", "retried", "transport")); got != 1 {
		t.Errorf("retried transport attempts = %v, want 1", got)
	}
}

func TestChatRetriesAttemptTimeout(t *testing.T) {
	srv := agenttest.NewScript(t, agenttest.Reply{Block: true}, agenttest.Text("second try", 1, 1))
	f := newTestClient(t, srv.BaseURL(), func(ep *Endpoint) { ep.RequestTimeout = 20 * time.Millisecond })
	comp, _, err := f.c.Converse(context.Background(), userParams("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if comp.Text != "second try" {
		t.Errorf("content = %q", comp.Text)
	}
	if got := testutil.ToFloat64(f.c.m.Requests.WithLabelValues("test", "agent-model", "retried", "timeout")); got != 1 {
		t.Errorf("retried timeouts = %v, want 1", got)
	}
}

func TestChatStopsWhenContextEndsDuringWait(t *testing.T) {
	srv := agenttest.NewScript(t, agenttest.Fail(http.StatusTooManyRequests, "Retry-After", "5"))
	ctx, cancel := context.WithCancel(context.Background())
	f := newTestClient(t, srv.BaseURL(), nil)
	f.c.sleep = func(context.Context, time.Duration) error { cancel(); return context.Canceled }
	_, _, err := f.c.Converse(ctx, userParams("hi"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if srv.Count() != 1 {
		t.Errorf("requests = %d, want 1", srv.Count())
	}
}

func TestChatRejectsMalformedSuccess(t *testing.T) {
	tests := []struct {
		name string
		rep  agenttest.Reply
	}{
		{"not JSON", agenttest.Reply{Header: map[string]string{"Content-Type": "application/json"}, Body: "{not json"}},
		{"no choices", agenttest.Reply{Header: map[string]string{"Content-Type": "application/json"},
			Body: `{"id":"x","object":"chat.completion","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":0}}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := agenttest.NewScript(t, tt.rep)
			f := newTestClient(t, srv.BaseURL(), nil)
			_, _, err := f.c.Converse(context.Background(), userParams("hi"))
			if !errors.Is(err, ErrMalformedResponse) {
				t.Fatalf("err = %v, want ErrMalformedResponse", err)
			}
			if srv.Count() != 1 {
				t.Errorf("requests = %d, want 1 (not retried)", srv.Count())
			}
		})
	}
}

func TestConcurrencyLimitAdaptsToRateLimits(t *testing.T) {
	srv := agenttest.NewFunc(t, func(n int, _ agenttest.Request) agenttest.Reply {
		if n < 3 {
			return agenttest.Fail(http.StatusTooManyRequests, "Retry-After", "1")
		}
		return agenttest.Text("ok", 1, 1)
	})
	f := newTestClient(t, srv.BaseURL(), func(ep *Endpoint) { ep.MaxConcurrency = 3 })
	if got := f.c.ConcurrencyLimit(); got != 3 {
		t.Fatalf("initial limit = %v, want min(4, max) = 3", got)
	}
	if _, _, err := f.c.Converse(context.Background(), userParams("hi")); err != nil {
		t.Fatal(err)
	}
	// Seen at each wait: after the 1st, 2nd and 3rd 429.
	if want := []float64{1.5, 1, 1}; !equalFloats(f.sleep.limits, want) {
		t.Errorf("limits after 429s = %v, want %v", f.sleep.limits, want)
	}
	// The success that ended the call grew it by 1/limit; more successes grow it to the ceiling.
	want := []float64{2, 2.5, 2.9, 3, 3}
	got := []float64{f.c.ConcurrencyLimit()}
	for range 4 {
		if _, _, err := f.c.Converse(context.Background(), userParams("hi")); err != nil {
			t.Fatal(err)
		}
		got = append(got, f.c.ConcurrencyLimit())
	}
	if !equalFloats(got, want) {
		t.Errorf("limits after successes = %v, want %v", got, want)
	}
	if g := testutil.ToFloat64(f.c.m.Limit.WithLabelValues("test")); g != 3 {
		t.Errorf("limit gauge = %v, want 3", g)
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if d := a[i] - b[i]; d > 1e-9 || d < -1e-9 {
			return false
		}
	}
	return true
}

func TestLimiterBlocksAtTheLimit(t *testing.T) {
	l := newLimiter(2, nil)
	ctx := context.Background()
	for range 2 {
		if err := l.acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := l.acquire(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("acquire at the limit with an ended context = %v, want context.Canceled", err)
	}
	got := make(chan error, 1)
	go func() { got <- l.acquire(ctx) }()
	l.release(signalNone)
	if err := <-got; err != nil {
		t.Fatalf("acquire after a release = %v", err)
	}
}

func TestUsageAndCost(t *testing.T) {
	srv := agenttest.NewScript(t, agenttest.Text("a", 1000, 500), agenttest.Text("b", 3000, 250))
	f := newTestClient(t, srv.BaseURL(), nil)
	var total Usage
	for range 2 {
		_, u, err := f.c.Converse(context.Background(), userParams("hi"))
		if err != nil {
			t.Fatal(err)
		}
		total.Add(u)
	}
	// 4000 prompt tokens at 2/M and 750 completion tokens at 8/M.
	want := Usage{PromptTokens: 4000, CompletionTokens: 750, Cost: 0.008 + 0.006}
	if total.PromptTokens != want.PromptTokens || total.CompletionTokens != want.CompletionTokens ||
		!equalFloats([]float64{total.Cost}, []float64{want.Cost}) {
		t.Errorf("usage = %+v, want %+v", total, want)
	}
	if got := testutil.ToFloat64(f.c.m.Tokens.WithLabelValues("test", "agent-model", "prompt")); got != 4000 {
		t.Errorf("prompt tokens metric = %v", got)
	}
	if got := testutil.ToFloat64(f.c.m.Tokens.WithLabelValues("test", "agent-model", "completion")); got != 750 {
		t.Errorf("completion tokens metric = %v", got)
	}
	if got := testutil.ToFloat64(f.c.m.Cost.WithLabelValues("test", "agent-model")); !equalFloats([]float64{got}, []float64{0.014}) {
		t.Errorf("cost metric = %v", got)
	}
	if n := testutil.CollectAndCount(f.reg, "skillfleet_model_request_duration_seconds"); n != 1 {
		t.Errorf("latency series = %d, want 1", n)
	}
}

func TestEnvironmentCannotRedirectOrLeak(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/bogus/v1")
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_ADMIN_KEY", "sk-admin-from-env")
	t.Setenv("OPENAI_ORG_ID", "org-env")
	t.Setenv("OPENAI_PROJECT_ID", "proj-env")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Leak: yes")
	for _, key := range []string{"sk-configured", ""} {
		t.Run("key "+key, func(t *testing.T) {
			srv := agenttest.NewScript(t, agenttest.Text("here", 1, 1))
			f := newTestClient(t, srv.BaseURL(), func(ep *Endpoint) { ep.APIKey = key })
			if _, _, err := f.c.Converse(context.Background(), userParams("hi")); err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("the configured server got %d requests, want 1", len(reqs))
			}
			h := reqs[0].Header
			wantAuth := ""
			if key != "" {
				wantAuth = "Bearer " + key
			}
			if got := h.Get("Authorization"); got != wantAuth {
				t.Errorf("Authorization = %q, want %q", got, wantAuth)
			}
			for _, leak := range []string{"OpenAI-Organization", "OpenAI-Project", "X-Leak"} {
				if v := h.Get(leak); v != "" {
					t.Errorf("header %s = %q leaked from the environment", leak, v)
				}
			}
			if p := reqs[0].Params(); p["model"] != "agent-model" {
				t.Errorf("model = %v, want the endpoint's", p["model"])
			}
		})
	}
}

func TestClientsShareARegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	for _, name := range []string{"agent", "judge"} {
		if _, err := NewClient(Endpoint{Name: name, BaseURL: "http://127.0.0.1:1/v1", Model: "m"}, ClientDeps{Registry: reg}); err != nil {
			t.Fatalf("client %s: %v", name, err)
		}
	}
	if n := testutil.CollectAndCount(reg, "skillfleet_model_concurrency_limit"); n != 2 {
		t.Errorf("limit gauges = %d, want 2", n)
	}
}

func TestNewClientRejectsBadEndpoints(t *testing.T) {
	tests := []Endpoint{
		{BaseURL: "http://x/v1", Model: "m"},
		{Name: "n", BaseURL: "http://x/v1"},
		{Name: "n", BaseURL: "x/v1", Model: "m"},
		{Name: "n", BaseURL: "ftp://x/v1", Model: "m"},
	}
	for _, ep := range tests {
		if _, err := NewClient(ep, ClientDeps{}); err == nil {
			t.Errorf("NewClient(%+v) accepted", ep)
		}
	}
}

// The endpoint's max output (an agent's or the judge's max_output_tokens) goes with every
// conversation that names none, in each protocol's field; one a conversation names wins.
func TestEndpointMaxOutput(t *testing.T) {
	turn := agenttest.Scripted(func(int, agenttest.Conv) (agenttest.Turn, *agenttest.Reply) {
		return agenttest.Turn{Text: "ok", Usage: agenttest.Tokens{Prompt: 1, Completion: 1}}, nil
	})
	sent := func(api string, p map[string]any) any {
		switch api {
		case APIAnthropic:
			return p["max_tokens"]
		case APIGemini:
			gc, _ := p["generationConfig"].(map[string]any)
			return gc["maxOutputTokens"]
		}
		return p["max_completion_tokens"]
	}
	tests := []struct {
		api             string
		configured, own int64
		want            any
	}{
		{APIOpenAI, 5000, 0, 5000.0},
		{APIOpenAI, 0, 0, nil},
		{APIOpenAI, 5000, 300, 300.0},
		{APIAnthropic, 5000, 0, 5000.0},
		{APIAnthropic, 0, 0, float64(DefaultMaxOutput)},
		{APIGemini, 5000, 0, 5000.0},
		{APIGemini, 0, 0, nil},
	}
	for _, tt := range tests {
		var srv *agenttest.Server
		switch tt.api {
		case APIAnthropic:
			srv = agenttest.NewAnthropic(t, turn)
		case APIGemini:
			srv = agenttest.NewGemini(t, turn)
		default:
			srv = agenttest.NewOpenAI(t, turn)
		}
		base := srv.BaseURL()
		if tt.api != APIOpenAI {
			base = srv.URL // their SDKs add the version
		}
		f := newTestClient(t, base, func(ep *Endpoint) { ep.API, ep.MaxOutput = tt.api, tt.configured })
		conv := userParams("hi")
		conv.MaxOutput = tt.own
		if _, _, err := f.c.Converse(context.Background(), conv); err != nil {
			t.Fatalf("%s: %v", tt.api, err)
		}
		if got := sent(tt.api, srv.Requests()[0].Params()); got != tt.want {
			t.Errorf("%s, configured %d, conversation's %d: max output %v, want %v", tt.api, tt.configured, tt.own, got, tt.want)
		}
	}
}
