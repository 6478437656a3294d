package httpserve

import (
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// capListener caps open connections, in total and per remote IP. Connections over a cap are
// never queued: a queued connection still holds a descriptor in the kernel's
// backlog and its client waits without an answer, so under a flood of silent connections
// netutil.LimitListener would leave real clients queued behind them until each header timeout.
// Instead, at a cap a connection that is not serving a request is evicted (victim says which):
// a flood then only ever displaces itself, while a client that sends its request at once is
// active, and kept. The per-IP cap evicts the same way, among that address's connections.
//
// It also bounds the header phase of every request, from its first byte: the server alone
// gives a kept-alive connection its idle timeout until four bytes of the next request are in.
type capListener struct {
	net.Listener
	max, perIP int
	// headerTimeout bounds a request's header phase (ReadHeaderTimeout); grace is how long a
	// header phase may last before the connection is taken for a slow sender (slowGrace).
	headerTimeout, grace time.Duration

	mu    sync.Mutex
	conns map[*conn]struct{}
	byIP  map[string]int
	seq   uint64
}

// slowGrace is how long a request's headers may take to arrive before its connection counts
// as a slow sender, first in line for eviction whatever it sent last: a client that has its
// request ready sends it in one go, well within this even across a continent.
const slowGrace = time.Second

// maxPendingChecks bounds the looks at sockets one eviction makes (requestPending), so that a
// burst of connections whose requests the server has not read yet costs a bounded time under
// the listener's lock.
const maxPendingChecks = 16

func newCapListener(l net.Listener, max, perIP int, headerTimeout time.Duration) *capListener {
	return &capListener{
		Listener: l, max: max, perIP: perIP, headerTimeout: headerTimeout, grace: min(slowGrace, headerTimeout/2),
		conns: map[*conn]struct{}{}, byIP: map[string]int{},
	}
}

// conn is one tracked connection.
type conn struct {
	net.Conn
	l   *capListener
	ip  string
	seq uint64 // accept order, or idle order once it served: the lower goes first in its rank
	// busy: a request is being read past its headers or served (or the conn was hijacked).
	// Written under the listener's mu; Read loads it without.
	busy atomic.Bool
	// served: a request came and was answered. A kept-alive connection that served one has
	// shown it is a client; while idle it goes only after the silent new ones. Under mu.
	served bool
	// headerAt is when the header phase of the request now arriving began (unix nanoseconds; 0:
	// none, an idle kept-alive connection): the accept for a new connection, the first byte of
	// the next request for a kept-alive one.
	headerAt atomic.Int64
	// sent: a Read returned bytes. A new connection with none is silent.
	sent atomic.Bool
	// readDeadline is the read deadline the server last set (unix nanoseconds; 0: none), which
	// Read tightens to the end of the header phase while it lasts.
	readDeadline atomic.Int64
	// answering: the request now served has begun writing its answer, so bytes read from
	// here on are the next request's (the server reads ahead once a body is done);
	// nextAt is when the first of them came (0: none yet). Reset when a request begins.
	answering atomic.Bool
	nextAt    atomic.Int64
	once      sync.Once
}

// Read reads, within the end of the header phase while the connection is in it.
func (c *conn) Read(p []byte) (int, error) {
	end, clamped := c.headerEnd()
	if clamped {
		if !time.Now().Before(end) {
			return 0, os.ErrDeadlineExceeded
		}
		if rd := c.readDeadline.Load(); rd == 0 || end.UnixNano() < rd {
			_ = c.Conn.SetReadDeadline(end)
			defer func() { _ = c.Conn.SetReadDeadline(unixOrZero(c.readDeadline.Load())) }()
		}
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.sent.Store(true)
		switch {
		case !c.busy.Load():
			// The first byte of a kept-alive connection's next request starts its header phase.
			c.headerAt.CompareAndSwap(0, time.Now().UnixNano())
		case c.answering.Load():
			// Read ahead while the answer is written: the next request's first byte, whose
			// header phase starts when the connection goes idle (setState), or a byte sent
			// right after an answer would escape the header deadline for the idle timeout.
			c.nextAt.CompareAndSwap(0, time.Now().UnixNano())
		}
	}
	return n, err
}

// Write marks the request now served as answering: what is read after is the next request.
func (c *conn) Write(p []byte) (int, error) {
	if len(p) > 0 && c.busy.Load() {
		c.answering.Store(true)
	}
	return c.Conn.Write(p)
}

// headerEnd is when the header phase of the request now arriving must be over, and whether
// the connection is in one.
func (c *conn) headerEnd() (time.Time, bool) {
	if c.l.headerTimeout <= 0 || c.busy.Load() {
		return time.Time{}, false
	}
	at := c.headerAt.Load()
	if at == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, at).Add(c.l.headerTimeout), true
}

// SetReadDeadline records the server's deadline, which Read restores after tightening it.
func (c *conn) SetReadDeadline(t time.Time) error {
	c.readDeadline.Store(unixNano(t))
	return c.Conn.SetReadDeadline(t)
}

// SetDeadline is SetReadDeadline and SetWriteDeadline.
func (c *conn) SetDeadline(t time.Time) error {
	c.readDeadline.Store(unixNano(t))
	return c.Conn.SetDeadline(t)
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func unixOrZero(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.forget(c) })
	return err
}

// The ranks of eviction, first evicted first.
const (
	// rankSlow: headers arriving for longer than the grace, longest first: a trickle or a
	// silent connection, whatever it sent last.
	rankSlow = iota
	// rankSilent: a new connection that has sent nothing yet, oldest first.
	rankSilent
	// rankIdle: a kept-alive connection between requests, idle longest first.
	rankIdle
	// rankArriving: a request arriving now (bytes read, or waiting in the socket), longest
	// first; the newest client goes last of all.
	rankArriving
)

// evictKey orders the connections that may be evicted.
type evictKey struct {
	rank int
	at   int64 // within a rank, the lower goes first
}

func (k evictKey) before(o evictKey) bool {
	return k.rank < o.rank || (k.rank == o.rank && k.at < o.at)
}

// evictKey is c's place in the order of eviction at now (unix nanoseconds); pending says its
// socket was seen to hold its request. The caller holds mu (served, seq).
func (c *conn) evictKey(now int64, grace time.Duration, pending bool) evictKey {
	at := c.headerAt.Load()
	switch {
	case at != 0 && now-at >= int64(grace):
		return evictKey{rankSlow, at}
	case !c.served && !c.sent.Load() && !pending:
		return evictKey{rankSilent, int64(c.seq)}
	case at == 0:
		return evictKey{rankIdle, int64(c.seq)}
	}
	return evictKey{rankArriving, at}
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
		// The address's own connections make room: a flood from one host displaces only
		// itself, and a client sharing its address (a NAT, loopback) is still served.
		evict = l.victim(ip, true)
	case len(l.conns) >= l.max:
		full, evict = true, l.victim("", false)
	}
	if full {
		if evict == nil {
			return nil, nil // every connection is serving a request: refuse the new one
		}
		l.untrack(evict)
	}
	l.seq++
	c := &conn{Conn: nc, l: l, ip: ip, seq: l.seq}
	c.headerAt.Store(time.Now().UnixNano())
	l.conns[c] = struct{}{}
	l.byIP[ip]++
	return c, evict
}

// victim is the connection to evict, of ip only when sameIP: the first in the order of
// evictKey, from the address holding the most connections when any address may give one
// (a flood from a few addresses then displaces only itself: a lone client's connection,
// accepted a moment before it writes, looked silent beside a flood whose connections had
// all sent a byte, and was cut); nil when every connection is serving a request. No connection is spared for
// having sent a byte lately: a trickle of one byte a second would then hold its slot for good.
// Only a new connection is looked at more closely: one whose request waits in its socket is a
// client the server has not got to yet (a starved CPU, a burst of accepts), not a silent one.
// The caller holds mu.
func (l *capListener) victim(ip string, sameIP bool) *conn {
	now := time.Now().UnixNano()
	var pending map[*conn]bool
	for checks := 0; ; checks++ {
		var best *conn
		var bestKey evictKey
		bestHeld := 0
		for c := range l.conns {
			if c.busy.Load() || (sameIP && c.ip != ip) {
				continue
			}
			held := l.byIP[c.ip]
			if best != nil && held < bestHeld {
				continue
			}
			if k := c.evictKey(now, l.grace, pending[c]); best == nil || held > bestHeld || k.before(bestKey) {
				best, bestKey, bestHeld = c, k, held
			}
		}
		if best == nil || bestKey.rank != rankSilent || checks >= maxPendingChecks || !requestPending(best.Conn) {
			return best
		}
		if pending == nil {
			pending = map[*conn]bool{}
		}
		pending[best] = true
	}
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
		c.busy.Store(true)
		c.answering.Store(false)
		c.nextAt.Store(0)
	case http.StateIdle:
		c.busy.Store(false)
		c.answering.Store(false)
		// An idle connection counts as new from when it went idle: older idle ones go first;
		// its next request's header phase starts with that request's first byte, which the
		// server may already have read while it answered the last.
		l.seq++
		c.seq = l.seq
		c.served = true
		c.headerAt.Store(c.nextAt.Swap(0))
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
