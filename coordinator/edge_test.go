package coordinator_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/fleet"
	"github.com/skillfleet/skillfleet/internal/httpserve"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

// TestAPIAnonymousRules: without a token the API serves only what a browser on another site
// cannot send: loopback Hosts, no Origin, tar uploads.
func TestAPIAnonymousRules(t *testing.T) {
	a := startAPI(t, func(_ *fleet.InProcessConfig, api *coordinator.APIConfig) { api.Token = "" })
	bundle := bundleOf(t, examples)
	for _, tc := range []struct {
		name, method, host, origin, ctype string
		want                              int
	}{
		{"loopback ip", "GET", "", "", "", http.StatusOK},
		{"localhost", "GET", "localhost:8080", "", "", http.StatusOK},
		{"localhost no port", "GET", "localhost", "", "", http.StatusOK},
		{"ipv6 loopback", "GET", "[::1]:8080", "", "", http.StatusOK},
		{"rebound name", "GET", "evil.example:8080", "", "", http.StatusForbidden},
		{"loopback-looking name", "GET", "127.0.0.1.evil.example", "", "", http.StatusForbidden},
		{"lan address", "GET", "192.168.1.10:8080", "", "", http.StatusForbidden},
		{"any origin", "GET", "", "http://127.0.0.1:8080", "", http.StatusForbidden},
		{"cross-site form post", "POST", "", "https://evil.example", "application/x-www-form-urlencoded", http.StatusForbidden},
		{"form post without origin", "POST", "", "", "application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
		{"text post", "POST", "", "", "text/plain", http.StatusUnsupportedMediaType},
		{"no content type", "POST", "", "", "", http.StatusUnsupportedMediaType},
		{"cancel from another site", "DELETE", "", "https://evil.example", "", http.StatusForbidden},
		{"tar upload", "POST", "", "", "application/x-tar", http.StatusCreated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, body := "/v1/runs", io.Reader(nil)
			switch tc.method {
			case "POST":
				path, body = "/v1/runs?agent=anon", bytes.NewReader(bundle)
			case "DELETE":
				path = "/v1/runs/rnope"
			}
			req, _ := http.NewRequest(tc.method, a.srv.URL+path, body)
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("%d, want %d: %s", resp.StatusCode, tc.want, b)
			}
		})
	}
	// Only the tar upload was accepted.
	runs, err := coordinator.NewClient(a.srv.URL, "", nil).List(context.Background())
	if err != nil || len(runs) != 1 {
		t.Fatalf("%d runs, %v; want the one tar upload", len(runs), err)
	}
	a.exec.ReleaseAll()
}

// TestAPISeveralTokens: each token of a token file is accepted, and the client (which sends a
// tar content type) works with any of them.
func TestAPISeveralTokens(t *testing.T) {
	toks, err := coordinator.ParseTokens("# fleet tokens\nalice a-secret\n\nbob-secret\n", "tokens")
	if err != nil {
		t.Fatal(err)
	}
	a := startAPI(t, func(_ *fleet.InProcessConfig, api *coordinator.APIConfig) { api.Token, api.Tokens = "", toks })
	for _, tok := range []string{"a-secret", "bob-secret"} {
		if resp, b := a.do(t, "GET", "/v1/runs", tok, nil); resp.StatusCode != http.StatusOK {
			t.Errorf("token %s: %d %s", tok, resp.StatusCode, b)
		}
	}
	for _, tok := range []string{"alice", "a-secretx", "line 4", token} {
		if resp, _ := a.do(t, "GET", "/v1/runs", tok, nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("token %q: %d, want 401", tok, resp.StatusCode)
		}
	}
}

// openStream opens a run's event stream with tok and returns the response; the stream stays
// open until the test ends.
func openStream(t *testing.T, url, tok string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	return resp
}

// TestAPIEventStreamCaps: over the cap per token, and over the global cap, a stream request
// gets 429 with Retry-After; other callers are not hit by one caller's cap.
func TestAPIEventStreamCaps(t *testing.T) {
	a := startAPI(t, func(c *fleet.InProcessConfig, api *coordinator.APIConfig) {
		api.Tokens = []coordinator.Token{{Name: "alice", Secret: "a-secret"}}
		api.MaxStreams, api.MaxStreamsPerCaller = 3, 2
	})
	st := a.submit(t, "agent=held&case=select_dev", bundleOf(t, examples))
	url := a.srv.URL + "/v1/runs/" + st.GetId() + "/events"
	for _, step := range []struct {
		tok  string
		want int
		msg  string
	}{
		{token, http.StatusOK, ""},
		{token, http.StatusOK, ""},
		{token, http.StatusTooManyRequests, "cap per token"},
		{"a-secret", http.StatusOK, ""},
		{"a-secret", http.StatusTooManyRequests, "coordinator's cap"},
	} {
		resp := openStream(t, url, step.tok)
		if resp.StatusCode != step.want {
			t.Fatalf("stream for %s: %d, want %d", step.tok, resp.StatusCode, step.want)
		}
		if step.want == http.StatusTooManyRequests {
			b, _ := io.ReadAll(resp.Body)
			if resp.Header.Get("Retry-After") == "" || !strings.Contains(decodeError(t, b).Error, step.msg) {
				t.Errorf("429 without Retry-After or reason %q: %v %s", step.msg, resp.Header, b)
			}
		}
	}
}

// fakeClock advances a second each time it is read.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

// TestAPIMinimumUploadRate: a body that trickles (here: each read of it takes a second on the
// injected clock, and brings 1 KiB) is failed with 408, and one that stalls outright is cut by
// the read deadline, 408 too; nothing is stored.
func TestAPIMinimumUploadRate(t *testing.T) {
	clock := &fakeClock{t: time.Now()}
	a := startAPI(t, func(_ *fleet.InProcessConfig, api *coordinator.APIConfig) {
		api.MinUploadRate, api.UploadRateWindow, api.Now = 64<<10, 10*time.Second, clock.now
	})
	stall := startAPI(t, func(_ *fleet.InProcessConfig, api *coordinator.APIConfig) {
		api.MinUploadRate, api.UploadRateWindow = 64<<10, 300*time.Millisecond
	})
	for _, tc := range []struct {
		name   string
		a      *apiFleet
		chunks int // 1 KiB chunks sent before the body stalls
	}{
		{"trickle", a, 600}, // 600 KiB: under 10 s × 64 KiB/s whatever reads the server makes
		{"stall", stall, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr, pw := io.Pipe()
			go func() {
				chunk := bytes.Repeat([]byte{'x'}, 1<<10)
				for range tc.chunks {
					if _, err := pw.Write(chunk); err != nil {
						return
					}
				}
				// Then nothing more: the server must end it.
			}()
			defer pw.Close()
			req, _ := http.NewRequest(http.MethodPost, tc.a.srv.URL+"/v1/runs", pr)
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/x-tar")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "upload too slow") {
				t.Fatalf("%d %s, want 408 upload too slow", resp.StatusCode, b)
			}
			if runs, err := tc.a.client().List(context.Background()); err != nil || len(runs) != 0 {
				t.Fatalf("%d runs, %v", len(runs), err)
			}
		})
	}
}

// TestAPIErrorsHideServerPaths: an upload the coordinator cannot spool (its bundle directory,
// where uploads are spooled, is gone) answers 500 naming the failure but not the directory.
func TestAPIErrorsHideServerPaths(t *testing.T) {
	a := startAPI(t, nil)
	gone := filepath.Join(a.dataDir, "coordinator", "bundles")
	if _, err := os.Stat(gone); err != nil {
		t.Fatalf("the bundle cache is not where this test removes it: %v", err)
	}
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	resp, b := a.do(t, http.MethodPost, "/v1/runs", token, bundleOf(t, examples))
	if resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("%d %s, want 500", resp.StatusCode, b)
	}
	msg := decodeError(t, b).Error
	if strings.Contains(string(b), a.dataDir) || strings.Contains(msg, "/bundles/") {
		t.Errorf("error body shows a server path: %s", b)
	}
	if !strings.Contains(msg, "no such file or directory") {
		t.Errorf("error body %s lost the reason", b)
	}
}

// TestAPIReadyzFailsWhileTheStoreCannotWrite: a coordinator still connected to NATS whose
// JetStream stops taking writes (the server disables it, as nats-server does on a storage
// failure) is not ready, and says why; the probe's answer is reused for a moment.
func TestAPIReadyzFailsWhileTheStoreCannotWrite(t *testing.T) {
	ns, nc, topo := queuetest.Start(t)
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Now()
	c, err := coordinator.New(coordinator.Config{DataDir: t.TempDir()}, coordinator.Deps{
		Queue: topo, Runs: topo.Runs(), Bundles: topo, Log: zaptest.NewLogger(t), Registry: prometheus.NewRegistry(),
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	h := c.Handler(coordinator.APIConfig{Ready: func(context.Context) error { return nil }})
	readyz := func() (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := readyz(); code != http.StatusOK {
		t.Fatalf("healthy store: %d %s", code, body)
	}
	// The probe key is no run.
	if runs, err := c.List(ctx); err != nil || len(runs) != 0 {
		t.Errorf("List: %d runs, %v", len(runs), err)
	}
	if err := ns.DisableJetStream(); err != nil {
		t.Fatal(err)
	}
	if code, _ := readyz(); code != http.StatusOK {
		t.Errorf("within the probe's cache time: %d, want the cached 200", code)
	}
	mu.Lock()
	now = now.Add(3 * time.Second)
	mu.Unlock()
	code, body := readyz()
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "store cannot write") {
		t.Fatalf("store without JetStream: %d %s, want 503 naming the store", code, body)
	}
	if !nc.IsConnected() {
		t.Fatal("the test meant NATS to stay connected")
	}
}

// TestAPILongUploadOnHardenedServer: on a server whose read and write timeouts are shorter
// than an upload (here 300 ms against a body that pauses 1 s), an upload that keeps above the
// minimum rate is accepted and answered: the upload extends its read deadline, and the answer
// gets a write deadline of its own.
func TestAPILongUploadOnHardenedServer(t *testing.T) {
	a := startAPI(t, nil)
	hs := httpserve.New(mustListen(t), a.fleet.Coordinator.Handler(coordinator.APIConfig{
		Token: token, MinUploadRate: 1, UploadRateWindow: 10 * time.Second, WriteTimeout: 300 * time.Millisecond,
	}), httpserve.Config{ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond})
	go func() { _ = hs.Serve() }()
	t.Cleanup(func() { _ = hs.HTTP.Close() })

	bundle := bundleOf(t, examples)
	pr, pw := io.Pipe()
	go func() {
		half := len(bundle) / 2
		_, _ = pw.Write(bundle[:half])
		time.Sleep(time.Second) // longer than the server's timeouts, within the rate's window
		_, _ = pw.Write(bundle[half:])
		_ = pw.Close()
	}()
	req, _ := http.NewRequest(http.MethodPost, "http://"+hs.Addr().String()+"/v1/runs?agent=slow", pr)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("a slow but steady upload: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("%d %s, want 201", resp.StatusCode, b)
	}
	a.exec.ReleaseAll()
}

func mustListen(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestAPIProbeKeyIsNoRun: the key /readyz writes in the run-state bucket is not a run.
func TestAPIProbeKeyIsNoRun(t *testing.T) {
	a := startAPI(t, nil)
	if resp, b := a.do(t, http.MethodGet, "/readyz", "", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz: %d %s", resp.StatusCode, b)
	}
	if resp, b := a.do(t, http.MethodGet, "/v1/runs/readyz-probe", token, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the probe key as a run: %d %s, want 404", resp.StatusCode, b)
	}
}
