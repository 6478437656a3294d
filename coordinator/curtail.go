package coordinator

import (
	"context"

	"go.uber.org/zap"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
	"github.com/skillfleet/skillfleet/stats"
	"github.com/skillfleet/skillfleet/suite"
	"github.com/skillfleet/skillfleet/verdict"
)

// Curtailment: a case's epochs stop once its verdict is settled (verdict.Fixed.Settled), and
// only as many start at once as can still matter (verdict.Fixed.Dispatch). The verdict is
// always the one all epochs would have given; what changes is how many run.
//
// A curtailed run's dispatcher publishes, of each case of a parallel skill, only its first
// epochs (as many as Dispatch allows before any result) through the ungated list and the
// published cursor, which depend on the plan alone and so survive a restart. Its other epochs
// are deferred: released one result at a time, as Dispatch says, and published like a serial
// skill's next job. Jobs of `parallel: false` skills run one at a time anyway; theirs are
// passed over once their case is settled. Jobs of a settled case not yet published are never
// published; those already queued or running when the run completes are purged and
// cancelled with the rest of the run.
//
// A run with a baseline arm is curtailed only when it has a skill whose comparison is
// group-sequential (groupseq.go): that skill's cases run in lockstep across the arms until
// the comparison stops; every other case runs all its epochs, which its comparison pairs.

// caseEpochs is one report row of a curtailed run (case × agent × arm): its jobs by epoch.
type caseEpochs struct {
	key  report.CaseKey
	rule verdict.Fixed
	// seq is a `runs: auto` case's rule, which decides it instead of rule.
	seq *verdict.Sequential
	// jobs are the row's plan indices in epoch order.
	jobs []int
	// released is how many of jobs (the first ones) may be published: the first window, then
	// what Dispatch let out. A serial skill's are all released: its gate holds them back.
	released int
	serial   bool
	// settled is set once the row's verdict is settled; its jobs without a result are then
	// withdrawn.
	settled bool
	// group is the group-sequential comparison the row is in (a run with a baseline; see
	// groupseq.go); keep marks a row of such a run outside any, which runs every epoch.
	group *compareGroup
	keep  bool
}

// curtailEpochs makes r a curtailed run: it groups the plan's jobs into rows and rebuilds the
// dispatcher so that only each parallel row's first window of epochs is ungated.
func (r *run) curtailEpochs() {
	// Under the lock: status readers (countWithdrawnLocked) read it from other goroutines;
	// the run loop, which alone writes it, reads it without.
	r.mu.Lock()
	r.curtail = true
	r.mu.Unlock()
	r.rowOf = make([]int32, len(r.plan.Jobs))
	type key struct {
		c     *suite.Case
		agent string
		arm   suite.Arm
	}
	rows := map[key]int{}
	for i, j := range r.plan.Jobs {
		k := key{j.Case, j.Agent, j.Arm}
		n, ok := rows[k]
		if !ok {
			n = len(r.rows)
			rows[k] = n
			arm := ""
			if j.Arm != suite.ArmWithSkill {
				arm = string(j.Arm)
			}
			r.rows = append(r.rows, &caseEpochs{
				key:    report.CaseKey{Skill: j.Case.Skill.Name, Case: j.Case.Name, Agent: j.Agent, Arm: arm},
				rule:   report.Rule(j.Case.Runs, j.Case.Confidence),
				seq:    sequentialRule(j.Case),
				serial: !j.Case.Parallel,
			})
		}
		r.rowOf[i] = int32(n)
		r.rows[n].jobs = append(r.rows[n].jobs, i)
	}
	for _, row := range r.rows {
		sortByEpoch(row.jobs, r.plan.Jobs)
	}
	if r.plan.Baseline != "" {
		r.planGroups()
	}
	deferred := make([]bool, len(r.plan.Jobs))
	for _, row := range r.rows {
		switch {
		case row.serial || row.keep:
			row.released = len(row.jobs)
			continue
		case row.group != nil:
			row.released = row.group.window()
		default:
			row.released = min(row.dispatch(nil, verdict.Tally{}, 0), len(row.jobs))
		}
		for _, i := range row.jobs[row.released:] {
			deferred[i] = true
		}
	}
	dj := make([]dispatchJob, len(r.plan.Jobs))
	for i, j := range r.plan.Jobs {
		dj[i] = dispatchJob{skill: j.Case.Skill.Name, parallel: j.Case.Parallel, deferred: deferred[i]}
	}
	r.disp = newDispatcher(dj)
}

// sortByEpoch orders a row's job indices by epoch (the plan lists them so already; this
// does not rely on it).
func sortByEpoch(idx []int, jobs []suite.Job) {
	for a := 1; a < len(idx); a++ {
		for b := a; b > 0 && jobs[idx[b]].Epoch < jobs[idx[b-1]].Epoch; b-- {
			idx[b], idx[b-1] = idx[b-1], idx[b]
		}
	}
}

// passedOver reports whether job i is not to be published: it has its result, or its case
// is settled.
func (r *run) passedOver(i int) bool {
	return r.done[i] || (r.curtail && r.rows[r.rowOf[i]].settled)
}

// resumeEpochs brings a resumed curtailed run's rows up to date with the results replayed,
// and returns the deferred jobs to publish again: those released before the restart that
// have no result (published then, deduplicated now, or not published yet), and those the
// results now let out.
func (r *run) resumeEpochs() []int {
	var out []int
	for _, row := range r.rows {
		if !row.serial {
			first := row.released // the first window: ungated, under the published cursor
			for k, i := range row.jobs {
				if r.done[i] {
					row.released = max(row.released, k+1)
				}
			}
			for _, i := range row.jobs[first:row.released] {
				if !r.done[i] {
					out = append(out, i)
				}
			}
		}
		if row.group == nil {
			out = append(out, r.settle(row)...)
		}
	}
	// A group's looks are taken again over the results replayed (the same results, the same
	// decisions): the windows they open and what its stop calls for go out.
	for _, g := range r.groups {
		out = append(out, r.advance(g)...)
	}
	return out
}

// onEpoch updates job idx's row after its result was counted, and returns the row's deferred
// jobs that may now be published.
func (r *run) onEpoch(idx int) []int {
	row := r.rows[r.rowOf[idx]]
	if row.settled {
		// A withdrawn job that ran all the same (queued before its case settled).
		r.mu.Lock()
		r.withdrawn--
		r.mu.Unlock()
		return nil
	}
	for k, i := range row.jobs {
		if i == idx {
			row.released = max(row.released, k+1)
		}
	}
	if g := row.group; g != nil && g.result == nil {
		// In lockstep: the group's looks release its epochs.
		return r.advance(g)
	}
	return r.settle(row)
}

// settle marks row settled once its verdict is, withdrawing its jobs without a result, and
// otherwise releases as many more of its epochs as Dispatch says.
func (r *run) settle(row *caseEpochs) []int {
	if row.settled || (row.group != nil && row.group.result == nil) {
		return nil
	}
	if !r.builder.Open(row.key) {
		row.settled = true
		left := 0
		for _, i := range row.jobs {
			if !r.done[i] {
				left++
				if r.inFlight[i] {
					// Published: queued or running. The workers are told to skip or stop it.
					r.withdraw = append(r.withdraw, r.plan.Jobs[i].ID)
				}
			}
		}
		r.mu.Lock()
		r.withdrawn += left
		r.mu.Unlock()
		return nil
	}
	if row.serial || row.keep {
		return nil
	}
	inFlight := 0
	for _, i := range row.jobs[:row.released] {
		if !r.done[i] {
			inFlight++
		}
	}
	n := min(row.dispatch(r.builder.Outcomes(row.key), r.builder.Tally(row.key), inFlight), len(row.jobs)-row.released)
	if n <= 0 {
		return nil
	}
	out := row.jobs[row.released : row.released+n]
	row.released += n
	return out
}

// unsettled returns the jobs of idx whose case is not settled, in order (idx itself when all
// are).
func (r *run) unsettled(idx []int) []int {
	if !r.curtail {
		return idx
	}
	var out []int
	for k, i := range idx {
		if r.rows[r.rowOf[i]].settled {
			if out == nil {
				out = append(make([]int, 0, len(idx)), idx[:k]...)
			}
			continue
		}
		if out != nil {
			out = append(out, i)
		}
	}
	if out == nil {
		return idx
	}
	return out
}

// countWithdrawnLocked sets st's job counts of a curtailed run: the withdrawn jobs are not
// among those it runs. r.mu is held.
func (r *run) countWithdrawnLocked(st *pb.RunStatus) {
	if !r.curtail {
		return
	}
	st.WithdrawnJobs = int32(r.withdrawn)
	st.TotalJobs = int32(len(r.plan.Jobs) - r.withdrawn)
}

// withdrawer is the part of a Queue that tells workers which jobs are no longer needed; a
// queue without it lets them run (their results change nothing).
type withdrawer interface {
	NotifyWithdrawn(ctx context.Context, run string, jobs []string) error
}

// withdrawJobs tells the workers to skip or stop the published jobs of the cases settled
// since it last did: never run if still queued, cut short if running (the cancel path of a
// run, for single jobs).
func (c *Coordinator) withdrawJobs(ctx context.Context, r *run) {
	if len(r.withdraw) == 0 {
		return
	}
	jobs := r.withdraw
	r.withdraw = nil
	wd, ok := c.queue.(withdrawer)
	if !ok {
		return
	}
	if err := wd.NotifyWithdrawn(ctx, r.id, jobs); err != nil && ctx.Err() == nil {
		c.log.Warn("telling workers to skip withdrawn jobs failed; they run, though no longer needed", zap.String("run", r.id), zap.Int("jobs", len(jobs)), zap.Error(err))
	}
}

// withdrawnSkip reports whether res is the skipped result of job idx, withdrawn because its
// case was settled: the worker did not run it, and the case does not count it.
func (r *run) withdrawnSkip(idx int, res *pb.Result) bool {
	// The Builder, not row.settled: results replayed after a restart are taken before the
	// rows are brought up to date, in the order the live run took them.
	return r.curtail && res.GetVerdict() == pb.Verdict_VERDICT_SKIPPED && !r.builder.Open(r.rows[r.rowOf[idx]].key)
}

// dispatch is how many more of row's epochs to start (see verdict.Fixed.Dispatch and
// verdict.Sequential.Dispatch), given its epochs' outcomes in order (a `runs: auto` case),
// its tally and how many of its released epochs are without a result.
func (row *caseEpochs) dispatch(outcomes []pb.Verdict, t verdict.Tally, inFlight int) int {
	if row.seq != nil {
		if outcomes == nil {
			outcomes = make([]pb.Verdict, len(row.jobs))
		}
		// Released epochs are the first ones: the sequential rule counts them as started.
		return row.seq.Dispatch(outcomes, row.released)
	}
	return row.rule.Dispatch(t, inFlight)
}

// sequentialRule is a `runs: auto` case's rule (nil for the fixed rule). The planner checked
// its settings; settings it would refuse leave the case to the fixed rule over its max_runs.
func sequentialRule(c *suite.Case) *verdict.Sequential {
	if !c.Sequential {
		return nil
	}
	t, err := stats.NewSPRT(c.Confidence, c.Delta, c.Alpha, c.Beta)
	if err != nil {
		return nil
	}
	return &verdict.Sequential{Test: t, MaxRuns: c.Runs, Confidence: c.Confidence}
}

// complete reports whether the run needs no more results: every job has one, or, curtailed,
// every case is settled.
func (r *run) complete() bool {
	return r.builder.Done() || (r.curtail && r.builder.Settled())
}
