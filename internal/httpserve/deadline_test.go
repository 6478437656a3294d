package httpserve

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/internal/httpserve/httpservetest"
)

// TestWriteDeadlines: with a deadline of 1 s on every write, an answer of 2 MiB reaches a
// client that reads it slowly but steadily, for longer than the server's WriteTimeout, while a
// client that stops reading one of 64 MiB is cut off and the handler's write fails, so it
// returns.
func TestWriteDeadlines(t *testing.T) {
	const size = 2 << 20
	done := make(chan error, 2)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := size
		if r.URL.Path == "/big" {
			n = 64 << 20
		}
		_, err := WriteDeadlines(w, time.Second).Write(make([]byte, n))
		done <- err
	})
	// Accepted sockets inherit the listener's small send buffer.
	l, err := (&net.ListenConfig{Control: httpservetest.SmallBuffer(syscall.SO_SNDBUF)}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := serveOn(t, l, h, Config{WriteTimeout: 500 * time.Millisecond})
	d := net.Dialer{Control: httpservetest.SmallBuffer(syscall.SO_RCVBUF)}
	get := func(path string) *bufio.Reader {
		c, err := d.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("answer: %v %v", resp, err)
		}
		return br
	}

	// Steady: 64 KiB every 50 ms, 1.6 s in all.
	br := get("/")
	got := 0
	for got < size {
		n, err := io.ReadFull(br, make([]byte, min(64<<10, size-got)))
		got += n
		if err != nil {
			t.Fatalf("the steady reader was cut off after %d of %d bytes: %v", got, size, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatalf("the handler's write to the steady reader: %v", err)
	}

	// Stalled: reads the headers, then nothing.
	get("/big")
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the handler wrote 64 MiB to a client that reads nothing")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the handler's write to a client that reads nothing was still blocked after 20 s")
	}
}
