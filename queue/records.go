package queue

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/nats-io/nats.go/jetstream"
)

// A finished run's records (what a comparison reads of each of its counted results, encoded
// by package comparison) are kept in the report store beside its final report, under the run
// id and a suffix no run id has: they live and go with the report.

// recordsObject is the name of run's records in the report store.
func recordsObject(run string) string { return run + ".records" }

// PutRecords stores a finished run's records as r streams them, replacing what the run had
// stored; the store holds them in chunks, so neither side holds them whole. A failed read of
// r stores nothing.
func (t *Topology) PutRecords(ctx context.Context, run string, r io.Reader) error {
	store, err := t.reportStoreOf(ctx, run)
	if err != nil {
		return err
	}
	if _, err := store.Put(ctx, jetstream.ObjectMeta{Name: recordsObject(run)}, r); err != nil {
		return fmt.Errorf("queue: store the records of run %s: %w", run, err)
	}
	return nil
}

// OpenRecords opens a finished run's stored records for reading, with their size: an error
// wrapping ErrNotFound when it has none. The caller closes what it gets.
func (t *Topology) OpenRecords(ctx context.Context, run string) (io.ReadCloser, int64, error) {
	store, err := t.reportStoreOf(ctx, run)
	if err != nil {
		return nil, 0, err
	}
	obj, err := store.Get(ctx, recordsObject(run))
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, 0, fmt.Errorf("%w: records of run %s", ErrNotFound, run)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("queue: read the records of run %s: %w", run, err)
	}
	info, err := obj.Info()
	if err != nil {
		_ = obj.Close()
		return nil, 0, fmt.Errorf("queue: read the records of run %s: %w", run, err)
	}
	return obj, int64(info.Size), nil
}

// DeleteRecords deletes a run's stored records; deleting none is no error.
func (t *Topology) DeleteRecords(ctx context.Context, run string) error {
	return t.deleteRunObject(ctx, run, recordsObject(run), "records")
}
