package authlimit

import (
	"fmt"
	"net/http"
	"net/netip"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func from(addr string) *http.Request { return &http.Request{RemoteAddr: addr} }

func TestBudget(t *testing.T) {
	clk := &clock{t: time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)}
	l := mustNew(t, Config{Burst: 3, Every: 10 * time.Second, MaxAddrs: 100}, clk.now)
	guesser, other := from("192.0.2.1:40000"), from("192.0.2.2:40000")
	steps := []struct {
		name      string
		advance   time.Duration
		fail      *http.Request
		check     *http.Request
		blocked   bool
		retryWant time.Duration
	}{
		{name: "a new address is not blocked", check: guesser},
		{name: "first failure", fail: guesser, check: guesser},
		{name: "second failure", fail: guesser, check: guesser},
		{name: "third failure spends the burst", fail: guesser, check: guesser, blocked: true, retryWant: 10 * time.Second},
		{name: "another port of the same address is the same budget", check: from("192.0.2.1:50000"), blocked: true, retryWant: 10 * time.Second},
		{name: "another address is not blocked", check: other},
		{name: "part of the way to one attempt", advance: 4 * time.Second, check: guesser, blocked: true, retryWant: 6 * time.Second},
		{name: "one attempt refilled", advance: 6 * time.Second, check: guesser},
		{name: "and spent", fail: guesser, check: guesser, blocked: true, retryWant: 10 * time.Second},
		{name: "a long wait refills the burst, no more", advance: time.Hour, check: guesser},
		{name: "burst again: one", fail: guesser, check: guesser},
		{name: "burst again: two", fail: guesser, check: guesser},
		{name: "burst again: three", fail: guesser, check: guesser, blocked: true, retryWant: 10 * time.Second},
		{name: "IPv4 mapped in IPv6 is the IPv4 address", check: from("[::ffff:192.0.2.1]:1"), blocked: true, retryWant: 10 * time.Second},
	}
	for _, s := range steps {
		clk.t = clk.t.Add(s.advance)
		if s.fail != nil {
			l.Failed(s.fail)
		}
		retry, blocked := l.Blocked(s.check)
		if blocked != s.blocked || retry != s.retryWant {
			t.Fatalf("%s: Blocked = %v, %v; want %v, %v", s.name, retry, blocked, s.retryWant, s.blocked)
		}
	}
}

func TestIPv6SharesA64(t *testing.T) {
	clk := &clock{t: time.Unix(0, 0)}
	l := mustNew(t, Config{Burst: 2, Every: time.Minute}, clk.now)
	l.Failed(from("[2001:db8:1:2::1]:1"))
	l.Failed(from("[2001:db8:1:2:ffff::9]:1"))
	if _, blocked := l.Blocked(from("[2001:db8:1:2::abcd]:1")); !blocked {
		t.Error("an address in the same /64 is not blocked")
	}
	if _, blocked := l.Blocked(from("[2001:db8:1:3::1]:1")); blocked {
		t.Error("an address in another /64 is blocked")
	}
}

// TestMemoryIsBounded: a flood of addresses is remembered up to MaxAddrs, and the address that
// spent its budget is the one kept.
func TestMemoryIsBounded(t *testing.T) {
	clk := &clock{t: time.Unix(0, 0)}
	l := mustNew(t, Config{Burst: 2, Every: time.Minute, MaxAddrs: 50}, clk.now)
	guesser := from("198.51.100.7:1")
	l.Failed(guesser)
	l.Failed(guesser)
	for i := range 1000 {
		l.Failed(from(fmt.Sprintf("10.0.%d.%d:1", i/250, i%250)))
		if n := l.Addrs(); n > 50 {
			t.Fatalf("after %d addresses, %d remembered; want at most 50", i+1, n)
		}
	}
	if _, blocked := l.Blocked(guesser); !blocked {
		t.Error("the flood of addresses made the limiter forget the one that spent its budget")
	}
	// Once the flood's budgets refill they are forgotten at the next need for room.
	clk.t = clk.t.Add(time.Hour)
	l.Failed(from("203.0.113.1:1"))
	if n := l.Addrs(); n != 1 {
		t.Errorf("%d addresses remembered after every budget refilled, want 1", n)
	}
}

func TestUnparsableAddressIsNotLimited(t *testing.T) {
	l := mustNew(t, Config{Burst: 1}, nil)
	r := from("not an address")
	l.Failed(r)
	l.Failed(r)
	if _, blocked := l.Blocked(r); blocked {
		t.Error("an address that does not parse was blocked")
	}
	if l.Addrs() != 0 {
		t.Error("an address that does not parse was remembered")
	}
}

func mustNew(t *testing.T, cfg Config, now func() time.Time) *Limiter {
	t.Helper()
	l, err := New(cfg, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestClientAddress: whose budget a request draws on, behind trusted proxies and not.
func TestClientAddress(t *testing.T) {
	ingress := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	for _, tc := range []struct {
		name    string
		trusted []netip.Prefix
		remote  string
		xff     []string
		want    string
	}{
		{"direct", nil, "192.0.2.1:5", nil, "192.0.2.1/32"},
		{"a header from an untrusted client is ignored", ingress, "192.0.2.1:5", []string{"198.51.100.1"}, "192.0.2.1/32"},
		{"no trusted proxies: the header is ignored", nil, "10.1.2.3:5", []string{"198.51.100.1"}, "10.1.2.3/32"},
		{"the client behind the ingress", ingress, "10.1.2.3:5", []string{"198.51.100.1"}, "198.51.100.1/32"},
		{"a forged entry before the real client is skipped", ingress, "10.1.2.3:5", []string{"203.0.113.66, 198.51.100.1"}, "198.51.100.1/32"},
		{"two trusted hops", ingress, "10.1.2.3:5", []string{"198.51.100.1, 10.9.9.9"}, "198.51.100.1/32"},
		{"headers in order", ingress, "10.1.2.3:5", []string{"203.0.113.66", "198.51.100.1"}, "198.51.100.1/32"},
		{"every hop trusted: the proxy", ingress, "10.1.2.3:5", []string{"10.4.4.4"}, "10.1.2.3/32"},
		{"no header: the proxy", ingress, "10.1.2.3:5", nil, "10.1.2.3/32"},
		{"garbled hop: the proxy", ingress, "10.1.2.3:5", []string{"198.51.100.1, not-an-ip"}, "10.1.2.3/32"},
		{"an IPv6 client by its /64", ingress, "[fd00::1]:5", []string{"2001:db8:1:2::77"}, "2001:db8:1:2::/64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := mustNew(t, Config{TrustedProxies: tc.trusted}, nil)
			r := from(tc.remote)
			r.Header = http.Header{}
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			got, ok := l.addrKey(r)
			if !ok || got.String() != tc.want {
				t.Errorf("addrKey = %v, %v; want %s", got, ok, tc.want)
			}
		})
	}
}
