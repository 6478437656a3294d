// Package httpservetest plays abusive HTTP clients against a server under test: floods of
// connections that trickle their headers (slowloris) or send nothing, and a reader that asks
// for an answer and then stops reading it. It is a test helper: only tests import it.
package httpservetest

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Flood keeps n connections to addr open until the test ends, connection i from the local
// address from(i), each played by hold until it ends (the server closed it, or the test
// ended) and then dialled again after pause, as an attacker would: a timeout or an eviction
// alone only makes such a flood breathe. It returns once every connection has been dialled.
func Flood(t testing.TB, addr string, n int, from func(i int) net.IP, pause time.Duration, hold func(ctx context.Context, c net.Conn)) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { stop(); wg.Wait() })
	opened := make(chan struct{}, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: from(i)}, Timeout: 2 * time.Second}
			first := true
			for ctx.Err() == nil {
				c, err := d.DialContext(ctx, "tcp", addr)
				if first {
					opened <- struct{}{}
					first = false
				}
				if err != nil {
					wait(ctx, 100*time.Millisecond)
					continue
				}
				stopClose := context.AfterFunc(ctx, func() { _ = c.Close() })
				hold(ctx, c)
				stopClose()
				_ = c.Close()
				wait(ctx, pause)
			}
		}()
	}
	for range n {
		<-opened
	}
}

// wait waits d, or until ctx ends.
func wait(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// Loopback is Flood's from for connections spread over hosts loopback addresses from
// 127.0.0.first on (Linux routes all of 127/8 to lo).
func Loopback(first, hosts int) func(i int) net.IP {
	return func(i int) net.IP { return net.IPv4(127, 0, 0, byte(first+i%hosts)) }
}

// Silent is a Flood's connection that sends nothing and waits for the server to close it.
func Silent(_ context.Context, c net.Conn) { _, _ = io.Copy(io.Discard, c) }

// Trickling is a Flood's slowloris connection: a request line and a few headers, then one
// header byte every every, never the blank line that would end them.
func Trickling(every time.Duration) func(ctx context.Context, c net.Conn) {
	return func(ctx context.Context, c net.Conn) {
		_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\nX-Slow: ")
		tick := time.NewTicker(every)
		defer tick.Stop()
		for err == nil {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_, err = c.Write([]byte("a"))
			}
		}
	}
}

// Stall sends a GET of rawURL with header, from the local address from (nil: any) and a
// socket with a small receive buffer, reads the answer's status line and then nothing more,
// until the test ends: a client that holds an answer it does not take. It returns the status
// code.
func Stall(t testing.TB, from net.IP, rawURL string, header http.Header) int {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: from}, Timeout: 10 * time.Second, Control: SmallBuffer(syscall.SO_RCVBUF)}
	c, err := d.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	var req strings.Builder
	req.WriteString("GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\n")
	for k, vs := range header {
		for _, v := range vs {
			req.WriteString(k + ": " + v + "\r\n")
		}
	}
	req.WriteString("\r\n")
	if _, err := io.WriteString(c, req.String()); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReaderSize(c, 16).ReadString('\n')
	if err != nil {
		t.Fatalf("the status line of GET %s: %v", u.Path, err)
	}
	f := strings.Fields(line)
	code := 0
	if len(f) >= 2 {
		code, _ = strconv.Atoi(f[1])
	}
	if code == 0 {
		t.Fatalf("GET %s: status line %q", u.Path, line)
	}
	return code
}

// SmallBuffer is a socket option setter for net.Dialer and net.ListenConfig: a 4 KiB buffer of
// opt (syscall.SO_SNDBUF or SO_RCVBUF; accepted sockets inherit a listener's), so that the
// sockets cannot hold a whole answer at once.
func SmallBuffer(opt int) func(_, _ string, rc syscall.RawConn) error {
	return func(_, _ string, rc syscall.RawConn) error {
		var err error
		if cerr := rc.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, opt, 4096) }); cerr != nil {
			return cerr
		}
		return err
	}
}
