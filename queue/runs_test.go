package queue_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

func TestRunStoreCompareAndSwap(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	s := topo.Runs()
	rev, err := s.Create(ctx, "schedule.nightly", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "schedule.nightly", []byte("again")); !errors.Is(err, queue.ErrConflict) {
		t.Fatalf("second create: %v, want ErrConflict", err)
	}
	// Two writers read rev: the first update wins, the second sees the conflict.
	if _, err := s.Update(ctx, "schedule.nightly", []byte("v2"), rev); err != nil {
		t.Fatalf("first update: %v", err)
	}
	if _, err := s.Update(ctx, "schedule.nightly", []byte("v2 again"), rev); !errors.Is(err, queue.ErrConflict) {
		t.Fatalf("second update with a stale revision: %v, want ErrConflict", err)
	}
	got, _, err := s.Get(ctx, "schedule.nightly")
	if err != nil || string(got) != "v2" {
		t.Fatalf("stored %q, %v; want the first update's v2", got, err)
	}
	// A deleted key can be created again.
	if err := s.Delete(ctx, "schedule.nightly"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "schedule.nightly", []byte("v3")); err != nil {
		t.Fatalf("create after delete: %v", err)
	}
}

// TestRunStoreListWhileRewritten: a key rewritten while the store is listed (Keys, or Each with
// its values) is still listed, once.
// Runs rewrite their state as they progress, and a list that missed one would hide it from
// GET /v1/runs and from the retention sweep's count of the bundles in use.
func TestRunStoreListWhileRewritten(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	s := topo.Runs()
	const n = 50
	want := make(map[string]bool, n)
	for i := range n {
		k := fmt.Sprintf("r%03d", i)
		want[k] = true
		if _, err := s.Put(ctx, k, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Put(ctx, "gone", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var writer sync.WaitGroup
	writer.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.Put(ctx, fmt.Sprintf("r%03d", i%n), []byte(fmt.Sprint(i))); err != nil {
				t.Error(err)
				return
			}
		}
	})
	defer func() { close(stop); writer.Wait() }()
	// Keys, and Each with the values: a value is one the key held ("v" or a writer's count).
	each := func() ([]string, error) {
		var keys []string
		err := s.Each(ctx, func(k string, v []byte) error {
			if _, err := strconv.Atoi(string(v)); err != nil && string(v) != "v" {
				t.Errorf("key %s read as %q, never written", k, v)
			}
			keys = append(keys, k)
			return nil
		})
		return keys, err
	}
	for name, list := range map[string]func() ([]string, error){"Keys": func() ([]string, error) { return s.Keys(ctx) }, "Each": each} {
		for round := range 200 {
			keys, err := list()
			if err != nil {
				t.Fatal(err)
			}
			got := make(map[string]bool, len(keys))
			for _, k := range keys {
				if got[k] {
					t.Fatalf("%s, round %d: key %s listed twice", name, round, k)
				}
				got[k] = true
			}
			for k := range want {
				if !got[k] {
					t.Fatalf("%s, round %d: key %s, rewritten during the list, is missing from %d keys", name, round, k, len(keys))
				}
			}
			if got["gone"] {
				t.Fatalf("%s, round %d: the deleted key is listed", name, round)
			}
		}
	}
	stopAt := errors.New("enough")
	if err := s.Each(ctx, func(string, []byte) error { return stopAt }); !errors.Is(err, stopAt) {
		t.Errorf("Each with fn failing: %v, want fn's error", err)
	}
}

// TestRunStorePurgeDeletes: deleted keys' markers go, live keys stay, and a key created again
// after its deletion keeps its value.
func TestRunStorePurgeDeletes(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	s := topo.Runs()
	for _, k := range []string{"live", "swept1", "swept2", "again"} {
		if _, err := s.Put(ctx, k, []byte("v1")); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"swept1", "swept2", "again"} {
		if err := s.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Put(ctx, "again", []byte("v2")); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PurgeDeletes(ctx, time.Hour); err != nil || n != 0 {
		t.Fatalf("markers younger than the threshold: purged %d, %v; want 0", n, err)
	}
	n, err := s.PurgeDeletes(ctx, 0)
	if err != nil || n != 2 {
		t.Fatalf("purged %d markers, %v; want 2", n, err)
	}
	info, err := topo.RawRuns().Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Values(); got != 2 {
		t.Errorf("bucket holds %d messages after the purge, want 2 (live, again)", got)
	}
	for k, want := range map[string]string{"live": "v1", "again": "v2"} {
		if v, _, err := s.Get(ctx, k); err != nil || string(v) != want {
			t.Errorf("%s: %q, %v; want %q", k, v, err, want)
		}
	}
	keys, err := s.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	if want := []string{"again", "live"}; !slices.Equal(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
}

// TestRunStoreKeysUnder: the keys under a prefix and no others; a prefix that is not whole
// tokens ending with a dot is refused rather than matched as a subject pattern.
func TestRunStoreKeysUnder(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	s := topo.Runs()
	for _, k := range []string{"schedule.a.nightly", "schedule.b.weekly", "schedules.x", "suite.a.nightly", "r20261129t000000-aaaaaaaa", "gone.x"} {
		if _, err := s.Put(ctx, k, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(ctx, "gone.x"); err != nil {
		t.Fatal(err)
	}
	for prefix, want := range map[string][]string{
		"schedule.": {"schedule.a.nightly", "schedule.b.weekly"},
		"suite.a.":  {"suite.a.nightly"},
		"gone.":     nil,
		"nothing.":  nil,
	} {
		got, err := s.KeysUnder(ctx, prefix)
		if err != nil {
			t.Fatalf("KeysUnder(%q): %v", prefix, err)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("KeysUnder(%q) = %v, want %v", prefix, got, want)
		}
	}
	for _, bad := range []string{"schedule", "sched*.", "schedule.>.", ""} {
		if got, err := s.KeysUnder(ctx, bad); err == nil {
			t.Errorf("KeysUnder(%q) = %v, want an error", bad, got)
		}
	}
}
