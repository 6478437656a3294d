package httpserve

import (
	"errors"
	"net"
	"os"
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
			l := newCapListener(src, 2, -1)
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
