package coordinator

import (
	"context"
	"fmt"
	"os"

	"go.uber.org/zap"
)

// What admission checks of the fleet's storage: the streams as a whole (a nearly full one
// refuses everyone, but only running runs count: finished ones give their room back on
// demand), and the team's own bounds (over one, the team is refused and nobody else notices).

// resultsFullAbove is the share of the results stream's MaxBytes above which a new run is
// refused: the stream refuses results once full, so the runs it holds keep the room they
// need to finish, and a new run is answered now rather than stalled later.
const resultsFullAbove = 0.9

// CapacityError is a run refused because the fleet's storage is nearly full; the API answers
// it 507.
type CapacityError struct{ Err error }

func (e *CapacityError) Error() string { return e.Err.Error() }

func (e *CapacityError) Unwrap() error { return e.Err }

// QuotaError is a run or a push refused because its team is over one of its bounds; the API
// answers it 429. Its text names the bound and the team's usage.
type QuotaError struct{ Err error }

func (e *QuotaError) Error() string { return e.Err.Error() }

func (e *QuotaError) Unwrap() error { return e.Err }

// checkResultsRoom refuses a new run while running runs nearly fill the results stream: the
// kept results of finished runs do not count, since eviction gives their room back (and is
// asked to now). One stream info request per admission.
func (c *Coordinator) checkResultsRoom(ctx context.Context) error {
	used, limit, err := c.queue.ResultsUsage(ctx)
	if err != nil {
		// The stream's own limit still protects the results: a failed look-up is logged,
		// not a reason to refuse every run.
		c.log.Warn("reading the results stream's usage failed", zap.Error(err))
		return nil
	}
	kept, _ := c.keptBytes()
	if limit == 0 || float64(used) <= c.cfg.EvictTo*float64(limit) {
		return nil
	}
	c.askEvict()
	live := used - min(uint64(max(kept, 0)), used)
	if float64(live) > resultsFullAbove*float64(limit) {
		return &CapacityError{Err: fmt.Errorf("running runs hold %d%% of the results stream (%d of %d bytes): no new run is admitted until some finish, or an operator raises its limit (ResultsMaxBytes)",
			live*100/limit, live, limit)}
	}
	return nil
}

// checkTeamRoom refuses a submission of team while its unfinished runs are over a byte bound:
// its runs are not fed then, and a new one would only wait.
func (c *Coordinator) checkTeamRoom(team string) error {
	if over := c.teamBytesOf(team).over; over != "" {
		return &QuotaError{Err: fmt.Errorf("%s: no new run of the team is admitted until its runs finish or are cancelled, or an admin raises the bound", over)}
	}
	return nil
}

// checkBundleRoom refuses storing the bundle at tarPath (digest) for team when the bundles the
// team's kept runs and pushed suites hold would go over its bound. A bundle the team holds
// already costs nothing more.
func (c *Coordinator) checkBundleRoom(ctx context.Context, team, digest, tarPath string) error {
	limit := c.policy(team).MaxBundleBytes
	if limit <= 0 {
		return nil
	}
	total, has, err := c.held.team(ctx, c, team, digest)
	if err != nil {
		// The store's own limit still holds: logged, not a reason to refuse.
		c.log.Warn("reading a team's bundles failed", zap.String("team", team), zap.Error(err))
		return nil
	}
	if has {
		return nil
	}
	fi, err := os.Stat(tarPath)
	if err != nil {
		return err
	}
	if total+fi.Size() > limit {
		return &QuotaError{Err: fmt.Errorf("team %s's runs and pushed suites hold %s of bundles; this one (%s) would take it over its bound of %s (max_bundle_bytes): wait for old runs to leave retention, or ask an admin to raise the bound",
			team, FormatSize(total), FormatSize(fi.Size()), FormatSize(limit))}
	}
	return nil
}
