package coordinator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/skillfleet/skillfleet/internal/clock"
	"github.com/skillfleet/skillfleet/internal/tenant"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/report"
	"github.com/skillfleet/skillfleet/suite"
)

// publishChunk is how many jobs are published between looks at incoming results, so a large
// run keeps aggregating (and serial skills keep moving) while its jobs are still going out.
const publishChunk = 512

// run is one active run: its plan, its aggregate and its live state.
type run struct {
	id   string
	spec *pb.RunSpec
	// key derives the jobs' result secrets (jobSecret); it is stored with the run's status
	// and never leaves the coordinator otherwise.
	key []byte
	// keyed derives and checks them for the run loop (see secrets).
	keyed *jobSecrets
	// legacy marks a run started before job secrets: results replayed from the stream (which
	// its coordinator accepted) are not checked; new arrivals are.
	legacy bool
	// readOnly marks a finished run rebuilt to read its report: what it replays is already
	// in the history, and its status here is not the one the history keeps, so nothing of it
	// is written there.
	readOnly bool
	lane     queue.Lane
	plan     *suite.Plan
	catalog  *jobCatalog
	// spans locates each case's jobs in the plan (they are adjacent, case by case), so that
	// a result's job is found from the case it names: a map of the run's cases, not of its
	// jobs. allJobs, the map of every job id, is built only if a result names another case
	// than its job's.
	spans   map[string]caseSpan
	allJobs map[string]int
	done    []bool
	builder *report.Builder
	disp    *dispatcher
	events  *broadcaster
	cancel  chan string
	// done closes when the loop has finished the run (not when it merely stopped for a
	// coordinator shutdown).
	finished chan struct{}

	// principal submitted the run, and reserved of its jobs count against the principal's
	// limit until the run ends (none for a run resumed after a restart).
	principal string
	reserved  int

	// reuse holds, for a changed-only run, the reuse found for each cell key looked up so far
	// (nil: none); filled chunk by chunk as jobs are published, and again after a restart.
	reuse map[string]*pb.Reuse

	// resultKeys is each planned case's result key (resultKey), the last token of the subject
	// its jobs' results are published on.
	resultKeys map[*suite.Case]string
	// inFlight marks the jobs the run holds of its lane's share: published (or about to be)
	// and without a result yet.
	inFlight []bool
	// inFlightN counts the true of inFlight: the jobs a cost cap expects to be paid for.
	inFlightN int
	// team is the run's team, as its share and bounds count it; feed its place in its
	// lane's share, set once its loop starts.
	team string
	feed *runFeed

	// curtail says the run stops each case's epochs once its verdict is settled (see
	// curtail.go); rows are its cases' jobs by epoch, and rowOf each job's row. curtail is
	// written under mu, since status readers read it.
	curtail bool
	rows    []*caseEpochs
	rowOf   []int32
	// groups are the group-sequential comparisons of a run with a baseline (groupseq.go).
	groups []*compareGroup
	// withdraw are the ids of published jobs of cases settled since the workers were last
	// told (see withdrawJobs).
	withdraw []string

	mu     sync.Mutex
	status *pb.RunStatus
	// resultBytes and artifactBytes are what the run holds of the results and artifacts
	// streams (see pb.RunStatus); misfiled the sequences of its counted results filed under
	// another case's subject, kept in status.Misfiled.
	resultBytes, artifactBytes int64
	misfiled                   map[uint64]bool
	// withdrawn counts the jobs without a result of cases settled without them.
	withdrawn int

	// records are what a comparison reads of each counted result, stored when the run
	// finishes (see records.go); only the run loop touches them.
	records runRecords
}

func newRun(spec *pb.RunSpec, plan *suite.Plan, cat *jobCatalog) *run {
	r := &run{
		id: spec.GetId(), spec: spec, plan: plan, catalog: cat,
		lane:     queue.LaneOnDemand,
		spans:    make(map[string]caseSpan, len(plan.Cases)),
		done:     make([]bool, len(plan.Jobs)),
		builder:  report.NewBuilder(spec.GetId(), plannedCases(plan)),
		events:   newBroadcaster(),
		cancel:   make(chan string, 1),
		finished: make(chan struct{}),
	}
	if spec.GetPriority() == pb.Priority_PRIORITY_SCHEDULED {
		r.lane = queue.LaneScheduled
	}
	r.team = tenant.Team(spec.GetTeam())
	r.inFlight = make([]bool, len(plan.Jobs))
	r.misfiled = map[uint64]bool{}
	r.resultKeys = make(map[*suite.Case]string, len(plan.Cases))
	for _, c := range plan.Cases {
		r.resultKeys[c] = resultKey(c.Skill.Name, c.Name)
	}
	dj := make([]dispatchJob, len(plan.Jobs))
	for i, j := range plan.Jobs {
		k := spanKey(j.Case.Skill.Name, j.Case.Name)
		sp, ok := r.spans[k]
		if !ok {
			sp.first = int32(i)
		}
		sp.n++
		r.spans[k] = sp
		dj[i] = dispatchJob{skill: j.Case.Skill.Name, parallel: j.Case.Parallel}
	}
	r.disp = newDispatcher(dj)
	return r
}

// secrets derives and checks the secrets of r.key's jobs, from one HMAC state made on first
// use and again if the key is replaced (a resumed run's key is set after newRun).
func (r *run) secrets() *jobSecrets {
	if r.keyed == nil || !bytes.Equal(r.keyed.key, r.key) {
		r.keyed = newJobSecrets(r.key)
	}
	return r.keyed
}

// caseSpan is where a case's jobs are in the plan.
type caseSpan struct{ first, n int32 }

func spanKey(skill, caseName string) string { return skill + "\x00" + caseName }

// jobOf returns the index of job id in the plan: among the jobs of the case the result names
// (a handful), or when the result names another case than its job's, in the map of every job.
func (r *run) jobOf(id, skill, caseName string) (int, bool) {
	if sp, ok := r.spans[spanKey(skill, caseName)]; ok {
		for i := sp.first; i < sp.first+sp.n; i++ {
			if r.plan.Jobs[i].ID == id {
				return int(i), true
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.allJobs == nil {
		r.allJobs = make(map[string]int, len(r.plan.Jobs))
		for i, j := range r.plan.Jobs {
			r.allJobs[j.ID] = i
		}
	}
	i, ok := r.allJobs[id]
	return i, ok
}

// maxMisfiled bounds the misfiled results a run keeps in its status; past it, case reads of
// the run scan all of its results.
const maxMisfiled = 1000

// noteMisfiled records that the counted result at m was filed under another case's subject
// than its job's (idx): a case read then fetches it by its sequence.
func (r *run) noteMisfiled(idx int, m queue.ResultMsg) {
	key := r.resultKeys[r.plan.Jobs[idx].Case]
	if m.Key == key {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.misfiled[m.Seq] || r.status == nil {
		return
	}
	r.misfiled[m.Seq] = true
	if len(r.status.Misfiled) >= maxMisfiled {
		r.status.MisfiledOverflow = true
		return
	}
	r.status.Misfiled = append(r.status.Misfiled, &pb.Misfiled{ResultKey: key, Seq: m.Seq})
}

// snapshot returns a copy of the status with live counts.
func (r *run) snapshot() *pb.RunStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := proto.Clone(r.status).(*pb.RunStatus)
	if !isFinal(st.GetState()) {
		st.Cases = r.builder.Counts()
		st.DoneJobs = int32(r.builder.JobsDone())
		st.ResultBytes, st.ArtifactBytes = r.resultBytes, r.artifactBytes
		r.countWithdrawnLocked(st)
	}
	return st
}

// loop drives a run to its end: it catches up on results already stored (after a restart),
// publishes jobs, aggregates results, and finishes the run when every job has a result, on
// cancellation, or at the deadline. When ctx ends first (coordinator shutdown) it saves
// progress and returns without finishing, so the next coordinator resumes the run.
func (c *Coordinator) loop(ctx context.Context, r *run) {
	log := c.log.With(zap.String("run", r.id))
	results, existing, stopResults, err := c.follow(ctx, r.id)
	if err != nil {
		c.fail(ctx, r, "cannot read results: "+err.Error())
		return
	}
	defer stopResults()
	if r.status.GetCurtailed() {
		r.curtailEpochs()
	}

	// Catch up on what is already stored before deciding what to publish.
	for range existing {
		select {
		case m, ok := <-results:
			if !ok {
				c.fail(ctx, r, "results stream closed")
				return
			}
			// Already counted by the coordinator that received it: the results metric counts
			// arrivals, and a restart is not one.
			c.accept(r, m, false)
		case <-ctx.Done():
			return
		}
	}
	// A curtailed run's rows are brought up to date with the results replayed first, so that
	// a settled case's jobs are passed over and the deferred epochs released before the
	// restart go out again.
	var released []int
	if r.curtail {
		released = r.resumeEpochs()
	}
	// Jobs still to publish: ungated ones in plan order, then the serial skills' next jobs
	// and a curtailed run's released epochs. A serial job freed by a result joins gated, so a
	// publish that fails (a stream leader lost mid-run) is retried like any other rather than
	// leaving its skill stalled to the deadline.
	ungated, gated := r.disp.start(int(r.status.GetPublished()), r.passedOver)
	ungated = slices.Clone(ungated)
	gated = append(slices.Clone(gated), released...)
	log.Info("run started", zap.Int("jobs", len(r.plan.Jobs)), zap.Int("to_publish", len(ungated)+len(gated)), zap.Int("results_so_far", existing))

	// The run takes its share of the lane holding what it has in the stream already: the
	// ungated jobs before the published cursor that have no result (a resumed run's). Its
	// gated jobs in flight are in gated, published again (deduplicated) on their credit.
	held := 0
	for _, i := range r.disp.ungated[:r.disp.cursor] {
		if !r.done[i] {
			r.setInFlight(i, true)
			held++
		}
	}
	fd := c.feed.join(r.lane, r.team, held)
	r.mu.Lock()
	r.feed = fd
	r.mu.Unlock()
	defer c.feed.leave(fd)
	c.feed.setReady(fd, len(ungated)+len(gated))
	credit := 0

	deadline := c.deadline(r)
	timer := c.clock.NewTimer(max(deadline.Sub(c.now()), 0))
	defer timer.Stop()
	tick := c.clock.NewTicker(c.cfg.StatusEvery)
	defer tick.Stop()
	dirty := true

	// step waits for one event and handles it; it reports whether the loop is over.
	step := func() bool {
		select {
		case m, ok := <-results:
			if !ok {
				c.fail(ctx, r, "results stream closed")
				return true
			}
			if next := c.onResult(r, m); len(next) > 0 {
				gated = append(gated, next...)
				c.feed.setReady(fd, max(len(ungated)+len(gated)-credit, 0))
			}
			c.withdrawJobs(ctx, r)
			dirty = true
			if reached, reason := r.costCapReached(); reached {
				c.stopAtCostCap(ctx, r, reason)
				return true
			}
			if max := r.spec.GetMaxTokens(); max > 0 {
				// The budget is checked as results arrive, so jobs already running may spend a
				// little more; nothing new is started once it is spent.
				if u := r.builder.Usage(); u.PromptTokens+u.CompletionTokens >= max {
					c.finish(ctx, r, pb.RunState_RUN_STATE_CANCELLED, fmt.Sprintf("the run's token budget is spent: %d of %d tokens", u.PromptTokens+u.CompletionTokens, max))
					return true
				}
			}
		case reason := <-r.cancel:
			c.finish(ctx, r, pb.RunState_RUN_STATE_CANCELLED, reason)
			return true
		case <-fd.wake:
			credit += c.feed.take(fd)
		case <-timer.C():
			c.finish(ctx, r, pb.RunState_RUN_STATE_DEADLINE_EXCEEDED, "run deadline passed at "+deadline.UTC().Format(time.RFC3339))
			return true
		case <-tick.C():
			if dirty {
				c.persist(r, log)
				dirty = false
			}
		case <-ctx.Done():
			c.persist(r, log)
			return true
		}
		return false
	}

	for {
		if r.complete() {
			c.finish(ctx, r, pb.RunState_RUN_STATE_COMPLETED, "")
			return
		}
		if len(ungated)+len(gated) == 0 && credit > 0 {
			// Granted more than is left (a serial skill's next job is not free yet).
			c.feed.unused(fd, credit)
			credit = 0
		}
		if room, capped := r.costRoom(); capped {
			// Under a cost cap the run asks its lane only for what the cap leaves room for,
			// so that slots it could not pay for go to other runs meanwhile.
			c.feed.setReady(fd, max(min(len(ungated)+len(gated), room)-credit, 0))
		}
		if len(ungated)+len(gated) == 0 || credit == 0 {
			if step() {
				return
			}
			continue
		}
		// Jobs to publish and the credit to: first take the results that are ready (a bounded
		// number, so publishing never starves), then publish a chunk, ungated jobs first.
		for i := 0; i < publishChunk && (len(results) > 0 || len(r.cancel) > 0 || ctx.Err() != nil); i++ {
			if step() {
				return
			}
		}
		n := min(credit, publishChunk)
		if room, capped := r.costRoom(); capped {
			// Only as many jobs as the cost cap is expected to pay for go out.
			if room <= 0 {
				if reached, reason := r.costCapReached(); reached {
					c.stopAtCostCap(ctx, r, reason)
					return
				}
				// Held until a result makes room: the credit goes back to the lane.
				c.feed.unused(fd, credit)
				credit = 0
				if step() {
					return
				}
				continue
			}
			n = min(n, room)
		}
		nUngated := min(n, len(ungated))
		nGated := min(n-nUngated, len(gated))
		chunk := append(slices.Clone(ungated[:nUngated]), gated[:nGated]...)
		// A settled case's jobs are withdrawn: never published, their credit given back.
		pub := r.unsettled(chunk)
		if len(pub) > 0 {
			if err := c.publish(ctx, r, pub); err != nil {
				if ctx.Err() != nil {
					c.persist(r, log)
					return
				}
				log.Error("publishing jobs failed; retrying", zap.Error(err))
				clock.Sleep(ctx, c.clock, time.Second)
				continue
			}
		}
		over := 0
		for _, i := range pub {
			// A job whose result came while it was being published again holds nothing.
			if r.setInFlight(i, !r.done[i]); !r.inFlight[i] {
				over++
			}
		}
		c.feed.finished(fd, over)
		c.feed.unused(fd, len(chunk)-len(pub))
		credit -= len(chunk)
		ungated, gated = ungated[nUngated:], gated[nGated:]
		// Ready beyond the credit still held (more than a chunk's worth may have been granted).
		c.feed.setReady(fd, max(len(ungated)+len(gated)-credit, 0))
		r.disp.published(nUngated)
		r.mu.Lock()
		r.status.Published = int32(r.disp.publishedCount())
		r.mu.Unlock()
		dirty = true
	}
}

// finalSections adds to a finished run's report what the run, not its results, knows: where
// its comparisons stopped, and that a cost cap cut it short. st is its final status.
func (r *run) finalSections(st *pb.RunStatus, rep *report.Report) {
	rep.Sequential = r.sequentialResults()
	if st.GetCostCapped() {
		rep.Partial = &report.Partial{Reason: st.GetReason(), Spent: st.GetSpent(), MaxCost: r.spec.GetMaxCost()}
	}
}

func (c *Coordinator) deadline(r *run) time.Time {
	d := time.Duration(r.spec.GetDeadlineMs()) * time.Millisecond
	if d <= 0 {
		d = c.cfg.DefaultDeadline
	}
	return r.spec.GetCreatedAt().AsTime().Add(d)
}

// onResult aggregates one result and returns the jobs it frees for the run loop to publish:
// the next job of a serial skill, and a curtailed run's epochs its case now calls for.
func (c *Coordinator) onResult(r *run, m queue.ResultMsg) []int {
	idx, ok := c.accept(r, m, true)
	if !ok {
		return nil
	}
	if r.inFlight[idx] {
		r.setInFlight(idx, false)
		c.feed.finished(r.feed, 1)
	}
	var out []int
	if r.curtail {
		out = r.onEpoch(idx)
	}
	if next, ok := r.disp.finished(idx, r.passedOver); ok {
		out = append(out, next)
	}
	return out
}

// accept decodes a result and adds it to the run once; count says whether it is a new arrival
// for the results metric (false for results replayed from the stream). Every result counts
// towards what the run holds of the results stream, counted or not.
func (c *Coordinator) accept(r *run, m queue.ResultMsg, count bool) (int, bool) {
	outcome := func(o string) {
		if count {
			c.metrics.results.WithLabelValues(o).Inc()
		}
	}
	c.holds(r, m.Bytes, 0)
	data := m.Data
	res := &pb.Result{}
	if err := proto.Unmarshal(data, res); err != nil {
		outcome("malformed")
		c.log.Error("unreadable result ignored", zap.String("run", r.id), zap.Error(err))
		return 0, false
	}
	idx, known := r.jobOf(res.GetJobId(), res.GetSkill(), res.GetCaseName())
	if !known || res.GetRunId() != r.id {
		outcome("unknown")
		c.log.Warn("result for a job not in the plan ignored", zap.String("run", r.id), zap.String("job", res.GetJobId()))
		return 0, false
	}
	if !(r.legacy && !count) && !r.secrets().valid(res.GetJobId(), res.GetSecret()) {
		// Not the worker that received the job (nor the coordinator): a forgery, or a worker
		// too old to copy the secret. Refused without a trace in the report, so the job's
		// real result still counts.
		outcome("forged")
		c.log.Warn("result without the job's secret refused", zap.String("run", r.id), zap.String("job", res.GetJobId()),
			zap.Int32("attempt", res.GetAttempt()), zap.String("worker", res.GetWorkerId()), zap.Bool("secret_present", len(res.GetSecret()) > 0))
		return 0, false
	}
	res.Secret = nil
	c.holds(r, 0, apartBytes(res))
	if planned(r.plan.Jobs[idx], res) {
		// The secret proves the sender got this job, not that the result speaks of it: a
		// worker's result naming another case, agent, arm or epoch of the run would be
		// credited to it. Identity comes from the job.
		c.log.Warn("a result naming another case than its job's: counted for its job", zap.String("run", r.id), zap.String("job", res.GetJobId()),
			zap.String("worker", res.GetWorkerId()))
	}
	if demoteUnprovenReuse(r.key, res) {
		c.log.Warn("a reuse the coordinator did not offer counted as errored", zap.String("run", r.id), zap.String("job", res.GetJobId()),
			zap.String("worker", res.GetWorkerId()), zap.String("reused_from", res.GetReusedFrom()))
	}
	res.ReuseProof = nil
	if r.withdrawnSkip(idx, res) {
		// Withdrawn and skipped by its worker: never run, so not an epoch of the case.
		outcome("withdrawn")
		r.done[idx] = true
		if r.inFlight[idx] {
			r.setInFlight(idx, false)
			if r.feed != nil {
				c.feed.finished(r.feed, 1)
			}
		}
		return 0, false
	}
	// Served on request (Trajectory, AcceptedResults), not with every event: they can be tens
	// of kilobytes. The output files stay listed.
	res.Trajectory, res.OutputsStored = nil, nil
	for _, f := range res.GetOutputs() {
		f.Content = nil
	}
	if !r.builder.Add(res) {
		outcome("duplicate")
		return 0, false
	}
	outcome("accepted")
	r.done[idx] = true
	if !r.readOnly {
		r.records.add(r.plan, r.catalog, idx, res)
	}
	r.noteMisfiled(idx, m)
	r.events.result(res, c.now())
	if !r.readOnly {
		// Without r.mu: Record waits while the history's queue is full, and the run's status
		// must still answer meanwhile. r.status is only ever changed on this goroutine, the
		// run loop's, so reading it here needs no lock.
		c.history.Record(res, r.status)
	}
	return idx, true
}

// publish sends jobs by plan index and waits until the server has stored them all.
func (c *Coordinator) publish(ctx context.Context, r *run, idx []int) error {
	now := timestamppb.New(c.now())
	msgs := make([]*pb.Job, len(idx))
	for k, i := range idx {
		msg, err := jobMessage(r.spec, r.plan, r.catalog, r.plan.Jobs[i], c.cfg.MaxAttempts, now)
		if err != nil {
			return err
		}
		msgs[k] = msg
	}
	if r.spec.GetChangedOnly() {
		c.offerReuse(ctx, r, idx, msgs)
	}
	secrets := r.secrets()
	for _, msg := range msgs {
		msg.Secret = secrets.of(msg.GetId())
		data, err := proto.Marshal(msg)
		if err != nil {
			return err
		}
		if err := c.pub.Publish(ctx, r.lane, r.id, msg.GetId(), data); err != nil {
			return err
		}
	}
	if err := c.pub.Wait(ctx, r.id); err != nil {
		return err
	}
	c.metrics.published.Add(float64(len(idx)))
	return nil
}

// persist saves progress (published cursor, counts) with a fresh short context, so progress
// is kept even while the coordinator is shutting down.
func (c *Coordinator) persist(r *run, log *zap.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.base), 5*time.Second)
	defer cancel()
	st := r.snapshot()
	if err := c.save(ctx, st, r.key); err != nil {
		log.Warn("saving run progress failed", zap.Error(err))
		return
	}
	r.events.status(st, c.now())
}

// finish ends a run in a final state. Runs that end early have their queued jobs removed and
// their unfinished cases closed, so the report never shows a case as passed that did not run.
func (c *Coordinator) finish(ctx context.Context, r *run, state pb.RunState, reason string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	// A curtailed run completes with the jobs of its settled cases that were queued or
	// running still out: they are withdrawn like a cancelled run's.
	if state != pb.RunState_RUN_STATE_COMPLETED || !r.builder.Done() {
		if err := c.queue.PurgeRunJobs(ctx, r.id); err != nil {
			c.log.Error("removing queued jobs failed", zap.String("run", r.id), zap.Error(err))
		}
		// Jobs already in a sandbox would otherwise run on to their timeouts.
		if err := c.queue.NotifyCancelled(ctx, r.id); err != nil {
			c.log.Error("telling workers to stop the run's jobs failed", zap.String("run", r.id), zap.Error(err))
		}
	}
	if state != pb.RunState_RUN_STATE_COMPLETED {
		r.builder.Skip(reason)
	}
	r.mu.Lock()
	st := proto.Clone(r.status).(*pb.RunStatus)
	r.countWithdrawnLocked(st)
	r.mu.Unlock()
	st.State, st.Reason = state, reason
	st.Spent = r.builder.Usage().Cost
	st.Cases, st.DoneJobs = r.builder.Counts(), int32(r.builder.JobsDone())
	st.FinishedAt = timestamppb.New(c.now())
	// The report is stored before the final state: a run saved as finished has its report
	// stored (unless storing failed: it is then rebuilt from the results, as it always was).
	rep := r.builder.Report()
	r.finalSections(st, &rep)
	c.annotate(ctx, st, &rep)
	r.mu.Lock()
	st.ResultBytes, st.ArtifactBytes = r.resultBytes, r.artifactBytes
	st.Misfiled, st.MisfiledOverflow = r.status.GetMisfiled(), r.status.GetMisfiledOverflow()
	r.mu.Unlock()
	// The records are stored while the report is: the run reads as finished only once both
	// are (or failed to be).
	type kept struct {
		ok   bool
		took time.Duration
	}
	recordsKept := make(chan kept, 1)
	go func() {
		start := c.now()
		ok := c.keepRecords(ctx, r)
		recordsKept <- kept{ok, c.now().Sub(start)}
	}()
	reportStart := c.now()
	for attempt := 0; ; attempt++ {
		err := c.storeReport(ctx, r.id, rep)
		if err == nil {
			st.ReportStored = true
			break
		}
		if attempt == 2 || errors.Is(err, context.DeadlineExceeded) {
			c.log.Error("storing the final report failed; it will be rebuilt from the results stream while it holds them", zap.String("run", r.id), zap.Error(err))
			break
		}
		clock.Sleep(ctx, c.clock, 200*time.Millisecond)
	}
	reportTook := c.now().Sub(reportStart)
	records := <-recordsKept
	st.RecordsStored = records.ok
	for attempt := 0; ; attempt++ {
		err := c.save(ctx, st, r.key)
		if err == nil {
			break
		}
		if attempt == 5 || errors.Is(err, context.DeadlineExceeded) {
			c.log.Error("saving the final run state failed; it will be resumed and finished again", zap.String("run", r.id), zap.Error(err))
			break
		}
		clock.Sleep(ctx, c.clock, 200*time.Millisecond)
	}
	c.finished.put(r.id, rep)
	// Only now does the run read as finished: a report asked for once the status says so is
	// the final one, with what changed and the flaky and quarantine marks, not the live one.
	r.mu.Lock()
	r.status = proto.Clone(st).(*pb.RunStatus)
	r.mu.Unlock()
	c.history.RunFinished(st)
	// Its results are kept from now on: evictable once its report is stored.
	c.runFinished(r, st.GetFinishedAt().AsTime(), st.GetReportStored())
	c.askEvict()
	c.metrics.finished(st, c.now().Sub(r.spec.GetCreatedAt().AsTime()))
	r.events.status(st, c.now())
	r.events.close()
	c.mu.Lock()
	delete(c.runs, r.id)
	c.mu.Unlock()
	close(r.finished)
	c.log.Info("run finished", zap.String("run", r.id), zap.String("state", st.GetState().String()),
		zap.Int32("passed", st.GetCases().GetPassed()), zap.Int32("failed", st.GetCases().GetFailed()),
		zap.Int32("errored", st.GetCases().GetErrored()), zap.Int32("timed_out", st.GetCases().GetTimedOut()),
		zap.Duration("finishing", c.now().Sub(st.GetFinishedAt().AsTime())), zap.Duration("report_stored_in", reportTook),
		zap.Duration("records_stored_in", records.took))
}

// fail ends a run that cannot go on at all.
func (c *Coordinator) fail(ctx context.Context, r *run, reason string) {
	if ctx.Err() != nil {
		return // shutting down: the next coordinator tries again
	}
	c.finish(ctx, r, pb.RunState_RUN_STATE_FAILED, reason)
}

// follow streams a run's results from the first one stored, until stop is called; backlog is
// how many were stored when it started.
func (c *Coordinator) follow(ctx context.Context, id string) (<-chan queue.ResultMsg, int, func(), error) {
	it, err := c.queue.FollowResults(ctx, id)
	if err != nil {
		return nil, 0, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	out := make(chan queue.ResultMsg, 256)
	go func() {
		defer close(out)
		reopened := 0
		for {
			m, err := it.Next(ctx)
			if err != nil {
				if ctx.Err() == nil && !errors.Is(err, queue.ErrStopped) {
					c.log.Warn("results iterator ended", zap.String("run", id), zap.Error(err))
				}
				return
			}
			if n, cause := it.Reopened(); n > reopened {
				reopened = n
				c.log.Warn("the run's results had stopped arriving (a NATS node or leader lost); followed again from the last one received",
					zap.String("run", id), zap.Int("times", n), zap.Error(cause))
			}
			select {
			case out <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, int(it.Backlog()), func() { cancel(); it.Stop() }, nil
}

// planned sets a result's identity (skill, case, agent, arm, epoch, kind) to its planned job's
// and reports whether the result had named another.
func planned(j suite.Job, res *pb.Result) (differed bool) {
	arm := ""
	if j.Arm != suite.ArmWithSkill {
		arm = string(j.Arm)
	}
	kind := pb.CaseKind_CASE_KIND_COMMAND
	if j.Case.Kind == suite.KindPrompt {
		kind = pb.CaseKind_CASE_KIND_PROMPT
	}
	differed = res.GetSkill() != j.Case.Skill.Name || res.GetCaseName() != j.Case.Name || res.GetAgent() != j.Agent ||
		normArm(res.GetArm()) != arm || res.GetEpoch() != int32(j.Epoch) || res.GetKind() != kind
	res.Skill, res.CaseName, res.Agent, res.Arm, res.Epoch, res.Kind = j.Case.Skill.Name, j.Case.Name, j.Agent, arm, int32(j.Epoch), kind
	return differed
}

// normArm is a result's arm as a job carries it: "" for with_skill.
func normArm(a string) string {
	if a == string(suite.ArmWithSkill) {
		return ""
	}
	return a
}
