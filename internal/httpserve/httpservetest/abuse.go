// Package httpservetest plays abusive HTTP clients against a server under test: a slowloris
// connection that trickles its headers, and a reader that asks for an answer and then stops
// reading it. It is a test helper: only tests import it.
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
	"syscall"
	"testing"
	"time"
)

// Trickle keeps one slowloris connection from ip to addr until ctx ends: a request line and a
// few headers, then one header byte every every, never the blank line. When the server drops
// it, it dials again, as an attacker would. opened is told once, after the first dial.
func Trickle(ctx context.Context, addr string, ip net.IP, every time.Duration, opened chan<- struct{}) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: 2 * time.Second}
	first := true
	for ctx.Err() == nil {
		c, err := d.DialContext(ctx, "tcp", addr)
		if first {
			opened <- struct{}{}
			first = false
		}
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		stop := context.AfterFunc(ctx, func() { _ = c.Close() })
		_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\nX-Slow: ")
		tick := time.NewTicker(every)
		for err == nil {
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-tick.C:
				_, err = c.Write([]byte("a"))
			}
		}
		tick.Stop()
		stop()
		_ = c.Close()
	}
}

// Stall sends a GET of rawURL with header from a socket with a small receive buffer, reads
// the answer's status line and then nothing more, until the test ends: a client that holds
// an answer it does not take. It returns the status code.
func Stall(t testing.TB, rawURL string, header http.Header) int {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	d := net.Dialer{Timeout: 10 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		if cerr := rc.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) }); cerr != nil {
			return cerr
		}
		return err
	}}
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
