package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/agent/agenttest"
)

const realKey = "sk-real-9f8e7d6c5b4a"

type gatewayFixture struct {
	g      *Gateway
	up     *agenttest.Server
	socket string
	client *http.Client
}

// newGatewayFixture serves a gateway on a Unix socket in front of an agenttest upstream.
func newGatewayFixture(t *testing.T, answer func(n int, r agenttest.Request) agenttest.Reply, edit func(*Config)) gatewayFixture {
	t.Helper()
	up := agenttest.NewFunc(t, answer)
	f := serveGateway(t, up.BaseURL(), edit)
	f.up = up
	return f
}

// serveGateway serves a gateway on a Unix socket in front of the upstream at baseURL.
func serveGateway(t testing.TB, baseURL string, edit func(*Config)) gatewayFixture {
	t.Helper()
	cfg := Config{Model: "gw-model", BaseURL: baseURL, APIKey: realKey, Price: agent.Price{PromptPerMTok: 1e6, CompletionPerMTok: 2e6}}
	if edit != nil {
		edit(&cfg)
	}
	g, err := New(cfg, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	// Short path: a Unix socket path is limited to 108 bytes.
	dir, err := os.MkdirTemp("", "gw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock, err := g.ListenUnix(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return gatewayFixture{g: g, socket: sock, client: &http.Client{Transport: tr}}
}

func textReply(prompt, completion int64) func(int, agenttest.Request) agenttest.Reply {
	return func(int, agenttest.Request) agenttest.Reply { return agenttest.Text("ok", prompt, completion) }
}

type gwResponse struct {
	Status int
	Header http.Header
	Body   string
}

// do sends one request through the gateway and checks the real key is nowhere in the answer.
func (f gatewayFixture) do(t *testing.T, method, path, token, body string, headers ...string) gwResponse {
	t.Helper()
	req, err := http.NewRequest(method, "http://gateway"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := gwResponse{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}
	if strings.Contains(r.Body, realKey) || strings.Contains(fmt.Sprint(r.Header), realKey) {
		t.Errorf("the real key leaked in a gateway answer: %d %v %s", r.Status, r.Header, r.Body)
	}
	return r
}

const chatBody = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`

func TestGatewaySwapsTheTokenForTheKey(t *testing.T) {
	f := newGatewayFixture(t, textReply(10, 5), nil)
	s, err := f.g.Open("job-1", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Token()) != 64 || strings.Contains(s.Token(), realKey) {
		t.Fatalf("token %q: want 32 random bytes in hex", s.Token())
	}
	for _, path := range []string{"/v1/chat/completions", "/chat/completions"} {
		r := f.do(t, http.MethodPost, path, s.Token(), chatBody,
			"Api-Key", "client-key", "OpenAI-Organization", "org-x", "Cookie", "c=1", "Proxy-Authorization", "Basic eA==", "X-Api-Key", "k")
		if r.Status != http.StatusOK || !strings.Contains(r.Body, `"content":"ok"`) {
			t.Fatalf("%s: %d %s", path, r.Status, r.Body)
		}
	}
	reqs := f.up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("upstream got %d requests, want 2", len(reqs))
	}
	for _, r := range reqs {
		if r.Path != "/v1/chat/completions" {
			t.Errorf("upstream path %q", r.Path)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer "+realKey {
			t.Errorf("upstream Authorization %q, want the real key", got)
		}
		for _, h := range []string{"Api-Key", "OpenAI-Organization", "Cookie", "Proxy-Authorization", "X-Api-Key"} {
			if v := r.Header.Get(h); v != "" {
				t.Errorf("header %s reached the upstream: %q", h, v)
			}
		}
		if strings.Contains(fmt.Sprint(r.Header), s.Token()) {
			t.Errorf("the job token reached the upstream: %v", r.Header)
		}
		// Rebuilt: the configured model, the fields in order; nothing else added (no budget,
		// so no max output).
		if want := `{"messages":[{"role":"user","content":"hi"}],"model":"gw-model"}`; string(r.Body) != want {
			t.Errorf("upstream body %s, want %s", r.Body, want)
		}
	}
	if u := s.Usage(); u.PromptTokens != 20 || u.CompletionTokens != 10 || u.Cost != 20+20 || s.Requests() != 2 {
		t.Errorf("usage %+v after %d requests, want 20+10 tokens costing 40 after 2", u, s.Requests())
	}
}

func TestGatewayRefusals(t *testing.T) {
	f := newGatewayFixture(t, textReply(1, 1), func(c *Config) { c.MaxBodyBytes = 1024 })
	open, err := f.g.Open("open", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	closed, err := f.g.Open("closed", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	tests := []struct {
		name         string
		method, path string
		token, body  string
		status       int
		code         string
	}{
		{"no token", http.MethodPost, "/v1/chat/completions", "", chatBody, 401, "invalid_token"},
		{"unknown token", http.MethodPost, "/v1/chat/completions", strings.Repeat("ab", 32), chatBody, 401, "invalid_token"},
		{"the real key as token", http.MethodPost, "/v1/chat/completions", realKey, chatBody, 401, "invalid_token"},
		{"closed session", http.MethodPost, "/v1/chat/completions", closed.Token(), chatBody, 401, "invalid_token"},
		{"other path", http.MethodPost, "/v1/embeddings", open.Token(), chatBody, 404, "not_found"},
		{"models of another token", http.MethodGet, "/v1/models", "", "", 401, "invalid_token"},
		{"another model", http.MethodGet, "/v1/models/gpt-other", open.Token(), "", 404, "model_not_found"},
		{"models posted", http.MethodPost, "/v1/models", open.Token(), "", 405, "method_not_allowed"},
		{"websocket upgrade", http.MethodGet, "/v1/responses", open.Token(), "", 426, "websocket_unsupported"},
		{"anthropic path on an openai agent", http.MethodPost, "/v1/messages", open.Token(), chatBody, 404, "wrong_api"},
		{"traversal", http.MethodPost, "/v1/chat/completions/../../admin", open.Token(), chatBody, 404, "not_found"},
		{"other method", http.MethodGet, "/v1/chat/completions", open.Token(), "", 405, "method_not_allowed"},
		{"stream not a boolean", http.MethodPost, "/v1/chat/completions", open.Token(), `{"stream":"yes","messages":[]}`, 400, "invalid_request"},
		{"stream_options not an object", http.MethodPost, "/v1/chat/completions", open.Token(), `{"stream":true,"stream_options":[1],"messages":[]}`, 400, "invalid_request"},
		{"not json", http.MethodPost, "/v1/chat/completions", open.Token(), "hello", 400, "invalid_json"},
		{"too large", http.MethodPost, "/v1/chat/completions", open.Token(), `{"x":"` + strings.Repeat("a", 2000) + `"}`, 413, "request_too_large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hdr []string
			if tt.name == "websocket upgrade" {
				hdr = []string{"Upgrade", "websocket", "Connection", "Upgrade"}
			}
			r := f.do(t, tt.method, tt.path, tt.token, tt.body, hdr...)
			var e struct {
				Error struct{ Code, Message string }
			}
			if tt.code == "wrong_api" {
				// Refused in the shape of the protocol whose path it is, so the CLI shows it.
				var ae struct {
					Type  string
					Error struct{ Type, Message string }
				}
				if json.Unmarshal([]byte(r.Body), &ae) != nil || ae.Type != "error" || !strings.Contains(ae.Error.Message, "api: anthropic") || r.Status != tt.status {
					t.Errorf("got %d %s, want %d with an Anthropic error naming api: anthropic", r.Status, r.Body, tt.status)
				}
				return
			}
			if err := json.Unmarshal([]byte(r.Body), &e); err != nil {
				t.Fatalf("%d %q: not an OpenAI error: %v", r.Status, r.Body, err)
			}
			if r.Status != tt.status || e.Error.Code != tt.code {
				t.Errorf("got %d %q (%s), want %d %q", r.Status, e.Error.Code, e.Error.Message, tt.status, tt.code)
			}
		})
	}
	if n := f.up.Count(); n != 0 {
		t.Errorf("refused requests reached the upstream %d times", n)
	}
	if u := open.Usage(); u.Total() != 0 {
		t.Errorf("refused requests were metered: %+v", u)
	}
}

func TestGatewayEnforcesTheBudget(t *testing.T) {
	f := newGatewayFixture(t, textReply(10, 5), nil)
	// chatBody is 58 bytes, a prompt estimate of 15 tokens; each answer reports 15 tokens.
	s, err := f.g.Open("job", Budget{MaxTokens: 50}, nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := f.g.Open("other", Budget{MaxTokens: 50}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{200, 200, 200, 429, 429} {
		r := f.do(t, http.MethodPost, "/v1/chat/completions", s.Token(), chatBody)
		if r.Status != want {
			t.Fatalf("request %d: %d %s, want %d", i+1, r.Status, r.Body, want)
		}
		if want == 429 && !strings.Contains(r.Body, "5 of 50 tokens are left (45 used, 0 reserved by requests in flight)") {
			t.Errorf("429 does not explain the budget: %s", r.Body)
		}
	}
	// What each forwarded request could spend at most: what the budget left after its prompt.
	for i, want := range []float64{35, 20, 5} {
		if got := f.up.Requests()[i].Params()["max_completion_tokens"]; got != want {
			t.Errorf("request %d: max_completion_tokens %v, want %v", i+1, got, want)
		}
	}
	if f.up.Count() != 3 || s.Usage().Total() != 45 || !s.BudgetExhausted() {
		t.Errorf("upstream %d requests, usage %+v: want 3 and 45 tokens, exhausted", f.up.Count(), s.Usage())
	}
	if r := f.do(t, http.MethodPost, "/v1/chat/completions", other.Token(), chatBody); r.Status != 200 {
		t.Errorf("another session's budget is separate: got %d", r.Status)
	}
}

func TestGatewayRedactsTheKeyFromUpstreamAnswers(t *testing.T) {
	f := newGatewayFixture(t, func(int, agenttest.Request) agenttest.Reply {
		r := agenttest.Fail(http.StatusUnauthorized, "X-Request-Id", "req-"+realKey)
		r.Body = `{"error":{"message":"Incorrect API key provided: ` + realKey + `","type":"invalid_request_error"}}`
		return r
	}, nil)
	s, err := f.g.Open("job", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := f.do(t, http.MethodPost, "/v1/chat/completions", s.Token(), chatBody) // do checks the key is absent
	if r.Status != http.StatusUnauthorized || !strings.Contains(r.Body, "[redacted]") || r.Header.Get("X-Request-Id") != "req-[redacted]" {
		t.Errorf("got %d %v %s, want the upstream's 401 with the key redacted", r.Status, r.Header, r.Body)
	}
}

func TestGatewayUpstreamDown(t *testing.T) {
	f := newGatewayFixture(t, textReply(1, 1), nil)
	f.up.Close()
	s, err := f.g.Open("job", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := f.do(t, http.MethodPost, "/v1/chat/completions", s.Token(), chatBody)
	if r.Status != http.StatusBadGateway || strings.Contains(r.Body, "127.0.0.1") {
		t.Errorf("got %d %s, want 502 naming no upstream", r.Status, r.Body)
	}
}

func TestGatewaySessionsAreIsolated(t *testing.T) {
	// The upstream charges each request the number in its first message: "job=N" costs N
	// prompt tokens.
	f := newGatewayFixture(t, func(_ int, r agenttest.Request) agenttest.Reply {
		c, _ := r.Messages()[0]["content"].(string)
		n, _ := strconv.Atoi(strings.TrimPrefix(c, "job="))
		return agenttest.Text("ok", int64(n), 1)
	}, nil)
	const sessions, perSession = 8, 5
	ss := make([]*Session, sessions)
	for i := range ss {
		var err error
		if ss[i], err = f.g.Open("job-"+strconv.Itoa(i), Budget{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	statuses := make(chan int, sessions*perSession)
	for i, s := range ss {
		body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"job=%d"}]}`, i+1)
		for range perSession {
			wg.Go(func() {
				r := f.do(t, http.MethodPost, "/v1/chat/completions", s.Token(), body)
				statuses <- r.Status
			})
		}
	}
	wg.Wait()
	close(statuses)
	for st := range statuses {
		if st != 200 {
			t.Errorf("status %d", st)
		}
	}
	for i, s := range ss {
		if u := s.Usage(); u.PromptTokens != int64((i+1)*perSession) || u.CompletionTokens != perSession {
			t.Errorf("session %d usage %+v, want %d prompt and %d completion tokens", i, u, (i+1)*perSession, perSession)
		}
	}
	ss[0].Close()
	if r := f.do(t, http.MethodPost, "/v1/chat/completions", ss[0].Token(), chatBody); r.Status != 401 {
		t.Errorf("closed session: %d", r.Status)
	}
	if r := f.do(t, http.MethodPost, "/v1/chat/completions", ss[1].Token(), `{"messages":[{"role":"user","content":"job=1"}]}`); r.Status != 200 {
		t.Errorf("closing one session affected another: %d", r.Status)
	}
}

func TestGatewayCloseEndsSessions(t *testing.T) {
	f := newGatewayFixture(t, textReply(1, 1), nil)
	s, err := f.g.Open("job", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.g.Close(); err != nil {
		t.Fatal(err)
	}
	if f.g.lookup(s.Token()) != nil {
		t.Error("a session outlived its gateway")
	}
}

func TestNewGatewayRejectsBadBaseURLs(t *testing.T) {
	for _, u := range []string{"", "api.openai.com/v1", "ftp://x/v1", "http:///v1"} {
		if _, err := New(Config{BaseURL: u, APIKey: realKey}, Deps{}); err == nil || strings.Contains(err.Error(), realKey) {
			t.Errorf("%q: err %v, want an error without the key", u, err)
		}
	}
}

// freePort is a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
}

// cliScript is a stand-in agent CLI: it posts its first argument (or stdin) to
// $OPENAI_BASE_URL/chat/completions with $OPENAI_API_KEY and prints the answer's content.
const cliScript = `
import json, os, sys, urllib.request, urllib.error
prompt = sys.argv[1] if len(sys.argv) > 1 else sys.stdin.read()
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps({"model": "m", "messages": [{"role": "user", "content": prompt}]}).encode(),
    headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"})
try:
    with urllib.request.urlopen(req) as r:
        print(json.load(r)["choices"][0]["message"]["content"])
except urllib.error.HTTPError as e:
    print("HTTP %d: %s" % (e.code, e.read().decode()), file=sys.stderr)
    sys.exit(3)
`

// The gateway's traffic shows in the model metrics under the agent's configured name and model,
// whatever model the CLI asks for: forwarded (ok or failed) and refused requests, tokens, cost
// and latency.
func TestGatewayMetrics(t *testing.T) {
	f := newGatewayFixture(t, func(n int, _ agenttest.Request) agenttest.Reply {
		if n == 1 { // the second request (n counts from 0)
			return agenttest.Fail(http.StatusInternalServerError)
		}
		return agenttest.Text("ok", 10, 5)
	}, func(c *Config) { c.Name, c.Model = "codex", "gpt-x" })
	unlimited, err := f.g.Open("job-1", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tight, err := f.g.Open("job-2", Budget{MaxTokens: 25}, nil) // one request of 15 tokens fits
	if err != nil {
		t.Fatal(err)
	}
	invented := `{"model":"invented-by-the-sandbox","messages":[{"role":"user","content":"hi"}]}`
	for i, step := range []struct {
		s      *Session
		body   string
		status int
	}{
		{unlimited, invented, 200},
		{unlimited, chatBody, 500},
		{tight, chatBody, 200},
		{tight, chatBody, 429},
		{unlimited, `{"model":"m","stream":1,"messages":[]}`, 400},
	} {
		if r := f.do(t, http.MethodPost, "/v1/chat/completions", step.s.Token(), step.body); r.Status != step.status {
			t.Fatalf("request %d: %d %s, want %d", i+1, r.Status, r.Body, step.status)
		}
	}
	m := f.g.m
	for _, c := range []struct {
		outcome, class string
		want           float64
	}{{"ok", "2xx", 2}, {"failed", "5xx", 1}, {"refused", "429", 1}, {"refused", "4xx", 1}} {
		if got := testutil.ToFloat64(m.Requests.WithLabelValues("codex", "gpt-x", c.outcome, c.class)); got != c.want {
			t.Errorf("requests %s/%s = %v, want %v", c.outcome, c.class, got, c.want)
		}
	}
	if got := testutil.CollectAndCount(m.Requests); got != 4 {
		t.Errorf("%d request series, want 4: the CLI's model names must not become labels", got)
	}
	if p, c := testutil.ToFloat64(m.Tokens.WithLabelValues("codex", "gpt-x", "prompt")), testutil.ToFloat64(m.Tokens.WithLabelValues("codex", "gpt-x", "completion")); p != 20 || c != 10 {
		t.Errorf("tokens %v prompt, %v completion; want 20 and 10", p, c)
	}
	if got := testutil.ToFloat64(m.Cost.WithLabelValues("codex", "gpt-x")); got != 40 {
		t.Errorf("cost %v, want 40 (two answers of 10 prompt and 5 completion tokens)", got)
	}
	if got := testutil.CollectAndCount(m.Latency); got != 1 {
		t.Errorf("%d latency series, want 1", got)
	}
}

// readBody reads a body whole whatever length it says, and the limit reader still refuses one
// over the cap.
func TestReadBody(t *testing.T) {
	body := strings.Repeat("x", 1000)
	for _, length := range []int64{-1, 0, 10, 999, 1000, 1001, 5000} {
		got, err := readBody(strings.NewReader(body), length, 4096)
		if err != nil || string(got) != body {
			t.Errorf("length %d: %d bytes, %v", length, len(got), err)
		}
	}
	var tooBig *http.MaxBytesError
	rec := httptest.NewRecorder()
	if _, err := readBody(http.MaxBytesReader(rec, io.NopCloser(strings.NewReader(body)), 100), 50, 100); !errors.As(err, &tooBig) {
		t.Errorf("over the cap: %v, want a MaxBytesError", err)
	}
}
