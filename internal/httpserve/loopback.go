package httpserve

import (
	"net"
	"strings"
)

// LoopbackHost reports whether a Host header (with or without a port) names this machine. A
// server that answers anonymous callers on loopback checks it: a DNS-rebinding page reaches a
// loopback port under its own name, which this refuses.
func LoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
