package queue_test

import (
	"errors"
	"testing"

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
