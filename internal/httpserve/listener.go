package httpserve

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// capListener caps open connections, in total and per remote IP. Connections over a cap are
// never queued: a queued connection still holds a descriptor in the kernel's
// backlog and its client waits without an answer, so under a flood of silent connections
// netutil.LimitListener would leave real clients queued behind them until each header timeout.
// Instead, at the total cap the oldest connection that has not started a request is evicted:
// a flood then only ever displaces itself, while a client that sends its request at once is
// active, and kept. The per-IP cap evicts the same way, among that address's connections.
type capListener struct {
	net.Listener
	max, perIP int

	mu    sync.Mutex
	conns map[*conn]struct{}
	byIP  map[string]int
	seq   uint64
}

func newCapListener(l net.Listener, max, perIP int) *capListener {
	return &capListener{Listener: l, max: max, perIP: perIP, conns: map[*conn]struct{}{}, byIP: map[string]int{}}
}

// conn is one tracked connection.
type conn struct {
	net.Conn
	l    *capListener
	ip   string
	seq  uint64 // accept order: the lowest evictable one goes first
	busy bool   // a request is being read or served (or the conn was hijacked)
	// served: a request came and was answered. A keep-alive connection that served one has
	// shown it is a client; it goes only after every connection that never sent a request.
	served bool
	// lastRead is when a Read last returned bytes (unix nanoseconds; 0: never). The server
	// marks a connection active only once a request's headers are all read, so between its
	// first read and then the connection looks as idle as a silent one, and the socket no
	// longer holds the bytes requestPending looks for.
	lastRead atomic.Int64
	// idleAt is when the connection last went idle after a request (unix nanoseconds; 0:
	// never): bytes read before it belong to the request already answered.
	idleAt int64
	once   sync.Once
}

// readGrace is how long after bytes arrive a connection that has not become active is still
// taken for a client whose request the server is reading. A sender slower than this is
// evictable again; ReadHeaderTimeout ends it in any case.
const readGrace = time.Second

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.lastRead.Store(time.Now().UnixNano())
	}
	return n, err
}

// reading reports whether bytes of a request not yet answered came in within readGrace of
// now. The caller holds the listener's mu (idleAt).
func (c *conn) reading(now time.Time) bool {
	at := c.lastRead.Load()
	return at != 0 && at > c.idleAt && now.Sub(time.Unix(0, at)) < readGrace
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.forget(c) })
	return err
}

// Accept returns the next connection within the caps; the ones over a cap are closed here.
func (l *capListener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		c, evict := l.admit(nc)
		if evict != nil {
			_ = evict.Close()
		}
		if c == nil {
			_ = nc.Close()
			continue
		}
		return c, nil
	}
}

// admit tracks nc if the caps allow it, returning the tracked conn (nil: refuse nc) and a
// connection to evict to make room.
func (l *capListener) admit(nc net.Conn) (*conn, *conn) {
	ip := remoteIP(nc.RemoteAddr())
	l.mu.Lock()
	defer l.mu.Unlock()
	full := l.perIP > 0 && l.byIP[ip] >= l.perIP
	var evict *conn
	switch {
	case full:
		// The address's own oldest idle connection makes room: a flood from one host displaces
		// only itself, and a client sharing its address (a NAT, loopback) is still served.
		evict = l.oldestIdle(ip, true)
	case len(l.conns) >= l.max:
		full, evict = true, l.oldestIdle("", false)
	}
	if full {
		if evict == nil {
			return nil, nil // every connection is serving a request: refuse the new one
		}
		l.untrack(evict)
	}
	l.seq++
	c := &conn{Conn: nc, l: l, ip: ip, seq: l.seq}
	l.conns[c] = struct{}{}
	l.byIP[ip]++
	return c, evict
}

// oldestIdle is the connection to evict, of ip only when sameIP: the longest-waiting one that
// never sent a request, else the longest-idle keep-alive one; nil when every connection is
// serving a request. A flood of silent connections then only ever displaces itself, even
// when it churns faster than a client's next request on a kept-alive connection. The caller
// holds mu.
func (l *capListener) oldestIdle(ip string, sameIP bool) *conn {
	// Spared for this eviction only: marking them busy would keep them for good, since the
	// server tells nothing more of a connection that stays idle (an answered keep-alive
	// connection whose last read was moments ago would then hold its slot until IdleTimeout,
	// and a burst of them would lock every new client out).
	var spared map[*conn]bool
	for {
		old := l.oldestCandidate(ip, sameIP, spared)
		// A connection whose request is in its socket, or being read from it, is a client the
		// server has not got to the end of yet (a starved CPU, a burst of accepts): it is not
		// evicted. Silent ones have neither, so this costs one look per eviction in a flood.
		if old == nil || (!old.reading(time.Now()) && (old.served || !requestPending(old.Conn))) {
			return old
		}
		if spared == nil {
			spared = map[*conn]bool{}
		}
		spared[old] = true
	}
}

// oldestCandidate is oldestIdle without the look at the socket; the caller holds mu.
func (l *capListener) oldestCandidate(ip string, sameIP bool, spared map[*conn]bool) *conn {
	var old *conn
	for c := range l.conns {
		if c.busy || spared[c] || (sameIP && c.ip != ip) {
			continue
		}
		if old == nil || (old.served && !c.served) || (old.served == c.served && c.seq < old.seq) {
			old = c
		}
	}
	return old
}

func (l *capListener) forget(c *conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.untrack(c)
}

// untrack drops c from the counts once; the caller holds mu.
func (l *capListener) untrack(c *conn) {
	if _, ok := l.conns[c]; !ok {
		return
	}
	delete(l.conns, c)
	if l.byIP[c.ip]--; l.byIP[c.ip] <= 0 {
		delete(l.byIP, c.ip)
	}
}

// setState is the server's ConnState hook: it tells which connections may be evicted.
func (l *capListener) setState(nc net.Conn, st http.ConnState) {
	c, ok := nc.(*conn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch st {
	case http.StateActive, http.StateHijacked:
		c.busy = true
	case http.StateNew, http.StateIdle:
		c.busy = false
		// An idle connection counts as new from when it went idle: older idle ones go first.
		if st == http.StateIdle {
			l.seq++
			c.seq = l.seq
			c.served = true
			c.idleAt = time.Now().UnixNano()
		}
	case http.StateClosed:
		l.untrack(c)
	}
}

func (l *capListener) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// remoteIP is the host part of a remote address, the key of the per-address cap: an IPv6
// address counts by its /64, the block one host or site gets, so that a host cannot spread
// a flood over the addresses of its own prefix. Every unix-socket peer shares "".
func remoteIP(a net.Addr) string {
	if a == nil {
		return ""
	}
	if ta, ok := a.(*net.TCPAddr); ok {
		if ta.IP.To4() == nil && len(ta.IP) == net.IPv6len {
			return ta.IP.Mask(net.CIDRMask(64, 128)).String() + "/64"
		}
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return ""
	}
	return host
}
