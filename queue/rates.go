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
// the wait TAT − burst×interval − now (never negative). The booking stands whether or not the
// caller sends. A negative cost gives cells back (an estimate that proved too high), never
// taking the TAT below now. Interval 0 books nothing and waits for what Defer set. The clock
// is the caller's: the processes of a fleet compare their own clocks with the stored TAT.
func (s *RateStore) Reserve(ctx context.Context, key string, interval time.Duration, burst int, cost float64, now time.Time) (time.Duration, error) {
	if interval < 0 || burst < 1 || math.IsNaN(cost) || math.IsInf(cost, 0) {
		return 0, fmt.Errorf("queue: reserve %s: interval %s, burst %d, cost %v: want interval ≥ 0, burst ≥ 1 and a finite cost", key, interval, burst, cost)
	}
	var wait time.Duration
	err := s.swap(ctx, key, func(tat int64) (int64, bool) {
		n := now.UnixNano()
		base := max(tat, n)
		next := base + int64(cost*float64(interval))
		if cost < 0 {
			next = max(next, n) // a refund ends at now
		} else {
			wait = max(time.Duration(next-n)-time.Duration(burst)*interval, 0)
		}
		// A TAT in the past is the same as now: writing one would change nothing.
		return next, next != tat && (next > n || tat > n)
	})
	if err != nil {
		return 0, fmt.Errorf("queue: reserve %s in %s: %w", key, RatesBucket, err)
	}
	return wait, nil
}

// Defer pushes key's theoretical arrival time to at least until: the next booking with a burst
// of one waits until then (a 429's Retry-After, or a provider's word that nothing remains until
// a reset).
func (s *RateStore) Defer(ctx context.Context, key string, until time.Time) error {
	err := s.swap(ctx, key, func(tat int64) (int64, bool) {
		u := until.UnixNano()
		return max(tat, u), u > tat
	})
	if err != nil {
		return fmt.Errorf("queue: defer %s in %s: %w", key, RatesBucket, err)
	}
	return nil
}

// swap applies next to key's stored TAT (0 when absent) by compare-and-swap: Create when the
// key holds nothing, Update at the revision read otherwise, again on a conflict, at most
// rateCASTries times. A value that is not a TAT (written by something else) counts as none and
// is overwritten. Nothing is written when next says nothing changed.
func (s *RateStore) swap(ctx context.Context, key string, next func(tat int64) (int64, bool)) error {
	if err := ValidateRateKey(key); err != nil {
		return err
	}
	kv, err := s.bucket(ctx)
	if err != nil {
		return err
	}
	for range rateCASTries {
		var (
			tat int64
			rev uint64
		)
		e, err := kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return err
		default:
			rev = e.Revision()
			if v, perr := strconv.ParseInt(string(e.Value()), 10, 64); perr == nil {
				tat = v
			}
		}
		n, changed := next(tat)
		if !changed {
			return nil
		}
		value := []byte(strconv.FormatInt(n, 10))
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
