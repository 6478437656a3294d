package coordinator

import (
	"math"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/queue"
)

func weights(w map[string]int) func(string) TeamPolicy {
	return func(team string) TeamPolicy { return TeamPolicy{Weight: max(w[team], 1)} }
}

// take publishes what fd was granted: it takes the credit and says how many are left.
func take(f *feeder, fd *runFeed, left *int) int {
	n := f.take(fd)
	*left -= n
	f.setReady(fd, *left)
	return n
}

// TestFeederGrantsByWeight: with every team backlogged, the window is split by weight, each
// team's runs share its part, and a team at its cap on running jobs is passed over.
func TestFeederGrantsByWeight(t *testing.T) {
	for _, tc := range []struct {
		name    string
		weights map[string]int
		caps    map[string]int
		runs    []string // team of each run
		want    []int    // jobs granted to each run, of a window of 12
	}{
		{"equal teams", nil, nil, []string{"a", "b", "c"}, []int{4, 4, 4}},
		{"weights 1:1:2", map[string]int{"c": 2}, nil, []string{"a", "b", "c"}, []int{3, 3, 6}},
		{"a team's two runs share its part", nil, nil, []string{"a", "a", "b"}, []int{3, 3, 6}},
		{"a cap on running jobs", nil, map[string]int{"b": 2}, []string{"a", "b"}, []int{10, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFeeder(func(team string) TeamPolicy {
				return TeamPolicy{Weight: max(tc.weights[team], 1), MaxRunning: tc.caps[team]}
			})
			// A run that held the whole lane leaves once every run is ready: the window,
			// 8 running and a backlog of half that, is then granted all at once.
			f.setLoad(queue.LaneOnDemand, queue.LaneLoad{Running: 8}, time.Unix(0, 0))
			holder := f.join(queue.LaneOnDemand, "z", 1000)
			var fds []*runFeed
			for _, team := range tc.runs {
				fds = append(fds, f.join(queue.LaneOnDemand, team, 0))
			}
			for _, fd := range fds {
				f.setReady(fd, 1000)
			}
			f.leave(holder)
			for i, fd := range fds {
				if got := f.take(fd); got != tc.want[i] {
					t.Errorf("run %d (team %s) was granted %d, want %d", i, tc.runs[i], got, tc.want[i])
				}
			}
		})
	}
}

// TestFeederNewTeamGoesNext: a team whose one job is ready after another team's whole run was
// is granted the next room that frees, ahead of the rest of that run.
func TestFeederNewTeamGoesNext(t *testing.T) {
	f := newFeeder(weights(nil))
	f.setLoad(queue.LaneOnDemand, queue.LaneLoad{Running: 7, Waiting: 0}, time.Unix(0, 0))
	b := f.join(queue.LaneOnDemand, "b", 0)
	bLeft := 600
	f.setReady(b, bLeft)
	if got := take(f, b, &bLeft); got == 0 || got >= 600 {
		t.Fatalf("the first run was granted %d of 600", got)
	}
	a := f.join(queue.LaneOnDemand, "a", 0)
	f.setReady(a, 1)
	if got := f.take(a); got != 0 {
		t.Fatalf("granted %d with the window full", got)
	}
	f.finished(b, 1)
	if got := f.take(a); got != 1 {
		t.Errorf("the new team got %d of the first room freed, want 1", got)
	}
	if got := f.take(b); got != 0 {
		t.Errorf("the first run got %d more before the new team", got)
	}
	// Paused, a team is passed over; unpaused, it is fed again.
	f.pause("b", "over a bound")
	f.finished(a, 1)
	if got := f.take(b); got != 0 {
		t.Errorf("a paused team got %d", got)
	}
	f.pause("b", "")
	if got := f.take(b); got != 1 {
		t.Errorf("the team once unpaused got %d, want 1", got)
	}
	// A run that leaves gives its room back.
	f.leave(b)
	if _, window := f.shares(queue.LaneOnDemand); window == 0 {
		t.Error("the lane lost its window")
	}
	shares, _ := f.shares(queue.LaneOnDemand)
	if shares["b"].Outstanding != 0 {
		t.Errorf("team b still holds %d after its run left", shares["b"].Outstanding)
	}
}

// TestFeederBacklog: the backlog covers feedLatency at the rate jobs end, never less than half
// the slots in use nor more than maxBacklog.
func TestFeederBacklog(t *testing.T) {
	for _, tc := range []struct {
		name  string
		load  queue.LaneLoad
		ended int // in the second before the load was read
		want  int
	}{
		{"idle", queue.LaneLoad{}, 0, 1},
		{"slow jobs: half the slots", queue.LaneLoad{Running: 16, Waiting: 0}, 2, 8},
		{"fast jobs: the rate", queue.LaneLoad{Running: 64}, 20_000, 2_000},
		{"capped", queue.LaneLoad{Running: 64}, 1_000_000, maxBacklog},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFeeder(weights(nil))
			fd := f.join(queue.LaneOnDemand, "a", tc.ended)
			f.setLoad(queue.LaneOnDemand, tc.load, time.Unix(0, 0))
			f.finished(fd, tc.ended)
			// Reads a second apart at the same rate: the smoothed rate nears it.
			for i := 1; i <= 8; i++ {
				if i > 1 {
					fd.outstanding += tc.ended
					f.finished(fd, tc.ended)
				}
				f.setLoad(queue.LaneOnDemand, tc.load, time.Unix(int64(i), 0))
			}
			if got := f.lanes[queue.LaneOnDemand].backlog; math.Abs(float64(got-tc.want)) > float64(tc.want)/100+1 {
				t.Errorf("backlog %d, want about %d", got, tc.want)
			}
		})
	}
}

// simFleet is a simulation of a lane: slots take jobs in the order the runs published them
// (the stream is a FIFO), each job takes its duration, and the feeder is given the lane's load
// every FeedEvery, as the coordinator's feedLoop does.
type simFleet struct {
	f     *feeder
	slots int
	fifo  []simJob
	busy  []simJob // the jobs in the slots
	now   time.Duration
	runs  []*simRun
}

type simJob struct {
	run     *simRun
	started time.Duration
}

type simRun struct {
	team      string
	fd        *runFeed
	left      int // jobs not yet published
	submitted time.Duration
	started   []time.Duration
	slotTime  time.Duration
}

func (s *simFleet) submit(team string, jobs int) *simRun {
	r := &simRun{team: team, left: jobs, submitted: s.now}
	r.fd = s.f.join(queue.LaneOnDemand, team, 0)
	s.f.setReady(r.fd, jobs)
	s.runs = append(s.runs, r)
	s.publish()
	return r
}

// publish lets every run publish what it was granted.
func (s *simFleet) publish() {
	for _, r := range s.runs {
		for range take(s.f, r.fd, &r.left) {
			s.fifo = append(s.fifo, simJob{run: r})
		}
	}
}

// run advances the simulation by d in steps of dt, jobs lasting dur.
func (s *simFleet) run(d, dt, dur time.Duration) {
	feedEvery := 100 * time.Millisecond
	for end := s.now + d; s.now < end; s.now += dt {
		var still []simJob
		for _, j := range s.busy {
			if s.now-j.started >= dur {
				j.run.slotTime += dur
				s.f.finished(j.run.fd, 1)
				continue
			}
			still = append(still, j)
		}
		s.busy = still
		s.publish()
		for len(s.busy) < s.slots && len(s.fifo) > 0 {
			j := s.fifo[0]
			s.fifo = s.fifo[1:]
			j.started = s.now
			j.run.started = append(j.run.started, s.now)
			s.busy = append(s.busy, j)
		}
		if s.now%feedEvery == 0 {
			waiting := 0
			if len(s.busy) < s.slots {
				waiting = 1 // an idle worker holds one pull request per lane
			}
			s.f.setLoad(queue.LaneOnDemand, queue.LaneLoad{Queued: len(s.fifo), Running: len(s.busy), Waiting: waiting}, time.Unix(0, 0).Add(s.now))
			s.publish()
		}
	}
}

// TestFairShareSimulated plays the review's findings against the feeder: team b's 600 jobs
// queued first no longer make team a's single job wait for them (it starts within two job
// durations), and three teams of weights 1:1:2 hold the slots 1:1:2 within 10%.
func TestFairShareSimulated(t *testing.T) {
	const dur = time.Second
	for _, slots := range []int{1, 4, 8, 32} {
		s := &simFleet{f: newFeeder(weights(nil)), slots: slots}
		s.submit("b", 600)
		s.run(10*dur, 10*time.Millisecond, dur)
		a := s.submit("a", 1)
		s.run(5*dur, 10*time.Millisecond, dur)
		if len(a.started) != 1 {
			t.Fatalf("%d slots: team a's job never started", slots)
		}
		if wait := a.started[0] - a.submitted; wait > 2*dur {
			t.Errorf("%d slots: team a's job waited %s behind team b's run, want at most two job durations (%s)", slots, wait, 2*dur)
		}
	}

	s := &simFleet{f: newFeeder(weights(map[string]int{"c": 2})), slots: 16}
	runs := []*simRun{s.submit("a", 2000), s.submit("b", 2000), s.submit("c", 4000)}
	// All three stay backlogged for this long: 16 slots at 1 s finish 16 jobs a second.
	s.run(100*dur, 10*time.Millisecond, dur)
	var total time.Duration
	for _, r := range runs {
		total += r.slotTime
	}
	for i, want := range []float64{0.25, 0.25, 0.5} {
		got := float64(runs[i].slotTime) / float64(total)
		if math.Abs(got-want) > 0.1*want {
			t.Errorf("team %s held %.3f of the slot time, want %.2f ± 10%%", runs[i].team, got, want)
		}
	}
}

// TestFeederBacklogIgnoresClosePairs: a reading a moment after the last (a tick that came
// late, then the next at once) does not take the few results between them for a rate: the
// backlog, and the window, stay as the steady rate makes them (a review saw 50 grants at once).
func TestFeederBacklogIgnoresClosePairs(t *testing.T) {
	f := newFeeder(weights(nil))
	fd := f.join(queue.LaneOnDemand, "a", 1_000)
	load := queue.LaneLoad{Running: 8}
	at := time.Unix(0, 0)
	for range 20 { // 30 jobs a second, read every 100 ms
		f.finished(fd, 3)
		at = at.Add(100 * time.Millisecond)
		f.setLoad(queue.LaneOnDemand, load, at)
	}
	steady := f.lanes[queue.LaneOnDemand].backlog
	f.finished(fd, 3)
	f.setLoad(queue.LaneOnDemand, load, at.Add(3*time.Millisecond))
	if got := f.lanes[queue.LaneOnDemand].backlog; got > steady+1 {
		t.Errorf("backlog %d after two readings 3 ms apart, want the steady %d", got, steady)
	}
}
