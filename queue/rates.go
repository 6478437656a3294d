package queue

import (
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

// Reserve books cost cells of key's budget, a budget of one cell per interval that lets burst
// cells go at once, and says how long the caller must wait before it sends: the generic cell
// rate algorithm, with the theoretical arrival time TAT = max(stored, now) + cost×interval and
// the wait TAT − burst×interval − now. The booking stands whether or not the caller sends. A
// negative cost gives cells back (an estimate that proved too high), never taking the TAT below
// now. Interval 0 books nothing and waits for what Defer set. The clock is the caller's: the
// processes of a fleet compare their own clocks with the stored TAT.
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
	err := s.swap(ctx, key, n, func(tat int64) int64 {
		base := min(max(tat, n), n+int64(RateMaxWait))
		// The product is clamped in floating point: a huge cost must not wrap around.
		book := math.Max(math.Min(cost*float64(interval), float64(rateMaxAhead)), -float64(rateMaxAhead))
		next := min(base+int64(book), n+int64(rateMaxAhead))
		if cost < 0 {
			return max(next, n) // a refund ends at now
		}
		wait = min(max(time.Duration(next-n)-time.Duration(burst)*interval, 0), RateMaxWait)
		return next
	})
	if err != nil {
		return 0, fmt.Errorf("queue: reserve %s in %s: %w", key, RatesBucket, err)
	}
	return wait, nil
}

// Defer pushes key's theoretical arrival time to at least until, and at most RateMaxWait past
// now: the next booking with a burst of one waits until then (a 429's Retry-After, or a
// provider's word that nothing remains until a reset).
func (s *RateStore) Defer(ctx context.Context, key string, until, now time.Time) error {
	n := now.UnixNano()
	u := min(until.UnixNano(), n+int64(RateMaxWait))
	err := s.swap(ctx, key, n, func(tat int64) int64 { return max(tat, u) })
	if err != nil {
		return fmt.Errorf("queue: defer %s in %s: %w", key, RatesBucket, err)
	}
	return nil
}

// parseTAT reads a stored TAT as the fleet writes it: 1 to 19 decimal digits, and not more than
// rateMaxAhead past now (Unix nanoseconds). Anything else (a sign, a space, an exponent, a
// number past int64, a far-future poison) is not a TAT.
func parseTAT(v []byte, now int64) (int64, bool) {
	if len(v) == 0 || len(v) > 19 {
		return 0, false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	tat, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || tat > now+int64(rateMaxAhead) {
		return 0, false
	}
	return tat, true
}

// swap applies next to key's stored TAT by compare-and-swap: Create when the key holds nothing,
// Update at the revision read otherwise, again on a conflict, at most rateCASTries times. A
// stored value that is no TAT (parseTAT) counts as none (0) and is overwritten. A TAT in the
// past is the same as now: nothing is written when the value would stay the same in effect.
func (s *RateStore) swap(ctx context.Context, key string, now int64, next func(tat int64) int64) error {
	if err := ValidateRateKey(key); err != nil {
		return err
	}
	kv, err := s.bucket(ctx)
	if err != nil {
		return err
	}
	for range rateCASTries {
		var (
			tat   int64
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
			tat, valid = parseTAT(e.Value(), now)
		}
		n := next(tat)
		if valid && (n == tat || n <= now && tat <= now) {
			return nil
		}
		value := []byte(strconv.FormatInt(max(n, 0), 10))
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
