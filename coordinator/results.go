package coordinator

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/report"
	"github.com/skillfleet/skillfleet/suite"
)

// The reads of a run's results: every view of a result (the API's results and trajectory, the
// viewer's case page and HTML report, exports and comparisons) takes the result the report
// counts for each job — the first stored with the job's secret — and files it where the report
// does, under its job's identity, whatever the result itself names. A case's results are read
// from its own subject (queue.CaseResultSubject) and the few a worker filed elsewhere, so a
// case page costs the case, never the run.

// runReads is what reading one run's results needs: its job key, its status (the misfiled
// results, whether they were evicted) and, for an active run, its plan.
type runReads struct {
	c      *Coordinator
	id     string
	key    []byte
	status *pb.RunStatus
	// active is the run while it goes (its plan names every job); nil once it finished.
	active *run
	// idents are the identities of the run's jobs, read from its report when a result is
	// found naming another than its job's (a lying or broken worker); nil until needed.
	idents map[string]jobIdentity
}

// jobIdentity is what identifies a job in a report: its case row and epoch.
type jobIdentity struct {
	skill, caseName, agent, arm string
	kind                        pb.CaseKind
	epoch                       int32
}

// reads opens run id's results for the caller of ctx, or says why not: ErrNotFound for a run
// it may not read, ErrEvicted for a finished run whose results left the streams.
func (c *Coordinator) reads(ctx context.Context, id string) (*runReads, error) {
	st, err := c.load(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := readable(ctx, st.GetSpec().GetTeam()); err != nil {
		return nil, err
	}
	rr := &runReads{c: c, id: id, key: st.GetJobKey(), status: st}
	if r := c.active(id); r != nil {
		rr.active = r
		r.mu.Lock()
		rr.status = proto.Clone(r.status).(*pb.RunStatus)
		r.mu.Unlock()
		rr.key = r.key
	}
	if st.GetResultsEvictedAt() != nil {
		return nil, fmt.Errorf("run %s: %w", id, ErrEvicted)
	}
	return rr, nil
}

// AcceptedResults calls fn with each result of the run that its report counts, in stored
// order, filed under its job's identity. Their documents are as stored (see Document).
func (c *Coordinator) AcceptedResults(ctx context.Context, id string, fn func(*pb.Result) error) error {
	rr, err := c.reads(ctx, id)
	if err != nil {
		return err
	}
	results, n, stop, err := c.follow(ctx, id)
	if err != nil {
		return err
	}
	defer stop()
	seen := map[string]bool{}
	for range n {
		var m queue.ResultMsg
		select {
		case got, ok := <-results:
			if !ok {
				return fmt.Errorf("results of run %s ended early", id)
			}
			m = got
		case <-ctx.Done():
			return ctx.Err()
		}
		res, ok := rr.counted(ctx, m, seen)
		if !ok {
			continue
		}
		if err := fn(res); err != nil {
			return err
		}
	}
	return nil
}

// CaseResults calls fn with each result of one case of run id (every agent and arm of it)
// that the report counts, in stored order, filed under its job's identity: the results
// stored under the case's result key and those a worker filed under another.
func (c *Coordinator) CaseResults(ctx context.Context, id, skill, caseName string, fn func(*pb.Result) error) error {
	rr, err := c.reads(ctx, id)
	if err != nil {
		return err
	}
	if rr.status.GetMisfiledOverflow() {
		// More misfiled results than the status keeps: only a scan of the run finds them all.
		return c.AcceptedResults(ctx, id, func(res *pb.Result) error {
			if res.GetSkill() != skill || res.GetCaseName() != caseName {
				return nil
			}
			return fn(res)
		})
	}
	key := resultKey(skill, caseName)
	var msgs []queue.ResultMsg
	collect := func(m queue.ResultMsg) error { msgs = append(msgs, m); return nil }
	if err := c.queue.ReadCaseResults(ctx, id, key, collect); err != nil {
		return err
	}
	for _, mf := range rr.status.GetMisfiled() {
		if mf.GetResultKey() != key {
			continue
		}
		m, err := c.queue.GetResult(ctx, id, mf.GetSeq())
		if err != nil {
			// Gone with the run's other results, or never there: nothing to show.
			continue
		}
		msgs = append(msgs, m)
	}
	slices.SortFunc(msgs, func(a, b queue.ResultMsg) int { return int64Compare(a.Seq, b.Seq) })
	seen := map[string]bool{}
	for _, m := range msgs {
		res, ok := rr.counted(ctx, m, seen)
		if !ok || res.GetSkill() != skill || res.GetCaseName() != caseName {
			continue
		}
		if err := fn(res); err != nil {
			return err
		}
	}
	return nil
}

func int64Compare(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// counted decodes m and returns it when it is the result the report counts for its job (the
// first one seen with the job's secret), filed under its job's identity; seen holds the jobs
// already given.
func (rr *runReads) counted(ctx context.Context, m queue.ResultMsg, seen map[string]bool) (*pb.Result, bool) {
	res := &pb.Result{}
	if proto.Unmarshal(m.Data, res) != nil || seen[res.GetJobId()] || res.GetRunId() != rr.id {
		return nil, false
	}
	// A run from before job secrets has no key: its results were accepted as they came.
	if len(rr.key) > 0 && !validSecret(rr.key, res.GetJobId(), res.GetSecret()) {
		return nil, false
	}
	if rr.answeredStop(res) || !rr.identify(ctx, res) {
		return nil, false
	}
	seen[res.GetJobId()] = true
	res.Secret = nil
	demoteUnprovenReuse(rr.key, res)
	res.ReuseProof = nil
	return res, true
}

// answeredStop reports whether res is a worker's answer to being told to stop its job: a
// skipped result of a curtailed run (its case settled and its job withdrawn) or of a run
// that ended early (cancelled, out of time or budget). A worker skips only when told to, and
// the report then never counts it — the case was settled, or the run over, when it came (see
// run.withdrawnSkip, Builder.Skip) — so no view shows it as an epoch, and a comparison reads
// no skipped epoch that never ran. (A worker that skips unasked, while its case is open, is
// counted by the report and left out here: a skipped epoch is no observation either way.)
func (rr *runReads) answeredStop(res *pb.Result) bool {
	if res.GetVerdict() != pb.Verdict_VERDICT_SKIPPED {
		return false
	}
	state := rr.status.GetState()
	return rr.status.GetCurtailed() || (isFinal(state) && state != pb.RunState_RUN_STATE_COMPLETED)
}

// identify sets res's identity to its job's and reports whether the job is one of the run's.
// A result that names its own job is recognised by the job id, which hashes its identity;
// one that names another is looked up in the plan, or once the run has finished, in its
// report.
func (rr *runReads) identify(ctx context.Context, res *pb.Result) bool {
	if claimedID(res) == res.GetJobId() {
		res.Arm = normArm(res.GetArm())
		return true
	}
	if rr.active != nil {
		idx, ok := rr.active.jobOf(res.GetJobId(), res.GetSkill(), res.GetCaseName())
		if ok {
			planned(rr.active.plan.Jobs[idx], res)
		}
		return ok
	}
	if rr.idents == nil {
		rep, err := rr.c.Report(ctx, rr.id)
		if err != nil {
			return false
		}
		rr.idents = jobIdentities(rep)
	}
	id, ok := rr.idents[res.GetJobId()]
	if ok {
		res.Skill, res.CaseName, res.Agent, res.Arm, res.Epoch, res.Kind = id.skill, id.caseName, id.agent, id.arm, id.epoch, id.kind
	}
	return ok
}

// claimedID is the id of the job a result says it answers.
func claimedID(res *pb.Result) string {
	kind := suite.KindCommand
	if res.GetKind() == pb.CaseKind_CASE_KIND_PROMPT {
		kind = suite.KindPrompt
	}
	arm := suite.Arm(normArm(res.GetArm()))
	if arm == "" {
		arm = suite.ArmWithSkill
	}
	return suite.ArmJobID(res.GetSkill(), res.GetCaseName(), kind, int(res.GetEpoch()), res.GetAgent(), arm)
}

// jobIdentities lists every job of a finished run's report by id, from its case rows.
func jobIdentities(rep report.Report) map[string]jobIdentity {
	out := map[string]jobIdentity{}
	for _, cs := range rep.Cases {
		kind, pk := suite.KindCommand, pb.CaseKind_CASE_KIND_COMMAND
		if cs.Kind == "prompt" {
			kind, pk = suite.KindPrompt, pb.CaseKind_CASE_KIND_PROMPT
		}
		arm := suite.Arm(cs.Arm)
		if arm == "" {
			arm = suite.ArmWithSkill
		}
		for e := 1; e <= cs.Epochs; e++ {
			out[suite.ArmJobID(cs.Skill, cs.Case, kind, e, cs.Agent, arm)] = jobIdentity{
				skill: cs.Skill, caseName: cs.Case, agent: cs.Agent, arm: cs.Arm, kind: pk, epoch: int32(e),
			}
		}
	}
	return out
}
