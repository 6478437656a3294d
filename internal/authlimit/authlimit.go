// Package authlimit slows the guessing of tokens. Each client address has a budget of failed
// authentications that refills at a steady rate; once an address has spent it, its attempts
// are refused before any token is compared, until the budget refills. Successes cost nothing,
// so a client with a good token is slowed only while its own address is guessing; and only a
// token presented and wrong is a failure, never a request without one, which any web page can
// make a visitor's browser send.
package authlimit

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Config sizes the budgets.
type Config struct {
	// Burst is how many failures an address may make at once.
	Burst int
	// Every is how often one failure is forgiven.
	Every time.Duration
	// MaxAddrs bounds the addresses remembered; beyond it the ones with the most budget left
	// are forgotten first, so a flood of addresses costs memory up to here and no further.
	MaxAddrs int
	// TrustedProxies are the proxies in front (an ingress): a request from one of them is
	// charged to the address its X-Forwarded-For names, the nearest one that is not itself a
	// trusted proxy. From anywhere else the header is a client's say-so and ignored.
	TrustedProxies []netip.Prefix
}

// DefaultConfig allows 20 failures at once and one more every 3 s (20 a minute sustained):
// plenty for a person mistyping, hopeless for guessing even a short token.
func DefaultConfig() Config {
	return Config{Burst: 20, Every: 3 * time.Second, MaxAddrs: 10_000}
}

// Limiter keeps the budgets. It is safe for concurrent use.
type Limiter struct {
	cfg Config
	now func() time.Time
	// failures counts wrong tokens; throttled, the attempts refused unread.
	failures, throttled prometheus.Counter

	mu    sync.Mutex
	addrs map[netip.Prefix]*budget
}

// budget is an address's failures left (fractional: it refills continuously) as of at.
type budget struct {
	left float64
	at   time.Time
}

// New returns a Limiter; zero fields of cfg take DefaultConfig's values. Its counters are
// registered with reg unless it is nil.
func New(cfg Config, now func() time.Time, reg prometheus.Registerer) (*Limiter, error) {
	d := DefaultConfig()
	if cfg.Burst <= 0 {
		cfg.Burst = d.Burst
	}
	if cfg.Every <= 0 {
		cfg.Every = d.Every
	}
	if cfg.MaxAddrs <= 0 {
		cfg.MaxAddrs = d.MaxAddrs
	}
	if now == nil {
		now = time.Now
	}
	l := &Limiter{
		cfg: cfg, now: now, addrs: make(map[netip.Prefix]*budget),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skillfleet_coordinator_auth_failures_total", Help: "Wrong tokens presented to the API or the web viewer's login (a request without one is no attempt).",
		}),
		throttled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skillfleet_coordinator_auth_throttled_total", Help: "Authentications refused unread because their address had guessed wrong too often.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{l.failures, l.throttled} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return l, nil
}

// Blocked reports whether the address of r has spent its budget, and how long until one more
// attempt is allowed.
func (l *Limiter) Blocked(r *http.Request) (retryAfter time.Duration, blocked bool) {
	key, ok := l.addrKey(r)
	if !ok {
		return 0, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.addrs[key]
	if b == nil {
		return 0, false
	}
	now := l.now()
	l.refill(b, now)
	if b.left >= 1 {
		return 0, false
	}
	l.throttled.Inc()
	return time.Duration((1 - b.left) * float64(l.cfg.Every)), true
}

// Failed spends one attempt from the budget of r's address.
func (l *Limiter) Failed(r *http.Request) {
	l.failures.Inc()
	key, ok := l.addrKey(r)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b := l.addrs[key]
	if b == nil {
		if len(l.addrs) >= l.cfg.MaxAddrs {
			l.forgetLocked(now)
		}
		b = &budget{left: float64(l.cfg.Burst), at: now}
		l.addrs[key] = b
	}
	l.refill(b, now)
	b.left = max(b.left-1, 0)
}

// Addrs is how many addresses the limiter remembers.
func (l *Limiter) Addrs() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.addrs)
}

func (l *Limiter) refill(b *budget, now time.Time) {
	if elapsed := now.Sub(b.at); elapsed > 0 {
		b.left = min(float64(l.cfg.Burst), b.left+float64(elapsed)/float64(l.cfg.Every))
		b.at = now
	}
}

// forgetLocked makes room: the addresses whose budget has refilled carry nothing worth
// keeping; if none has, the one with the most left goes, so the addresses guessing hardest are
// remembered longest.
func (l *Limiter) forgetLocked(now time.Time) {
	var most netip.Prefix
	mostLeft := -1.0
	for k, b := range l.addrs {
		l.refill(b, now)
		if b.left >= float64(l.cfg.Burst) {
			delete(l.addrs, k)
			continue
		}
		if b.left > mostLeft {
			most, mostLeft = k, b.left
		}
	}
	if len(l.addrs) >= l.cfg.MaxAddrs {
		delete(l.addrs, most)
	}
}

// addrKey is the budget a request draws on: its client's IPv4 address, or IPv6 /64, which one
// host is commonly given whole.
func (l *Limiter) addrKey(r *http.Request) (netip.Prefix, bool) {
	a, ok := parseAddr(r.RemoteAddr)
	if !ok {
		return netip.Prefix{}, false
	}
	if l.trusted(a) {
		// Proxies append: the rightmost entries are the nearest hops, and the first one that
		// is not a trusted proxy is the client as far as anyone trusted saw it.
		var hops []string
		for _, v := range r.Header.Values("X-Forwarded-For") {
			hops = append(hops, strings.Split(v, ",")...)
		}
		for i := len(hops) - 1; i >= 0; i-- {
			h, ok := parseAddr(strings.TrimSpace(hops[i]))
			if !ok {
				break // garbled: charge the proxy rather than guess
			}
			if !l.trusted(h) {
				a = h
				break
			}
		}
	}
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, err := a.Prefix(bits)
	return p, err == nil
}

func (l *Limiter) trusted(a netip.Addr) bool {
	for _, p := range l.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// parseAddr reads "host:port" or a bare address.
func parseAddr(s string) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(s)
	if err != nil {
		host = s
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}
