package history

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// WriterConfig tunes a Writer; zero fields take the defaults.
type WriterConfig struct {
	// BatchRows is the most results written in one transaction (default 500).
	BatchRows int
	// FlushEvery is the longest a recorded result waits to be written (default 1 s).
	FlushEvery time.Duration
	// QueueRows bounds the results waiting while a batch is written or retried (default
	// 65,536). Beyond it results are dropped, counted and logged: the results stream keeps
	// them, and Backfill re-feeds a run.
	QueueRows int
	// MinBackoff and MaxBackoff bound the wait between retries of a failed batch (defaults
	// 500 ms and 30 s).
	MinBackoff, MaxBackoff time.Duration
	// Retention is how long results are kept (default 400 days); a sweep every SweepEvery
	// (default 6 h, and once at start) deletes older ones in batches of SweepBatch (10,000).
	Retention  time.Duration
	SweepEvery time.Duration
	SweepBatch int
}

func (c *WriterConfig) defaults() {
	if c.BatchRows <= 0 {
		c.BatchRows = 500
	}
	if c.FlushEvery <= 0 {
		c.FlushEvery = time.Second
	}
	if c.QueueRows <= 0 {
		c.QueueRows = 65_536
	}
	if c.MinBackoff <= 0 {
		c.MinBackoff = 500 * time.Millisecond
	}
	if c.MaxBackoff < c.MinBackoff {
		c.MaxBackoff = max(30*time.Second, c.MinBackoff)
	}
	if c.Retention <= 0 {
		c.Retention = 400 * 24 * time.Hour
	}
	if c.SweepEvery <= 0 {
		c.SweepEvery = 6 * time.Hour
	}
	if c.SweepBatch <= 0 {
		c.SweepBatch = 10_000
	}
}

// item is one thing to write: a result with its run's row, or a finished run.
type item struct {
	res *Result
	run Run
	// flushed, when set, asks for what is queued to be written and is closed once it is.
	flushed chan struct{}
}

// Writer writes results and runs to a Store in the background, in batches, off the caller's
// path: Record and RunFinished never wait for the database. A failed batch is retried with
// backoff until it is written or the writer is closed.
type Writer struct {
	store *Store
	cfg   WriterConfig
	log   *zap.Logger
	now   func() time.Time

	mu     sync.RWMutex
	closed bool
	in     chan item

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	written, dropped atomic.Int64
	unsaved          int
}

// NewWriter starts a writer over store. Close it to write what is pending.
func NewWriter(store *Store, cfg WriterConfig, log *zap.Logger) *Writer {
	cfg.defaults()
	ctx, cancel := context.WithCancel(context.Background())
	w := &Writer{
		store: store, cfg: cfg, log: log, now: time.Now,
		in:  make(chan item, cfg.QueueRows),
		ctx: ctx, cancel: cancel, done: make(chan struct{}),
	}
	go w.loop()
	return w
}

// Record queues a result of the run st describes. It does not keep res or st.
func (w *Writer) Record(res *pb.Result, st *pb.RunStatus) {
	row := FromResult(res, st.GetSpec(), w.now())
	run := FromStatus(st)
	// The run row goes in as unfinished (added when missing); RunFinished completes it.
	run.FinishedAt = time.Time{}
	w.send(item{res: &row, run: run})
}

// RunFinished queues a finished run's final row.
func (w *Writer) RunFinished(st *pb.RunStatus) {
	w.send(item{run: FromStatus(st)})
}

func (w *Writer) send(it item) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		w.dropped.Add(1)
		return
	}
	select {
	case w.in <- it:
	default:
		if n := w.dropped.Add(1); n&(n-1) == 0 { // at powers of two: a trace, not a flood
			w.log.Warn("history queue full: result not recorded (backfill the run from its results stream)",
				zap.String("run", it.run.ID), zap.Int64("dropped", n))
		}
	}
}

// Flush writes what was queued before it was called, and waits for that (or for ctx). A
// report that reads the run it describes from the store flushes first: results are queued,
// not written, as they arrive.
func (w *Writer) Flush(ctx context.Context) error {
	done := make(chan struct{})
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		return errors.New("history: flush after the writer closed")
	}
	select {
	case w.in <- item{flushed: done}:
		w.mu.RUnlock()
	case <-ctx.Done():
		w.mu.RUnlock()
		return fmt.Errorf("history: flush: %w", ctx.Err())
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("history: flush: %w", ctx.Err())
	}
}

// Written returns how many results the writer has stored.
func (w *Writer) Written() int64 { return w.written.Load() }

// Dropped returns how many results and runs were not queued because the queue was full or
// the writer closed.
func (w *Writer) Dropped() int64 { return w.dropped.Load() }

// Close stops taking records and writes what is queued, retrying until ctx ends; then it
// gives up on what is left and says how much.
func (w *Writer) Close(ctx context.Context) error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.in)
	}
	w.mu.Unlock()
	select {
	case <-w.done:
	case <-ctx.Done():
		w.cancel()
		<-w.done
	}
	w.cancel()
	if w.unsaved > 0 {
		return fmt.Errorf("history: %d results not written before the writer closed", w.unsaved)
	}
	return nil
}

func (w *Writer) loop() {
	defer close(w.done)
	flushT := time.NewTicker(w.cfg.FlushEvery)
	defer flushT.Stop()
	sweepT := time.NewTicker(w.cfg.SweepEvery)
	defer sweepT.Stop()
	w.sweep()

	var (
		runs    = map[string]Run{}
		results []Result
	)
	flush := func() {
		if len(runs) == 0 && len(results) == 0 {
			return
		}
		rs := make([]Run, 0, len(runs))
		for _, r := range runs {
			rs = append(rs, r)
		}
		if w.writeRetrying(rs, results) {
			w.written.Add(int64(len(results)))
		} else {
			w.unsaved += len(results)
			for it := range w.in { // closed and given up: count the rest too
				if it.flushed != nil {
					close(it.flushed)
				} else if it.res != nil {
					w.unsaved++
				}
			}
		}
		clear(runs)
		results = results[:0]
	}
	for {
		select {
		case it, ok := <-w.in:
			if !ok {
				flush()
				return
			}
			if it.flushed != nil {
				flush()
				close(it.flushed)
				continue
			}
			if cur, seen := runs[it.run.ID]; !seen || cur.FinishedAt.IsZero() {
				// A finished row wins over a progress row of the same run in the batch.
				runs[it.run.ID] = it.run
			}
			if it.res != nil {
				results = append(results, *it.res)
			}
			if len(results) >= w.cfg.BatchRows {
				flush()
			}
		case <-flushT.C:
			flush()
		case <-sweepT.C:
			w.sweep()
		}
	}
}

// writeRetrying writes one batch, retrying with doubling backoff while the database fails;
// false means the writer was closed with the batch unwritten.
func (w *Writer) writeRetrying(runs []Run, results []Result) bool {
	backoff := w.cfg.MinBackoff
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(w.ctx, 30*time.Second)
		err := w.store.write(ctx, runs, results)
		cancel()
		if err == nil {
			if attempt > 1 {
				w.log.Info("history writes resumed", zap.Int("attempts", attempt), zap.Int("results", len(results)))
			}
			return true
		}
		if w.ctx.Err() != nil {
			w.log.Error("history: writer closed with a batch unwritten", zap.Int("results", len(results)), zap.Error(err))
			return false
		}
		if attempt == 1 || attempt%10 == 0 {
			w.log.Warn("history write failed; retrying", zap.Int("attempt", attempt), zap.Duration("backoff", backoff), zap.Error(err))
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-w.ctx.Done():
			t.Stop()
		}
		backoff = min(2*backoff, w.cfg.MaxBackoff)
	}
}

// sweep applies retention. A failure is logged and tried again at the next sweep.
func (w *Writer) sweep() {
	ctx, cancel := context.WithTimeout(w.ctx, 10*time.Minute)
	defer cancel()
	results, runs, err := w.store.DeleteBefore(ctx, w.now().Add(-w.cfg.Retention), w.cfg.SweepBatch)
	if err != nil {
		w.log.Warn("history retention sweep failed", zap.Error(err))
		return
	}
	if results+runs > 0 {
		w.log.Info("history retention sweep", zap.Int("results", results), zap.Int("runs", runs), zap.Duration("retention", w.cfg.Retention))
	}
}
