package httpserve

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// requestPending reports whether bytes wait unread in c's socket: the client has sent (part
// of) its request.
func requestPending(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	n := 0
	// TIOCINQ is FIONREAD (SIOCINQ on a socket): the bytes received and not yet read.
	if err := raw.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); err != nil {
		return false
	}
	return n > 0
}
