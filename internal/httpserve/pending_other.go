//go:build !linux

package httpserve

import "net"

// requestPending cannot look into a socket here: every connection that has not started a
// request may be evicted.
func requestPending(net.Conn) bool { return false }
