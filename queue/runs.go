package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrNotFound means the store has nothing under the key asked for.
var ErrNotFound = errors.New("queue: not found")

// RunStore is the run-state KV bucket (RunsBucket): one value per run id, the latest only.
type RunStore struct {
	kv jetstream.KeyValue
}

// Runs returns the run-state store, or nil for a topology opened without it (OpenWorker).
func (t *Topology) Runs() *RunStore {
	if t.runs == nil {
		return nil
	}
	return &RunStore{kv: t.runs}
}

// Put stores value under key and returns the bucket's revision of the write.
func (s *RunStore) Put(ctx context.Context, key string, value []byte) (revision uint64, err error) {
	rev, err := s.kv.Put(ctx, key, value)
	if err != nil {
		return 0, fmt.Errorf("queue: store %s in %s: %w", key, RunsBucket, err)
	}
	return rev, nil
}

// Get returns the value stored under key and its revision; a missing or deleted key is
// ErrNotFound.
func (s *RunStore) Get(ctx context.Context, key string) (value []byte, revision uint64, err error) {
	e, err := s.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, fmt.Errorf("%w: %s in %s", ErrNotFound, key, RunsBucket)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("queue: read %s from %s: %w", key, RunsBucket, err)
	}
	return e.Value(), e.Revision(), nil
}

// Delete removes key; a key that is gone already is not an error.
func (s *RunStore) Delete(ctx context.Context, key string) error {
	if err := s.kv.Delete(ctx, key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("queue: delete %s from %s: %w", key, RunsBucket, err)
	}
	return nil
}

// Keys returns every key that holds a value, in no particular order.
func (s *RunStore) Keys(ctx context.Context) ([]string, error) {
	lister, err := s.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("queue: list %s: %w", RunsBucket, err)
	}
	var out []string
	for k := range lister.Keys() {
		out = append(out, k)
	}
	return out, nil
}

// ErrConflict means a compare-and-swap lost: the key was written since the revision the caller
// read (Update), or holds a value already (Create).
var ErrConflict = errors.New("queue: written meanwhile")

// Create stores value under key only if the key holds nothing; otherwise ErrConflict.
func (s *RunStore) Create(ctx context.Context, key string, value []byte) (revision uint64, err error) {
	rev, err := s.kv.Create(ctx, key, value)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return 0, fmt.Errorf("%w: %s in %s exists", ErrConflict, key, RunsBucket)
	}
	if err != nil {
		return 0, fmt.Errorf("queue: create %s in %s: %w", key, RunsBucket, err)
	}
	return rev, nil
}

// Update stores value under key only if the key's latest revision is still revision; a write
// made since (by another process) is ErrConflict, so of two writers that read the same
// revision exactly one wins.
func (s *RunStore) Update(ctx context.Context, key string, value []byte, revision uint64) (uint64, error) {
	rev, err := s.kv.Update(ctx, key, value, revision)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return 0, fmt.Errorf("%w: %s in %s changed since revision %d", ErrConflict, key, RunsBucket, revision)
	}
	if err != nil {
		return 0, fmt.Errorf("queue: update %s in %s: %w", key, RunsBucket, err)
	}
	return rev, nil
}
