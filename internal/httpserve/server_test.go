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
)

// serve starts a hardened server on loopback for h and stops it when the test ends.
func serve(t *testing.T, h http.Handler, cfg Config) *Server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveOn(t, l, h, cfg)
}

// serveOn is serve on the listener l.
func serveOn(t *testing.T, l net.Listener, h http.Handler, cfg Config) *Server {
	t.Helper()
	s := New(l, h, cfg)
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	t.Cleanup(func() {
		_ = s.HTTP.Close()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return s
}

// authed answers 200 to the bearer token "t", 401 otherwise.
var authed = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer t" {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	_, _ = w.Write([]byte("ok"))
})

// dialSilent opens n connections from the local address laddr that never send a byte.
func dialSilent(t *testing.T, addr string, laddr string, n int) []net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(laddr)}}
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %d: %v", len(conns), err)
		}
		conns = append(conns, c)
	}
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return conns
}

// closedByServer waits (bounded, generously) for the server to close c: a read ends in EOF or
// a reset, not in the local deadline.
func closedByServer(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err := c.Read(make([]byte, 1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("silent connection %s still open after 30 s", c.LocalAddr())
	}
	if err == nil {
		t.Fatalf("silent connection %s got bytes", c.LocalAddr())
	}
}

// TestSilentConnectionsCannotStarveClients: 500 silent connections against a cap of 64 leave
// the server holding at most 64, an authenticated request is still served, and the silent
// ones are all closed (the last ones by the header timeout).
func TestSilentConnectionsCannotStarveClients(t *testing.T) {
	for _, tc := range []struct {
		name       string
		silentFrom string // local address of the silent connections
		perIP      int
	}{
		// One host floods: its per-IP cap keeps it from the rest of the slots.
		{"one host, per-IP cap", "127.0.0.2", 16},
		// The flood comes from the client's own address: eviction of never-started connections
		// still makes room, under the global cap and under the per-IP one.
		{"same host, eviction", "127.0.0.1", -1},
		{"same host, per-IP eviction", "127.0.0.1", 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := serve(t, authed, Config{ReadHeaderTimeout: 500 * time.Millisecond, MaxConns: 64, MaxConnsPerIP: tc.perIP})
			addr := s.Addr().String()
			silent := dialSilent(t, addr, tc.silentFrom, 500)
			if n := s.Conns(); n > 64 {
				t.Fatalf("server holds %d connections, cap 64", n)
			}
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
			req.Header.Set("Authorization", "Bearer t")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("authenticated request with 500 silent connections open: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || string(b) != "ok" {
				t.Fatalf("authenticated request: %d %q", resp.StatusCode, b)
			}
			for _, c := range silent {
				closedByServer(t, c)
			}
		})
	}
}

// TestKeptAliveClientOutlastsAFlood: a client that was served keeps its kept-alive connection
// through a flood of silent connections from its own address: never-started connections are
// evicted before a connection that has served a request.
func TestKeptAliveClientOutlastsAFlood(t *testing.T) {
	s := serve(t, authed, Config{ReadHeaderTimeout: 5 * time.Second, MaxConns: 64, MaxConnsPerIP: 16})
	addr := s.Addr().String()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	get := func(what string) {
		t.Helper()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n\r\n"); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != "ok" {
			t.Fatalf("%s: %d %q", what, resp.StatusCode, b)
		}
	}
	get("first request")
	dialSilent(t, addr, "127.0.0.1", 200)
	get("second request on the kept-alive connection, after 200 silent ones from its address")
}

// TestTimeoutsAreSet: every server gets every timeout and a header cap, whatever it leaves zero.
func TestTimeoutsAreSet(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(l, authed, Config{WriteTimeout: time.Hour})
	defer s.HTTP.Close()
	h := s.HTTP
	if h.ReadHeaderTimeout <= 0 || h.ReadTimeout <= 0 || h.IdleTimeout <= 0 || h.MaxHeaderBytes <= 0 || h.WriteTimeout != time.Hour {
		t.Fatalf("server limits %v %v %v %v %d", h.ReadHeaderTimeout, h.ReadTimeout, h.WriteTimeout, h.IdleTimeout, h.MaxHeaderBytes)
	}
}
