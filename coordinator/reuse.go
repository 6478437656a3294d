package coordinator

import (
	"context"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/skillfleet/skillfleet/internal/tenant"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
)

// DefaultReuseWithin is how far back a changed-only run looks for a passing run to reuse when
// it names no window: a cell unchanged for longer runs again, so nothing goes unexercised for
// more than a week.
const DefaultReuseWithin = 7 * 24 * time.Hour

// offerReuse looks up the cells of a chunk of a changed-only run's jobs (msgs, the jobs of plan
// indexes idx) that a recent run passed, and offers their reuse to the jobs: the worker
// reports a job reused only if the cell digest it computes with its own agent configuration
// equals the offered one, and runs it otherwise. A failed lookup offers nothing (the cells
// run) and is retried with the next chunk.
func (c *Coordinator) offerReuse(ctx context.Context, r *run, idx []int, msgs []*pb.Job) {
	if c.reuse == nil {
		return
	}
	if r.reuse == nil {
		r.reuse = make(map[string]*pb.Reuse)
	}
	epochs := make(map[string]int)
	for k, m := range msgs {
		if _, seen := r.reuse[m.GetCellKey()]; !seen && m.GetCellKey() != "" {
			epochs[m.GetCellKey()] = report.NormalizeEpochs(r.plan.Jobs[idx[k]].Case.Runs)
		}
	}
	if len(epochs) > 0 {
		within := time.Duration(r.spec.GetReuseWithinMs()) * time.Millisecond
		if within <= 0 {
			within = DefaultReuseWithin
		}
		found, err := c.reuse.Reusable(ctx, tenant.Team(r.spec.GetTeam()), r.spec.GetName(), c.now().Add(-within), r.id, epochs)
		if err != nil {
			c.log.Warn("looking up reusable cells failed; they run", zap.String("run", r.id), zap.Int("cells", len(epochs)), zap.Error(err))
			return
		}
		for k := range epochs {
			var o *pb.Reuse
			if f, ok := found[k]; ok {
				o = &pb.Reuse{SourceRun: f.Run, CellDigest: f.CellDigest, SourceFinishedAt: timestamppb.New(f.FinishedAt)}
			}
			r.reuse[k] = o
		}
	}
	for _, m := range msgs {
		if o := r.reuse[m.GetCellKey()]; o != nil {
			m.Reuse = &pb.Reuse{SourceRun: o.GetSourceRun(), CellDigest: o.GetCellDigest(), SourceFinishedAt: o.GetSourceFinishedAt(),
				Proof: reuseProof(r.key, m.GetId(), o.GetSourceRun(), o.GetCellDigest())}
		}
	}
}

// CellKeys are the cell keys of a plan's jobs, by job index, as a run with spec would give
// them (its agents, arm and limits): for `plan --changed-only`, which shows what a
// changed-only run would reuse without starting one. skills are the skills of the bundle the
// run would upload (the plan's, with their closures), whose SKILL.md files a prompt job's key
// covers, as a coordinator's does.
func CellKeys(spec *pb.RunSpec, p *suite.Plan, skills []*skill.Skill) ([]string, error) {
	cat, err := catalogOf(skills, p.Old)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(p.Jobs))
	for i, j := range p.Jobs {
		m, err := jobMessage(spec, p, cat, j, 1, nil)
		if err != nil {
			return nil, err
		}
		out[i] = m.GetCellKey()
	}
	return out, nil
}
