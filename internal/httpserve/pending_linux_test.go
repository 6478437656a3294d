package httpserve

import (
	"net"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/internal/testutil"
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
	testutil.Eventually(t, 5*time.Second, time.Millisecond, func() bool { return requestPending(server) },
		"written bytes never showed as pending")
}
