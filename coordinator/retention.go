package coordinator

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// bundleGrace protects a bundle uploaded moments ago whose run record is not written yet.
const bundleGrace = time.Hour

// deleteMarkerGrace is how long a deleted run record's marker stays for the watchers.
const deleteMarkerGrace = 10 * time.Minute

// Swept counts what one sweep removed.
type Swept struct {
	Runs, Bundles int
}

// sweepLoop sweeps at start and then every SweepEvery until ctx is done.
func (c *Coordinator) sweepLoop(ctx context.Context) {
	t := time.NewTicker(c.cfg.SweepEvery)
	defer t.Stop()
	for {
		if _, err := c.Sweep(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("retention sweep failed; the next one tries again", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sweep applies the retention policy once. Results expire from the results stream after the
// stream's max age, and a run's report cannot be rebuilt without them, so the record of a run
// that finished longer ago than that goes too (its id then answers 404, never a report of
// missing results). A bundle goes when no remaining run refers to it and it was uploaded more
// than an hour ago, so a run being submitted right now keeps its bundle; a pushed suite's
// latest bundle stays as long as the suite does.
func (c *Coordinator) Sweep(ctx context.Context) (out Swept, err error) {
	c.sweepMu.Lock()
	defer c.sweepMu.Unlock()
	defer func() {
		if out.Runs+out.Bundles > 0 || err != nil {
			c.held.forget() // what it removed no longer holds a bundle
		}
	}()
	now := c.now()
	cutoff := now.Add(-c.cfg.Retention)
	statuses, err := c.listStored(ctx)
	if err != nil {
		return out, err
	}
	inUse := make(map[string]bool)
	for _, st := range statuses {
		if isFinal(st.GetState()) && st.GetFinishedAt() != nil && st.GetFinishedAt().AsTime().Before(cutoff) {
			if err := c.runStore.Delete(ctx, st.GetId()); err != nil {
				return out, err
			}
			c.finished.drop(st.GetId())
			if err := c.queue.DeleteReport(ctx, st.GetId()); err != nil {
				c.log.Warn("deleting a swept run's stored report failed", zap.String("run", st.GetId()), zap.Error(err))
			}
			if err := c.queue.DeleteRecords(ctx, st.GetId()); err != nil {
				c.log.Warn("deleting a swept run's stored records failed", zap.String("run", st.GetId()), zap.Error(err))
			}
			out.Runs++
			continue
		}
		inUse[st.GetSpec().GetBundleDigest()] = true
		if d := st.GetSpec().GetCatalogDigest(); d != "" {
			inUse[d] = true
		}
	}
	// A pushed suite's latest bundle is what its schedules fire: kept while the suite is.
	if c.schedules != nil {
		suites, err := c.Suites(ctx)
		if err != nil {
			return out, err
		}
		for _, ps := range suites {
			inUse[ps.BundleDigest] = true
		}
	}
	bundles, err := c.bundles.ListBundles(ctx)
	if err != nil {
		return out, err
	}
	for _, b := range bundles {
		if inUse[b.Digest] || b.Stored.After(now.Add(-bundleGrace)) {
			continue
		}
		if err := c.bundles.DeleteBundle(ctx, b.Digest); err != nil {
			return out, err
		}
		out.Bundles++
	}
	// Deleted records leave markers that every listing reads; they go once no watcher that is
	// catching up can still need them.
	if _, err := c.runStore.PurgeDeletes(ctx, deleteMarkerGrace); err != nil {
		c.log.Warn("purging the markers of swept runs failed; the next sweep tries again", zap.Error(err))
	}
	c.metrics.swept.WithLabelValues("run").Add(float64(out.Runs))
	c.metrics.swept.WithLabelValues("bundle").Add(float64(out.Bundles))
	if out.Runs+out.Bundles > 0 {
		c.log.Info("retention sweep", zap.Int("runs", out.Runs), zap.Int("bundles", out.Bundles), zap.Duration("retention", c.cfg.Retention))
	}
	return out, nil
}
