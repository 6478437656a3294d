package httpserve

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"
)

// pipeListener accepts the server ends of the pipes it is given.
type pipeListener struct{ conns chan net.Conn }

func (l pipeListener) Accept() (net.Conn, error) { return <-l.conns, nil }
func (l pipeListener) Close() error              { return nil }
func (l pipeListener) Addr() net.Addr            { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// pipeConn is a server end with a TCP remote address, so the per-IP accounting works.
type pipeConn struct{ net.Conn }

func (pipeConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }

// TestEvictionSparesARequestBeingRead: at the cap, the oldest connection that has not become
// active is evicted, unless the server is reading a request from it: its bytes have left the
// socket (so requestPending sees nothing) but its headers are not all read (so the server has
// not marked it active). The silent connection behind it goes instead.
func TestEvictionSparesARequestBeingRead(t *testing.T) {
	for _, tc := range []struct {
		name      string
		readFirst bool // the server has read bytes from the oldest connection
		wantEvict int  // which of the first two connections the third one displaces
	}{
		{"oldest is silent: it goes", false, 0},
		{"oldest is being read: the silent one goes", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := pipeListener{conns: make(chan net.Conn, 3)}
			l := newCapListener(src, 2, -1, Defaults.ReadHeaderTimeout)
			var clients []net.Conn
			for i := range 3 {
				client, server := net.Pipe()
				defer client.Close()
				clients = append(clients, client)
				src.conns <- pipeConn{server}
				c, err := l.Accept()
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if i == 0 && tc.readFirst {
					go func() { _, _ = client.Write([]byte("GET / HTTP/1.1\r\n")) }()
					if _, err := c.Read(make([]byte, 64)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if n := l.open(); n != 2 {
				t.Fatalf("%d connections tracked, want the cap of 2", n)
			}
			// The evicted one is closed: its client's read ends at once; the others' would block.
			for i := range 2 {
				evicted := isClosed(clients[i])
				if want := i == tc.wantEvict; evicted != want {
					t.Errorf("connection %d evicted=%v, want %v", i, evicted, want)
				}
			}
		})
	}
}

// isClosed reports whether the other end of a pipe was closed: a read with a deadline in the
// past then ends in EOF, and on an open pipe in a timeout.
func isClosed(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Unix(1, 0))
	_, err := c.Read(make([]byte, 1))
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

// TestAnsweredKeepAliveConnectionsAreEvictable: the review's lockout. A burst of clients that
// each got an answer and kept their connection open filled the cap; the listener spared each
// answered connection for having read bytes a moment ago and marked it busy for good, so every
// new client was refused until the idle timeout. An answered, idle keep-alive connection is
// always evictable: a new client is served at once, burst after burst.
func TestAnsweredKeepAliveConnectionsAreEvictable(t *testing.T) {
	s := serve(t, authed, Config{MaxConns: 8, MaxConnsPerIP: -1, IdleTimeout: time.Minute})
	addr := s.Addr().String()
	var kept []net.Conn
	t.Cleanup(func() {
		for _, c := range kept {
			_ = c.Close()
		}
	})
	ask := func() (net.Conn, int) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n\r\n")); err != nil {
			return c, 0
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return c, 0
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return c, resp.StatusCode
	}
	for round := range 3 {
		for i := range 8 {
			c, status := ask()
			kept = append(kept, c)
			if status != http.StatusOK {
				t.Fatalf("round %d, client %d: status %d; the answered keep-alive connections before it held the cap", round, i, status)
			}
		}
	}
}

// TestRemoteIPCountsIPv6ByPrefix: the per-address cap counts an IPv6 host by its /64.
func TestRemoteIPCountsIPv6ByPrefix(t *testing.T) {
	key := func(ip string) string { return remoteIP(&net.TCPAddr{IP: net.ParseIP(ip), Port: 1}) }
	if a, b := key("2001:db8:1:2::1"), key("2001:db8:1:2:ffff::9"); a != b {
		t.Errorf("one /64 counts as two addresses: %q, %q", a, b)
	}
	if a, b := key("2001:db8:1:2::1"), key("2001:db8:1:3::1"); a == b {
		t.Errorf("two /64s count as one: %q", a)
	}
	if got := key("192.0.2.7"); got != "192.0.2.7" {
		t.Errorf("IPv4 key %q", got)
	}
	if got := key("::ffff:192.0.2.7"); got != "192.0.2.7" {
		t.Errorf("IPv4-mapped key %q", got)
	}
}

// TestEvictionOrder: at the cap, the connection evicted is the one that has spent longest
// sending its headers, whether it is new or kept alive, and whatever it sent last; a silent
// new connection comes next, then an idle kept-alive one; a connection whose request is
// arriving now goes last.
func TestEvictionOrder(t *testing.T) {
	now := time.Now().UnixNano()
	sec := int64(time.Second)
	mk := func(seq uint64, served bool, headerAt int64, sent bool) *conn {
		c := &conn{seq: seq, served: served}
		c.headerAt.Store(headerAt)
		c.sent.Store(sent)
		return c
	}
	for _, tc := range []struct {
		name string
		a, b *conn // a must go before b
	}{
		{"a trickle of 3 s before one of 2 s, though it sent a byte just now", mk(2, false, now-3*sec, true), mk(1, false, now-2*sec, true)},
		{"a trickling kept-alive connection before a silent new one", mk(2, true, now-2*sec, true), mk(3, false, now-100, false)},
		{"a silent new connection before an idle kept-alive one", mk(5, false, now-100, false), mk(1, true, 0, true)},
		{"an idle kept-alive connection before a request arriving now", mk(5, true, 0, true), mk(1, false, now-100, true)},
		{"two silent new ones: the older first", mk(1, false, now-100, false), mk(2, false, now-50, false)},
		{"two idle ones: the one idle longest first", mk(1, true, 0, true), mk(2, true, 0, true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			grace := time.Second
			ka, kb := tc.a.evictKey(now, grace, false), tc.b.evictKey(now, grace, false)
			if !ka.before(kb) || kb.before(ka) {
				t.Fatalf("keys %+v and %+v: want the first evicted first", ka, kb)
			}
		})
	}
}

// addrConn is a connection from ip, for the per-address accounting.
type addrConn struct {
	net.Conn
	ip net.IP
}

func (c addrConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: c.ip, Port: 1} }

// TestEvictionTakesFromTheAddressHoldingMost: the e2e slowloris test's lost request. At the
// total cap, a lone client's connection accepted a moment before it wrote (silent) ranked
// before a flood's connections that had all sent a byte, and the flood's next redial cut it.
// The address holding the most connections now gives the victim; within one address the
// order is as before.
func TestEvictionTakesFromTheAddressHoldingMost(t *testing.T) {
	l := newCapListener(nil, 4, 0, 10*time.Second)
	admit := func(ip net.IP, sent bool) *conn {
		t.Helper()
		server, client := net.Pipe()
		t.Cleanup(func() { server.Close(); client.Close() })
		c, evict := l.admit(addrConn{server, ip})
		if c == nil || evict != nil {
			t.Fatalf("admit %v: conn %v, evicted %v; want admitted under the cap", ip, c, evict)
		}
		c.sent.Store(sent)
		return c
	}
	flood := net.IPv4(127, 0, 0, 2)
	var flooders []*conn
	for range 3 {
		flooders = append(flooders, admit(flood, true))
	}
	lone := admit(net.IPv4(127, 0, 0, 1), false)
	got := l.victim("", false)
	if got == lone || !slices.Contains(flooders, got) {
		t.Fatalf("victim at the cap: %v (lone client %p), want one of the flood's", got, lone)
	}
	// One address alone: its silent connection still goes before its arriving ones.
	l = newCapListener(nil, 4, 0, 10*time.Second)
	for range 2 {
		admit(flood, true)
	}
	silent := admit(flood, false)
	if got := l.victim("", false); got != silent {
		t.Fatalf("victim among one address's connections: %v, want the silent one %p", got, silent)
	}
}

// TestNextRequestReadWhileAnsweringStartsItsHeaderPhase: the server reads ahead once a
// request's body is done, so the first byte of the next request can be read while the answer
// is still being written, before the connection goes idle. That byte must start the next
// request's header phase when it does go idle; before, the phase waited for a byte that had
// already come, and a client that sent one byte right after an answer held the connection
// for the whole idle timeout (TestHeaderDeadlineRunsFromTheFirstByte, now and then, on a
// loaded machine).
func TestNextRequestReadWhileAnsweringStartsItsHeaderPhase(t *testing.T) {
	l := newCapListener(nil, 4, 0, 300*time.Millisecond)
	server, client := net.Pipe()
	t.Cleanup(func() { server.Close(); client.Close() })
	c, _ := l.admit(addrConn{server, net.IPv4(127, 0, 0, 1)})
	go func() {
		_, _ = io.Copy(io.Discard, client) // the answer
	}()
	l.setState(c, http.StateActive)
	if _, err := c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = client.Write([]byte("G")) }()
	buf := make([]byte, 8)
	if n, err := c.Read(buf); n != 1 || err != nil {
		t.Fatalf("read ahead: %d, %v", n, err)
	}
	l.setState(c, http.StateIdle)
	if end, inPhase := c.headerEnd(); !inPhase || time.Until(end) > 300*time.Millisecond {
		t.Fatalf("after going idle with the next request's first byte read: header phase %v ending %v, want one ending within 300 ms", inPhase, end)
	}
	// A request body read before the answer is not the next request.
	l.setState(c, http.StateActive)
	go func() { _, _ = client.Write([]byte("body")) }()
	if n, err := c.Read(buf); n != 4 || err != nil {
		t.Fatalf("body read: %d, %v", n, err)
	}
	if _, err := c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	l.setState(c, http.StateIdle)
	if _, inPhase := c.headerEnd(); inPhase {
		t.Fatal("a kept-alive connection whose body was read before its answer is in a header phase once idle, want its idle timeout")
	}
}
