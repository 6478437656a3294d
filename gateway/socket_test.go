package gateway

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/internal/testutil"
)

// TestGatewaySocketSilentConnectionsCannotStarveSessions: a sandbox that opens hundreds of
// connections to the gateway socket and sends nothing holds at most the socket's cap, and a
// session's request is still served.
func TestGatewaySocketSilentConnectionsCannotStarveSessions(t *testing.T) {
	f := newGatewayFixture(t, textReply(3, 4), nil)
	var silent []net.Conn
	for range 300 {
		c, err := net.Dial("unix", f.socket)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		silent = append(silent, c)
	}
	s, err := f.g.Open("job-1", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if r := f.do(t, http.MethodPost, "/v1/chat/completions", s.Token(), chatBody); r.Status != http.StatusOK {
		t.Fatalf("a session's request with 300 silent connections open: %d %s", r.Status, r.Body)
	}
	// The request's connection was accepted after every silent one, so by now the gateway has
	// closed all but its cap of them: those reads end at once. The deadline only ends the reads
	// of the ones it keeps.
	closed := make(chan bool, len(silent))
	for _, c := range silent {
		go func() {
			_ = c.SetReadDeadline(time.Now().Add(time.Second))
			_, err := c.Read(make([]byte, 1))
			closed <- err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
		}()
	}
	n := 0
	for range silent {
		if <-closed {
			n++
		}
	}
	if n < len(silent)-64 {
		t.Fatalf("the gateway closed %d of %d silent connections; it may keep 64", n, len(silent))
	}
}

// socketClient is an HTTP client of one Unix socket, bounded in time so that a starved
// request fails the test instead of hanging it.
func socketClient(t *testing.T, sock string) *http.Client {
	t.Helper()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// TestGatewaySocketPerJob: the review's exhaustion attack. One job held every connection of the
// worker's one gateway socket with requests that never finish, and the other jobs' CLIs were
// reset. Each job now has a socket of its own, under a name its sandbox cannot list, serving
// only its token: a job that crowds its own socket does not slow another's, and a token is
// refused on another job's socket.
func TestGatewaySocketPerJob(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), "hog") {
			<-release
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`)
	}))
	t.Cleanup(up.Close)
	t.Cleanup(func() { close(release) })
	f := serveGateway(t, up.URL+"/v1", nil)
	hog, err := f.g.Open("hog", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	victim, err := f.g.Open("victim", Budget{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(f.socket)
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o711 {
		t.Fatalf("socket directory %v %v: want 0711, reachable but not listable by the sandbox's user", st.Mode(), err)
	}
	for _, s := range []*Session{hog, victim} {
		if !strings.HasPrefix(s.Socket(), "job-") || len(s.Socket()) != len("job-")+32+len(".sock") {
			t.Fatalf("session socket %q: want a random name", s.Socket())
		}
	}
	// The hog fills its own socket and more, with requests that never end.
	hogClient := socketClient(t, filepath.Join(dir, hog.Socket()))
	hogClient.Timeout = 0
	for range 100 {
		go func() {
			req, _ := http.NewRequest(http.MethodPost, "http://gateway/v1/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"hog"}]}`))
			req.Header.Set("Authorization", "Bearer "+hog.Token())
			if resp, err := hogClient.Do(req); err == nil {
				_ = resp.Body.Close()
			}
		}()
	}
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool { return len(hog.slots) == cap(hog.slots) }, "the hog's requests hold its slots")

	victimClient := socketClient(t, filepath.Join(dir, victim.Socket()))
	send := func(token string) int {
		req, _ := http.NewRequest(http.MethodPost, "http://gateway/v1/chat/completions", strings.NewReader(chatBody))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := victimClient.Do(req)
		if err != nil {
			t.Fatalf("the victim's request while the hog crowds its socket: %v", err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	for i := range 5 {
		if status := send(victim.Token()); status != http.StatusOK {
			t.Fatalf("victim request %d: %d", i, status)
		}
	}
	if status := send(hog.Token()); status != http.StatusUnauthorized {
		t.Errorf("the hog's token on the victim's socket: %d, want 401", status)
	}
	name := victim.Socket()
	victim.Close()
	if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a closed session's socket is still there: %v", err)
	}
}
