package queue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// rateCASTries bounds the compare-and-swap rounds of one Reserve or Defer: each lost round
// means another process booked in between, so a few suffice unless the bucket is contended
// far beyond what a fleet's model calls make it.
const rateCASTries = 16

// RateMaxWait is the longest wait a booking or a deferral can impose: the longest Retry-After
// the model client honours (agent.MaxRateWait). A worker's NATS user may write the bucket (it
// books by compare-and-swap), so whatever a value says, nobody waits longer than this.
const RateMaxWait = time.Minute

// rateMaxAhead is how far past a reader's clock a stored arrival time may lie and still be one
// a fleet wrote: a wait of RateMaxWait, plus a booking of at most a minute of the budget (the
// gate books no more, and a minute's requests at 1 a minute is 61.2 s with the headroom),
// plus a minute for the processes' clocks to disagree. A value past it (a far-future poison)
// counts as none and is overwritten; Reserve never writes one.
const rateMaxAhead = RateMaxWait + 2*time.Minute

// ratesStream is the stream under RatesBucket, as the client library names it.
const ratesStream = "KV_" + RatesBucket

// RateStore is the fleet's shared rate budgets (RatesBucket): per key (an endpoint's budget
// of requests, or of tokens) one value, the generic cell rate algorithm's theoretical arrival
// time (TAT) in Unix nanoseconds, changed only by compare-and-swap so that every worker of
// every process books from the same budget.
type RateStore struct {
	js jetstream.JetStream

	mu sync.Mutex
	kv jetstream.KeyValue // nil until bound
}

// Rates returns the shared rate budgets. On a topology opened without the bucket (OpenWorker)
// the bucket is bound on first use, and again after a failure: a worker may start before a
// coordinator that creates it.
func (t *Topology) Rates() *RateStore {
	return &RateStore{js: t.js, kv: t.rates}
}

// bucket is the bound KV bucket.
func (s *RateStore) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kv != nil {
		return s.kv, nil
	}
	kv, err := s.js.KeyValue(ctx, RatesBucket)
	if err != nil {
		return nil, fmt.Errorf("queue: open KV bucket %s (has Ensure run?): %w", RatesBucket, err)
	}
	s.kv = kv
	return kv, nil
}

// ValidateRateKey reports whether key can name a rate budget: 1 to 256 characters of the KV
// key alphabet [-/_=.A-Za-z0-9], not starting or ending with '.', without "..".
func ValidateRateKey(key string) error {
	ok := len(key) > 0 && len(key) <= 256 && key[0] != '.' && key[len(key)-1] != '.' && !strings.Contains(key, "..")
	for i := 0; ok && i < len(key); i++ {
		c := key[i]
		ok = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-/_=.", c) >= 0
	}
	if !ok {
		return fmt.Errorf("queue: invalid rate key %q: want 1-256 characters of [-/_=.A-Za-z0-9], no leading, trailing or double '.'", key)
	}
	return nil
}

// RateProbeSlot is what a probe books until a paced booking prices it (RateStore.Probe): one
// request a second, the most a fleet sends before any of its workers knows the limit.
const RateProbeSlot = time.Second

// A stored value is the TAT, alone ("<tat>": a deferral's, or a value an older worker wrote),
// or with what its last booking was: "<tat>/<interval>", a paced booking at interval
// nanoseconds; "<tat>/p", a probe (its request sent at tat − RateProbeSlot); "<tat>/o", a
// probe that a worker whose endpoint announced no limit has read since, which no longer holds
// the next probe. A worker of the version before reads a tail as no value and overwrites it:
// while a fleet is upgraded its budget restarts now and then, and never holds anyone longer.
const (
	tailPlain = iota
	tailPaced
	tailProbe
	tailOpen
)

// rateState is a budget's stored value, read.
type rateState struct {
	tat  int64
	tail int
	// hint is the interval of a paced tail, in nanoseconds.
	hint int64
}

// ahead is the TAT a booking at interval starts from: for a probe, the probe's send time
// plus interval (the probe priced at the booker's interval, not at its provisional
// RateProbeSlot); for interval 0 (a read), the probe's send time.
func (st rateState) ahead(interval time.Duration) int64 {
	if st.tail == tailProbe || st.tail == tailOpen {
		return st.tat - int64(RateProbeSlot) + int64(interval)
	}
	return st.tat
}

// Reserve books cost cells of key's budget, a budget of one cell per interval that lets burst
// cells go at once, and says how long the caller must wait before it sends: the generic cell
// rate algorithm, with the theoretical arrival time TAT = max(stored, now) + cost×interval and
// the wait TAT − burst×interval − now. The booking stands whether or not the caller sends. A
// negative cost gives cells back (an estimate that proved too high), never taking the TAT below
// now. Interval 0 books nothing and waits for what Defer set. The clock is the caller's: the
// processes of a fleet compare their own clocks with the stored TAT. A booking after a probe
// (Probe) starts one interval after the probe's request, whatever the probe booked; a read
// (interval 0: a worker whose endpoint announced no limit) ends the probe's hold on the next
// probe.
//
// Any NATS user allowed to book can write any value, so nothing stored is taken on trust: a
// value that is not a TAT a fleet could have written (not decimal digits, or more than
// rateMaxAhead past now) counts as none and is overwritten; a queue of bookings longer than
// RateMaxWait is waited for only that long; and the wait is never more than RateMaxWait.
func (s *RateStore) Reserve(ctx context.Context, key string, interval time.Duration, burst int, cost float64, now time.Time) (time.Duration, error) {
	if interval < 0 || burst < 1 || math.IsNaN(cost) || math.IsInf(cost, 0) {
		return 0, fmt.Errorf("queue: reserve %s: interval %s, burst %d, cost %v: want interval ≥ 0, burst ≥ 1 and a finite cost", key, interval, burst, cost)
	}
	n := now.UnixNano()
	var wait time.Duration
	err := s.swap(ctx, key, n, func(st rateState) rateState {
		if interval == 0 {
			wait = min(max(time.Duration(st.ahead(0)-n), 0), RateMaxWait)
			if st.tail == tailProbe {
				// A worker that knows its endpoint announces no limit: probes need not
				// wait for each other.
				st.tail = tailOpen
			}
			return st
		}
		base := min(max(st.ahead(interval), n), n+int64(RateMaxWait))
		// The product is clamped in floating point: a huge cost must not wrap around.
		book := math.Max(math.Min(cost*float64(interval), float64(rateMaxAhead)), -float64(rateMaxAhead))
		next := min(base+int64(book), n+int64(rateMaxAhead))
		if cost < 0 {
			return rateState{tat: max(next, n), tail: tailPaced, hint: int64(interval)} // a refund ends at now
		}
		wait = min(max(time.Duration(next-n)-time.Duration(burst)*interval, 0), RateMaxWait)
		return rateState{tat: next, tail: tailPaced, hint: int64(interval)}
	})
	if err != nil {
		return 0, fmt.Errorf("queue: reserve %s in %s: %w", key, RatesBucket, err)
	}
	return wait, nil
}

// Probe books a request of key's budget for a caller that does not know the budget's
// interval yet (an endpoint's limit, before its first answer), and says how long to wait
// before sending it; or, when booked is false, that the caller should ask again after wait
// (at most RateMaxWait), or once it knows the limit. After a paced booking (Reserve), the probe
// is booked as the next request at that booking's interval (at most RateProbeSlot: a value
// worth no more than a probe's second, whoever wrote it), so that it never takes a paced
// request's place. Otherwise it is booked at RateProbeSlot, provisionally: a fleet sends one
// such probe a second, never two at once, and the first paced booking after it prices it at
// its own interval (Reserve). An unpriced probe not yet a second old makes the next one wait
// (booked false) rather than book a second further: a hundred workers starting together do not
// queue a hundred seconds of probes ahead of the paced stream. It stops holding the next once a
// worker whose endpoint announced no limit has read the budget (Reserve with interval 0).
func (s *RateStore) Probe(ctx context.Context, key string, now time.Time) (wait time.Duration, booked bool, err error) {
	n := now.UnixNano()
	err = s.swap(ctx, key, n, func(st rateState) rateState {
		if st.tail == tailProbe && st.tat > n {
			wait, booked = min(time.Duration(st.tat-n), RateMaxWait), false
			return st
		}
		base := min(max(st.ahead(0), n), n+int64(RateMaxWait))
		wait, booked = time.Duration(base-n), true
		if st.tail == tailPaced {
			return rateState{tat: base + min(st.hint, int64(RateProbeSlot)), tail: tailPaced, hint: st.hint}
		}
		return rateState{tat: base + int64(RateProbeSlot), tail: tailProbe}
	})
	if err != nil {
		return 0, false, fmt.Errorf("queue: probe %s in %s: %w", key, RatesBucket, err)
	}
	return wait, booked, nil
}

// Defer pushes key's theoretical arrival time to at least until, and at most RateMaxWait past
// now: the next booking with a burst of one waits until then (a 429's Retry-After, or a
// provider's word that nothing remains until a reset).
func (s *RateStore) Defer(ctx context.Context, key string, until, now time.Time) error {
	n := now.UnixNano()
	u := min(until.UnixNano(), n+int64(RateMaxWait))
	err := s.swap(ctx, key, n, func(st rateState) rateState {
		switch {
		case (st.tail == tailProbe || st.tail == tailOpen) && u > st.ahead(0):
			// Held past the probe's request: the provisional second stands as the hold's.
			return rateState{tat: max(st.tat, u)}
		case u > st.tat:
			st.tat = u
		}
		return st
	})
	if err != nil {
		return fmt.Errorf("queue: defer %s in %s: %w", key, RatesBucket, err)
	}
	return nil
}

// parseRate reads a stored value as the fleet writes it: a TAT of 1 to 19 decimal digits, not
// more than rateMaxAhead past now (Unix nanoseconds), alone or followed by "/p" or by "/" and
// an interval of 1 to 19 digits, at most rateMaxAhead. Anything else (a sign, a space, an
// exponent, a number past int64, a far-future poison) is not a budget's value.
func parseRate(v []byte, now int64) (rateState, bool) {
	var st rateState
	t, rest, tailed := bytes.Cut(v, []byte("/"))
	tat, ok := parseDigits(t)
	if !ok || tat > now+int64(rateMaxAhead) {
		return rateState{}, false
	}
	st.tat = tat
	switch {
	case !tailed:
	case string(rest) == "p":
		st.tail = tailProbe
	case string(rest) == "o":
		st.tail = tailOpen
	default:
		hint, ok := parseDigits(rest)
		if !ok || hint <= 0 || hint > int64(rateMaxAhead) {
			return rateState{}, false
		}
		st.tail, st.hint = tailPaced, hint
	}
	return st, true
}

// parseDigits reads 1 to 19 decimal digits that fit an int64.
func parseDigits(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 19 {
		return 0, false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	return n, err == nil
}

// format is the stored value of st.
func (st rateState) format() []byte {
	b := strconv.AppendInt(nil, max(st.tat, 0), 10)
	switch st.tail {
	case tailProbe:
		b = append(b, "/p"...)
	case tailOpen:
		b = append(b, "/o"...)
	case tailPaced:
		b = append(b, '/')
		b = strconv.AppendInt(b, st.hint, 10)
	}
	return b
}

// swap applies next to key's stored value by compare-and-swap: Create when the key holds
// nothing, Update at the revision read otherwise, again on a conflict, at most rateCASTries
// times. A stored value that is not one (parseRate) counts as none and is overwritten. A TAT in
// the past is the same as now: nothing is written when the value would stay the same in effect.
func (s *RateStore) swap(ctx context.Context, key string, now int64, next func(st rateState) rateState) error {
	if err := ValidateRateKey(key); err != nil {
		return err
	}
	kv, err := s.bucket(ctx)
	if err != nil {
		return err
	}
	for range rateCASTries {
		var (
			st    rateState
			rev   uint64
			valid = true
		)
		e, err := kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return err
		default:
			rev = e.Revision()
			st, valid = parseRate(e.Value(), now)
		}
		n := next(st)
		if valid && (n == st || n.tat <= now && st.tat <= now && n.tail == st.tail && n.hint == st.hint) {
			return nil
		}
		value := n.format()
		if rev == 0 {
			_, err = kv.Create(ctx, key, value)
			if errors.Is(err, jetstream.ErrKeyExists) {
				continue
			}
		} else {
			_, err = kv.Update(ctx, key, value, rev)
			if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
				continue
			}
		}
		return err
	}
	return fmt.Errorf("%w: %s lost %d compare-and-swap rounds in a row", ErrConflict, key, rateCASTries)
}
