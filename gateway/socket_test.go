package agent

import (
	"errors"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
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
	s, err := f.g.Open("job-1", Budget{})
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
