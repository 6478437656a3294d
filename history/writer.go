package history

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// WriterConfig tunes a Writer; zero fields take the defaults.
type WriterConfig struct {
	// BatchRows is the most results written in one transaction (default 10,000).
	BatchRows int
	// FlushEvery is the longest a recorded result waits to be written (default 1 s).
	FlushEvery time.Duration
	// QueueRows bounds the results waiting to be written (default 65,536). While the database
	// accepts writes, a Record that finds the queue full waits for room: a database slower
	// than the results arrive slows the caller rather than losing a result. While the database
	// refuses writes (down, unreachable) a Record that finds the queue full drops its result,
	// counted and logged with its run: the results stream keeps it, and Backfill re-feeds a run.
	QueueRows int
	// Writers is how many batches are written at once, each in its own transaction on its own
	// connection (default 1 on SQLite, which has one writer anyway, and 2 on PostgreSQL). A
	// job's results always go through the same one, in the order they were recorded.
	Writers int
	// MinBackoff and MaxBackoff bound the wait between retries of a failed batch (defaults
	// 500 ms and 30 s).
	MinBackoff, MaxBackoff time.Duration
	// Retention is how long results are kept (default 400 days); a sweep every SweepEvery
	// (default 6 h, and once at start) deletes older ones in batches of SweepBatch (10,000).
	Retention  time.Duration
	SweepEvery time.Duration
	SweepBatch int
}

func (c *WriterConfig) defaults(backend string) {
	if c.BatchRows <= 0 {
		c.BatchRows = 10_000
	}
	if c.FlushEvery <= 0 {
		c.FlushEvery = time.Second
	}
	if c.QueueRows <= 0 {
		c.QueueRows = 65_536
	}
	if c.Writers <= 0 {
		c.Writers = 1
		if backend == postgresDialect.name {
			c.Writers = 2
		}
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
// path: Record and RunFinished return once their row is queued, and only wait while the
// queue is full and the database is writing (see WriterConfig.QueueRows). A failed batch is
// retried with backoff until it is written or the writer is closed.
type Writer struct {
	store *Store
	cfg   WriterConfig
	log   *zap.Logger
	now   func() time.Time

	mu     sync.RWMutex
	closed bool
	// closing is closed when Close starts: a Record waiting for room gives up.
	closing   chan struct{}
	closeOnce sync.Once
	parts     []*partition

	ctx    context.Context
	cancel context.CancelFunc
	// sweepCtx ends with closing: a retention sweep is not worth holding up a shutdown.
	sweepCtx    context.Context
	sweepCancel context.CancelFunc
	done        chan struct{}

	written, dropped, unsaved atomic.Int64
	drops                     dropLog
}

// partition is one of the Writer's queues with the loop that writes it.
type partition struct {
	in chan item
	// health says whether the partition's last write failed; its changed channel is closed
	// when that changes, which wakes the Records waiting for room.
	health atomic.Pointer[health]
}

type health struct {
	failing bool
	changed chan struct{}
}

// setFailing records whether writes fail, waking the Records waiting when it changes.
func (p *partition) setFailing(failing bool) {
	if old := p.health.Load(); old.failing != failing {
		p.health.Store(&health{failing: failing, changed: make(chan struct{})})
		close(old.changed)
	}
}

// NewWriter starts a writer over store. Close it to write what is pending.
func NewWriter(store *Store, cfg WriterConfig, log *zap.Logger) *Writer {
	cfg.defaults(store.d.name)
	ctx, cancel := context.WithCancel(context.Background())
	sweepCtx, sweepCancel := context.WithCancel(ctx)
	w := &Writer{
		store: store, cfg: cfg, log: log, now: time.Now,
		closing: make(chan struct{}),
		ctx:     ctx, cancel: cancel, sweepCtx: sweepCtx, sweepCancel: sweepCancel,
		done: make(chan struct{}),
	}
	perPart := (cfg.QueueRows + cfg.Writers - 1) / cfg.Writers
	var wg sync.WaitGroup
	for range cfg.Writers {
		p := &partition{in: make(chan item, perPart)}
		p.health.Store(&health{changed: make(chan struct{})})
		w.parts = append(w.parts, p)
		wg.Go(func() { w.loop(p) })
	}
	wg.Go(w.sweeper)
	go func() {
		wg.Wait()
		close(w.done)
	}()
	return w
}

// part is the partition of a job's results: always the same one, so that a job's rows are
// written in the order they were recorded.
func (w *Writer) part(run, job string) *partition {
	if len(w.parts) == 1 {
		return w.parts[0]
	}
	h := fnv.New32a()
	h.Write([]byte(run))
	h.Write([]byte{0})
	h.Write([]byte(job))
	return w.parts[h.Sum32()%uint32(len(w.parts))]
}

// Record queues a result of the run st describes. It does not keep res or st.
func (w *Writer) Record(res *pb.Result, st *pb.RunStatus) {
	row := FromResult(res, st.GetSpec(), w.now())
	run := FromStatus(st)
	// The run row goes in as unfinished (added when missing); RunFinished completes it.
	run.FinishedAt = time.Time{}
	w.send(w.part(row.RunID, row.JobID), item{res: &row, run: run})
}

// RunFinished queues a finished run's final row.
func (w *Writer) RunFinished(st *pb.RunStatus) {
	run := FromStatus(st)
	w.send(w.part(run.ID, ""), item{run: run})
}

func (w *Writer) send(p *partition, it item) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		w.drop(it, "the writer is closed")
		return
	}
	select {
	case p.in <- it:
		return
	default:
	}
	for {
		h := p.health.Load()
		if h.failing {
			select {
			case p.in <- it:
			default:
				w.drop(it, "the queue is full and the database refuses writes")
			}
			return
		}
		select {
		case p.in <- it:
			return
		case <-h.changed:
		case <-w.closing:
			w.drop(it, "the writer closed while the queue was full")
			return
		}
	}
}

// drop counts a result or run not queued, and logs it: the first of each run by name (so
// that the runs to backfill are known), the rest at powers of two.
func (w *Writer) drop(it item, why string) {
	n := w.dropped.Add(1)
	if first := w.drops.first(it.run.ID); first {
		w.log.Error("history: a row of the run was not recorded (backfill the run from its results stream)",
			zap.String("run", it.run.ID), zap.String("reason", why), zap.Int64("dropped", n))
	} else if n&(n-1) == 0 {
		w.log.Warn("history: results not recorded", zap.String("run", it.run.ID), zap.String("reason", why), zap.Int64("dropped", n))
	}
}

// dropLog remembers the runs that lost a result, up to a bound, so that each is named once.
type dropLog struct {
	mu   sync.Mutex
	runs map[string]bool
}

const maxDropRuns = 10_000

func (d *dropLog) first(run string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.runs[run] || len(d.runs) >= maxDropRuns {
		return false
	}
	if d.runs == nil {
		d.runs = map[string]bool{}
	}
	d.runs[run] = true
	return true
}

// Flush writes what was queued before it was called, and waits for that (or for ctx). A
// report that reads the run it describes from the store flushes first: results are queued,
// not written, as they arrive.
func (w *Writer) Flush(ctx context.Context) error {
	dones := make([]chan struct{}, len(w.parts))
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		return errors.New("history: flush after the writer closed")
	}
	for i, p := range w.parts {
		dones[i] = make(chan struct{})
		select {
		case p.in <- item{flushed: dones[i]}:
		case <-ctx.Done():
			w.mu.RUnlock()
			return fmt.Errorf("history: flush: %w", ctx.Err())
		}
	}
	w.mu.RUnlock()
	for _, done := range dones {
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("history: flush: %w", ctx.Err())
		}
	}
	return nil
}

// Written returns how many results the writer has stored.
func (w *Writer) Written() int64 { return w.written.Load() }

// Dropped returns how many results and runs were not queued: the queue was full while the
// database refused writes, or the writer was closing.
func (w *Writer) Dropped() int64 { return w.dropped.Load() }

// Close stops taking records and writes what is queued, retrying until ctx ends; then it
// gives up on what is left and says how much.
func (w *Writer) Close(ctx context.Context) error {
	w.closeOnce.Do(func() {
		close(w.closing)
		w.sweepCancel()
	})
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		for _, p := range w.parts {
			close(p.in)
		}
	}
	w.mu.Unlock()
	select {
	case <-w.done:
	case <-ctx.Done():
		w.cancel()
		<-w.done
	}
	w.cancel()
	if n := w.unsaved.Load(); n > 0 {
		return fmt.Errorf("history: %d results not written before the writer closed", n)
	}
	return nil
}

// loop gathers a partition's queue into batches and writes them.
func (w *Writer) loop(p *partition) {
	flushT := time.NewTicker(w.cfg.FlushEvery)
	defer flushT.Stop()

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
		// Concurrent batches lock the run rows they write in one order: no deadlock.
		slices.SortFunc(rs, func(a, b Run) int { return cmp.Compare(a.ID, b.ID) })
		if w.writeRetrying(p, rs, results) {
			w.written.Add(int64(len(results)))
		} else {
			unsaved := len(results)
			for it := range p.in { // closed and given up: count the rest too
				if it.flushed != nil {
					close(it.flushed)
				} else if it.res != nil {
					unsaved++
				}
			}
			w.unsaved.Add(int64(unsaved))
		}
		clear(runs)
		results = results[:0]
	}
	for {
		select {
		case it, ok := <-p.in:
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
		}
	}
}

// writeRetrying writes one batch, retrying with doubling backoff while the database fails;
// false means the writer was closed with the batch unwritten.
func (w *Writer) writeRetrying(p *partition, runs []Run, results []Result) bool {
	backoff := w.cfg.MinBackoff
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(w.ctx, 30*time.Second)
		err := w.store.write(ctx, runs, results)
		cancel()
		if err == nil {
			p.setFailing(false)
			if attempt > 1 {
				w.log.Info("history writes resumed", zap.Int("attempts", attempt), zap.Int("results", len(results)))
			}
			return true
		}
		p.setFailing(true)
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

// sweeper applies retention at start and every SweepEvery until the writer closes.
func (w *Writer) sweeper() {
	t := time.NewTicker(w.cfg.SweepEvery)
	defer t.Stop()
	for {
		w.sweep()
		select {
		case <-t.C:
		case <-w.sweepCtx.Done():
			return
		}
	}
}

// sweep applies retention. A failure is logged and tried again at the next sweep.
func (w *Writer) sweep() {
	ctx, cancel := context.WithTimeout(w.sweepCtx, 10*time.Minute)
	defer cancel()
	results, runs, err := w.store.DeleteBefore(ctx, w.now().Add(-w.cfg.Retention), w.cfg.SweepBatch)
	if err != nil {
		if w.sweepCtx.Err() == nil {
			w.log.Warn("history retention sweep failed", zap.Error(err))
		}
		return
	}
	if results+runs > 0 {
		w.log.Info("history retention sweep", zap.Int("results", results), zap.Int("runs", runs), zap.Duration("retention", w.cfg.Retention))
	}
}
