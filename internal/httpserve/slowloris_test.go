package httpserve

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/internal/httpserve/httpservetest"
	"github.com/skillfleet/skillfleet/internal/testutil"
)

// TestTricklingHeadersCannotStarveClients: the review's slowloris. 1,030 connections from ten
// addresses each send one header byte every 0.5 s, under the caps the coordinator runs with
// (Defaults: cmd/coordinator's --max-conns and --max-conns-per-ip default to them). Every
// trickling connection looked like a request being read and was never evicted, so at the cap
// new clients were refused. A well-behaved client (a new connection, its whole request at once)
// must be served every time.
func TestTricklingHeadersCannotStarveClients(t *testing.T) {
	if testing.Short() {
		t.Skip("holds 2,000 sockets")
	}
	s := serve(t, authed, Config{})
	addr := s.Addr().String()
	const tricklers, hosts = 1030, 10
	httpservetest.Flood(t, addr, tricklers, httpservetest.Loopback(2, hosts), 0, httpservetest.Trickling(500*time.Millisecond))
	testutil.Eventually(t, time.Minute, 20*time.Millisecond, func() bool { return s.Conns() >= Defaults.MaxConns },
		"the flood did not fill the cap of %d connections", Defaults.MaxConns)

	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, Timeout: 5 * time.Second}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, DialContext: d.DialContext}}
	// The requests are spread over 6 s, past the header timeout, so that they meet the flood
	// fresh, aged past the grace, and redialling after the server cut it.
	failed := 0
	for i := range 20 {
		if i > 0 {
			time.Sleep(300 * time.Millisecond)
		}
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
		req.Header.Set("Authorization", "Bearer t")
		resp, err := client.Do(req)
		if err != nil {
			failed++
			t.Errorf("request %d of 20 during the trickle (%d connections held): %v", i+1, s.Conns(), err)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != "ok" {
			failed++
			t.Errorf("request %d of 20 during the trickle: %d %q", i+1, resp.StatusCode, b)
		}
	}
	if n := s.Conns(); n > Defaults.MaxConns {
		t.Errorf("the server holds %d connections, over its cap of %d", n, Defaults.MaxConns)
	}
	t.Logf("%d of 20 well-behaved requests failed under %d trickling connections from %d addresses", failed, tricklers, hosts)
}

// TestHeaderDeadlineRunsFromTheFirstByte: a kept-alive connection's next request must arrive
// whole within ReadHeaderTimeout of its first byte. The server alone gives such a connection
// the idle timeout until four bytes are in, so a byte now and then held it for minutes.
func TestHeaderDeadlineRunsFromTheFirstByte(t *testing.T) {
	s := serve(t, authed, Config{ReadHeaderTimeout: 300 * time.Millisecond, IdleTimeout: time.Minute})
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	// One byte of the next request, then nothing: the server must close the connection long
	// before its idle minute is up (the wait is bounded well below it).
	if _, err := io.WriteString(c, "G"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err = br.ReadByte()
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("a kept-alive connection that sent one byte of its next request was still open after 20 s (ReadHeaderTimeout 300 ms)")
	}
	if err == nil {
		t.Fatal("the server answered a request it never got")
	}
}
