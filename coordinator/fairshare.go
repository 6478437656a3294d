package coordinator

import (
	"context"
	"math"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/queue"
)

// The fair share of the workers. The jobs stream is a FIFO per lane: a run that published its
// 600 jobs first would have them all run before a job published after them. So a run does not
// publish its jobs at once. The feeder keeps each lane's queue short — the jobs the workers
// are running, the idle slots waiting for one, and a small backlog so that none waits for the
// next — and each time a job ends it picks who publishes the next one: among the teams with a
// job ready, the one holding the fewest of the lane's jobs for its weight, and within that
// team its run holding the fewest. A team's job submitted behind another team's whole run
// therefore starts after the backlog, not after the run, and teams of weights 1:1:2 hold the
// workers' slots 1:1:2.
//
// What is queued stays in JetStream (durable, exactly once); what is not yet published is the
// plan's and the run's published cursor, as it always was. After a restart the feeder starts
// from what each resumed run has in the stream, so the share is fair again at once.

// A lane's backlog is the jobs queued beyond those running and the idle slots: enough to
// cover the time from a job's end to its successor's publication (feedLatency at the rate
// jobs end), never less than half the slots in use, so a new team's job waits behind at most
// half a round of the workers. initialBacklog holds until the lane's load is first read.
const (
	initialBacklog = 8
	maxBacklog     = 4096
	feedLatency    = 100 * time.Millisecond
	// rateWindow is about how long the rate jobs end is averaged over.
	rateWindow = time.Second
)

// feeder hands out the right to publish jobs, lane by lane.
type feeder struct {
	policy func(team string) TeamPolicy

	mu    sync.Mutex
	lanes map[queue.Lane]*laneFeed
	// seq orders grants, so that ties go to whoever was served longest ago.
	seq uint64
}

// laneFeed is one lane's share.
type laneFeed struct {
	load queue.LaneLoad
	// backlog is the target of jobs queued beyond the running ones and the waiting slots.
	backlog int
	// outstanding counts the lane's jobs granted and not finished: published (queued or
	// running) or about to be.
	outstanding int
	teams       map[string]*teamFeed
	// ended counts the jobs finished since the load was last read at loadAt; rate is the
	// jobs ending per second, smoothed.
	ended  int
	loadAt time.Time
	rate   float64
}

// teamFeed is one team's part of a lane.
type teamFeed struct {
	name        string
	outstanding int
	// paused says why the team is not fed ("": it is).
	paused    string
	runs      []*runFeed
	lastGrant uint64
}

// runFeed is one run's place in its lane: what it could publish, what it may, and what it holds.
type runFeed struct {
	lane *laneFeed
	team *teamFeed
	// ready is how many jobs the run could publish now; credit how many of them it may
	// publish; outstanding how many it was granted that have not finished.
	ready, credit, outstanding int
	lastGrant                  uint64
	// wake is signalled when credit is granted.
	wake chan struct{}
}

// newFeeder returns a feeder that reads each team's weight and cap on running jobs from
// policy.
func newFeeder(policy func(team string) TeamPolicy) *feeder {
	return &feeder{policy: policy, lanes: map[queue.Lane]*laneFeed{}}
}

func (f *feeder) laneLocked(l queue.Lane) *laneFeed {
	lf := f.lanes[l]
	if lf == nil {
		lf = &laneFeed{backlog: initialBacklog, teams: map[string]*teamFeed{}}
		f.lanes[l] = lf
	}
	return lf
}

// join adds a run of team to lane, holding outstanding jobs already published (a resumed run's
// jobs in the stream).
func (f *feeder) join(l queue.Lane, team string, outstanding int) *runFeed {
	f.mu.Lock()
	defer f.mu.Unlock()
	lf := f.laneLocked(l)
	tf := lf.teams[team]
	if tf == nil {
		tf = &teamFeed{name: team}
		lf.teams[team] = tf
	}
	fd := &runFeed{lane: lf, team: tf, outstanding: outstanding, wake: make(chan struct{}, 1)}
	tf.runs = append(tf.runs, fd)
	tf.outstanding += outstanding
	lf.outstanding += outstanding
	return fd
}

// setReady says how many jobs fd's run could publish now.
func (f *feeder) setReady(fd *runFeed, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fd.ready == n {
		return
	}
	fd.ready = n
	f.fillLocked(fd.lane)
}

// take returns the credit granted to fd's run since the last take: the jobs it may publish
// now, no longer counted ready (the run says how many are left with setReady once they are
// out). They stay outstanding until finished, or given back with unused.
func (f *feeder) take(fd *runFeed) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := fd.credit
	fd.credit = 0
	fd.ready = max(fd.ready-n, 0)
	return n
}

// unused gives back n jobs of credit taken but not published.
func (f *feeder) unused(fd *runFeed, n int) {
	if n <= 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.releaseLocked(fd, n)
}

// finished records that n of fd's outstanding jobs have their results.
func (f *feeder) finished(fd *runFeed, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fd.lane.ended += n
	f.releaseLocked(fd, n)
}

func (f *feeder) releaseLocked(fd *runFeed, n int) {
	n = min(n, fd.outstanding)
	fd.outstanding -= n
	fd.team.outstanding -= n
	fd.lane.outstanding -= n
	f.fillLocked(fd.lane)
}

// leave removes fd's run: what it holds is gone from the lane (finished, or purged with the
// run).
func (f *feeder) leave(fd *runFeed) {
	f.mu.Lock()
	defer f.mu.Unlock()
	tf := fd.team
	for i, r := range tf.runs {
		if r == fd {
			tf.runs = append(tf.runs[:i], tf.runs[i+1:]...)
			break
		}
	}
	fd.ready, fd.credit = 0, 0
	f.releaseLocked(fd, fd.outstanding)
	if len(tf.runs) == 0 && tf.outstanding == 0 && tf.paused == "" {
		delete(fd.lane.teams, tf.name)
	}
}

// setLoad takes what lane l's consumer said of its jobs at now, and sizes the backlog to the
// rate jobs end.
func (f *feeder) setLoad(l queue.Lane, load queue.LaneLoad, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	lf := f.laneLocked(l)
	lf.load = load
	if lf.loadAt.IsZero() {
		lf.loadAt = now
	} else if dt := now.Sub(lf.loadAt); dt >= feedLatency/2 {
		// A moving average over about a second, weighted by the time each reading covers:
		// two readings a moment apart (a late tick, then the next at once) must not take a
		// few results in a few milliseconds for a rate, and open the window to a burst of one
		// team's jobs.
		alpha := 1 - math.Exp(-dt.Seconds()/rateWindow.Seconds())
		lf.rate += alpha * (float64(lf.ended)/dt.Seconds() - lf.rate)
		lf.ended, lf.loadAt = 0, now
	}
	floor := max(1, (load.Running+load.Waiting)/2)
	lf.backlog = min(max(int(lf.rate*feedLatency.Seconds()), floor), maxBacklog)
	f.fillLocked(lf)
}

// pause stops feeding team's runs in every lane, saying why ("" feeds them again).
func (f *feeder) pause(team, why string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, lf := range f.lanes {
		tf := lf.teams[team]
		if tf == nil {
			if why == "" {
				continue
			}
			tf = &teamFeed{name: team}
			lf.teams[team] = tf
		}
		if tf.paused == why {
			continue
		}
		tf.paused = why
		f.fillLocked(lf)
	}
}

// window is how many jobs the lane should hold: the running ones, one per idle slot, and the
// backlog.
func (lf *laneFeed) window() int { return lf.load.Running + lf.load.Waiting + lf.backlog }

// fillLocked grants the lane's free room, one job at a time, to whoever is owed it most, and
// wakes the runs that got some.
func (f *feeder) fillLocked(lf *laneFeed) {
	var woken []*runFeed
	for lf.outstanding < lf.window() {
		tf := f.nextTeamLocked(lf)
		if tf == nil {
			break
		}
		fd := nextRun(tf)
		f.seq++
		fd.credit++
		fd.outstanding++
		tf.outstanding++
		lf.outstanding++
		fd.lastGrant, tf.lastGrant = f.seq, f.seq
		if fd.credit == 1 {
			woken = append(woken, fd)
		}
	}
	for _, fd := range woken {
		select {
		case fd.wake <- struct{}{}:
		default:
		}
	}
}

// nextTeamLocked is the team owed the next job of lf: fed, with a job ready and under its cap
// on running jobs, holding the fewest jobs for its weight (served longest ago among equals).
func (f *feeder) nextTeamLocked(lf *laneFeed) *teamFeed {
	var best *teamFeed
	var bestWeight int
	for _, tf := range lf.teams {
		if tf.paused != "" || nextRun(tf) == nil {
			continue
		}
		p := f.policy(tf.name)
		if p.MaxRunning > 0 && tf.outstanding >= p.MaxRunning {
			continue
		}
		w := max(p.Weight, 1)
		if best == nil {
			best, bestWeight = tf, w
			continue
		}
		// tf.outstanding/w < best.outstanding/bestWeight, without division.
		a, b := tf.outstanding*bestWeight, best.outstanding*w
		if a < b || (a == b && tf.lastGrant < best.lastGrant) {
			best, bestWeight = tf, w
		}
	}
	return best
}

// nextRun is the run of tf owed its next job: with a job ready beyond its credit, holding the
// fewest (served longest ago among equals); nil when none has one ready.
func nextRun(tf *teamFeed) *runFeed {
	var best *runFeed
	for _, fd := range tf.runs {
		if fd.ready <= fd.credit {
			continue
		}
		if best == nil || fd.outstanding < best.outstanding || (fd.outstanding == best.outstanding && fd.lastGrant < best.lastGrant) {
			best = fd
		}
	}
	return best
}

// laneShare is what one team holds of a lane, for the usage report and the metrics.
type laneShare struct {
	Outstanding int
	Paused      string
}

// shares returns what each team holds of lane l, and the lane's window.
func (f *feeder) shares(l queue.Lane) (map[string]laneShare, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	lf := f.lanes[l]
	if lf == nil {
		return nil, 0
	}
	out := make(map[string]laneShare, len(lf.teams))
	for name, tf := range lf.teams {
		out[name] = laneShare{Outstanding: tf.outstanding, Paused: tf.paused}
	}
	return out, lf.window()
}

// busy reports whether lane l has a run with jobs to publish or jobs out: its load is then
// worth reading.
func (f *feeder) busy(l queue.Lane) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	lf := f.lanes[l]
	if lf == nil {
		return false
	}
	if lf.outstanding > 0 {
		return true
	}
	for _, tf := range lf.teams {
		for _, fd := range tf.runs {
			if fd.ready > 0 {
				return true
			}
		}
	}
	return false
}

// teamOutstanding is what team holds of every lane.
func (f *feeder) teamOutstanding(team string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, lf := range f.lanes {
		if tf := lf.teams[team]; tf != nil {
			n += tf.outstanding
		}
	}
	return n
}

// feedLoop reads the load of every busy lane each FeedEvery and gives it to the feeder, which
// sizes the lane's window to it, until ctx is done.
func (c *Coordinator) feedLoop(ctx context.Context) {
	t := c.clock.NewTicker(c.cfg.FeedEvery)
	defer t.Stop()
	failing := false
	for {
		for _, l := range queue.Lanes() {
			if !c.feed.busy(l) {
				continue
			}
			load, err := c.queue.LaneLoad(ctx, l)
			if err != nil {
				// The last load read stands; results still free room as they arrive.
				if !failing && ctx.Err() == nil {
					c.log.Warn("reading a lane's load failed; its window stays as it was", zap.String("lane", string(l)), zap.Error(err))
				}
				failing = true
				continue
			}
			failing = false
			c.feed.setLoad(l, load, c.now())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}
