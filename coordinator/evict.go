package coordinator

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/skillfleet/skillfleet/internal/tenant"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Eviction gives the room of finished runs to running ones. The results and artifacts streams
// refuse new messages when full (a full stream must never drop a running run's results), so
// without eviction a day of large runs would fill them for the streams' max age and every
// team's next run would be refused. A finished run's report is stored apart and its rows are
// in the history: what goes with its results is the per-epoch detail of its case pages, which
// then say so.

// ErrEvicted is returned for the results of a finished run that were removed from the streams
// to make room; its report is still served.
var ErrEvicted = errors.New("the run's results were removed from the fleet's storage to make room for running runs (its report and history are kept)")

// evictLoop looks at the streams every EvictEvery, and when a run finishes or is refused for
// room, until ctx is done; each time it also stops a team's run that its bounds would
// otherwise leave waiting for ever (unstick).
func (c *Coordinator) evictLoop(ctx context.Context) {
	t := c.clock.NewTicker(c.cfg.EvictEvery)
	defer t.Stop()
	for {
		if _, err := c.Evict(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("evicting finished runs' results failed; the next look tries again", zap.Error(err))
		}
		c.unstick()
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		case <-c.evictNow:
		}
	}
}

// askEvict asks the eviction loop to look now.
func (c *Coordinator) askEvict() {
	select {
	case c.evictNow <- struct{}{}:
	default:
	}
}

// Evict removes finished runs' results and documents, in evictionOrder, while the results or
// the artifacts stream holds more than EvictAbove of its limit, until both hold less than
// EvictTo. It returns how many runs it evicted.
func (c *Coordinator) Evict(ctx context.Context) (int, error) {
	rUsed, rMax, err := c.queue.ResultsUsage(ctx)
	if err != nil {
		return 0, err
	}
	aUsed, aMax, err := c.queue.ArtifactsUsage(ctx)
	if err != nil {
		return 0, err
	}
	over := func(share float64) bool {
		return (rMax > 0 && float64(rUsed) > share*float64(rMax)) || (aMax > 0 && float64(aUsed) > share*float64(aMax))
	}
	if !over(c.cfg.EvictAbove) {
		return 0, nil
	}
	n := 0
	for _, k := range c.evictionOrder() {
		if !over(c.cfg.EvictTo) {
			break
		}
		if err := c.evictRun(ctx, k); err != nil {
			return n, err
		}
		n++
		rUsed -= min(uint64(max(k.results, 0)), rUsed)
		aUsed -= min(uint64(max(k.artifact, 0)), aUsed)
	}
	if n > 0 {
		c.log.Info("evicted finished runs' results to make room", zap.Int("runs", n),
			zap.Uint64("results_bytes", rUsed), zap.Uint64("results_max", rMax), zap.Uint64("artifacts_bytes", aUsed), zap.Uint64("artifacts_max", aMax))
	}
	return n, nil
}

// evictRun removes one kept run's results and documents and marks its status.
func (c *Coordinator) evictRun(ctx context.Context, k keptRun) error {
	st, err := c.load(ctx, k.id)
	if errors.Is(err, ErrNotFound) {
		c.forget(k.id)
		return nil
	}
	if err != nil {
		return err
	}
	if err := c.queue.PurgeRunResults(ctx, k.id); err != nil {
		return err
	}
	if err := c.queue.PurgeRunArtifacts(ctx, k.id); err != nil {
		return err
	}
	st.ResultsEvictedAt = timestamppb.New(c.now())
	if err := c.save(ctx, st, st.GetJobKey()); err != nil {
		return fmt.Errorf("evict run %s: %w", k.id, err)
	}
	c.forget(k.id)
	c.metrics.evicted.Inc()
	c.log.Info("evicted a finished run's results", zap.String("run", k.id), zap.String("team", k.team),
		zap.Int64("results_bytes", k.results), zap.Int64("artifact_bytes", k.artifact))
	return nil
}

// unstick stops the run of a team over a bound that nothing else would bring under it: the
// team is not fed while over, and when none of its jobs is out any more, no result will come
// to finish a run and turn its bytes from live to kept. The run holding the most is cancelled
// with the reason, and its team's other runs go on.
func (c *Coordinator) unstick() {
	c.usage.mu.Lock()
	var stuck []string
	for team, t := range c.usage.teams {
		if t.over != "" {
			stuck = append(stuck, team)
		}
	}
	c.usage.mu.Unlock()
	for _, team := range stuck {
		if c.feed.teamOutstanding(team) > 0 {
			continue
		}
		var biggest *run
		var most int64
		c.mu.Lock()
		for _, r := range c.runs {
			if r.team != team || r.readOnly {
				continue
			}
			r.mu.Lock()
			held := r.resultBytes + r.artifactBytes
			r.mu.Unlock()
			if biggest == nil || held > most {
				biggest, most = r, held
			}
		}
		c.mu.Unlock()
		if biggest == nil {
			continue
		}
		why := c.teamBytesOf(team).over
		if why == "" {
			continue
		}
		c.log.Warn("stopping a run its team's bound leaves waiting", zap.String("run", biggest.id), zap.String("team", team), zap.String("why", why))
		c.audit(tenant.Principal{Name: "coordinator"}, team, "cancel", "run/"+biggest.id, outcomeOK, why)
		select {
		case biggest.cancel <- why + ": the run was stopped so that its team's other runs can go on":
		default:
		}
	}
}

// teamOfRun is the team that owns a stored run.
func teamOfRun(st *pb.RunStatus) string { return tenant.Team(st.GetSpec().GetTeam()) }
