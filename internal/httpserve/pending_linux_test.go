package httpserve

import (
	"net"
	"testing"
	"time"
)

// TestRequestPending: a silent connection has nothing pending; one whose client wrote has.
func TestRequestPending(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	if requestPending(server) {
		t.Fatal("a silent connection has a request pending")
	}
	if _, err := client.Write([]byte("GET / HTTP/1.1\r\n")); err != nil {
		t.Fatal(err)
	}
	// Loopback delivers at once; the bound only keeps a broken kernel from hanging the test.
	for deadline := time.Now().Add(5 * time.Second); !requestPending(server); {
		if time.Now().After(deadline) {
			t.Fatal("written bytes never showed as pending")
		}
		time.Sleep(time.Millisecond)
	}
}
