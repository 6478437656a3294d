package coordinator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/comparison"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/suite"
)

// A run's records are what a comparison reads of each result its report counts
// (comparison.Record): identity, verdict, tokens, cost, duration and the configuration the
// check compares. Read from the results stream, comparing two runs of a million jobs meant
// decoding two million results (7 min 27 s, issue 30). So the run loop keeps each counted
// result's record as it counts it, in a few bytes a job, and when the run finishes they are
// stored once, encoded by package comparison, beside the final report; GET
// /v1/runs/{id}/records serves them. Only results the report counts are kept, under their
// job's identity, as every view files them.

var (
	// ErrNoRecords is a finished run without stored records: finished before coordinators
	// kept them, or storing them failed. Its results are still read from the stream.
	ErrNoRecords = errors.New("no stored records (the run finished before this coordinator kept them, or storing them failed): read its results instead")
	// ErrNotFinished is a run whose records are not stored yet: they are when it finishes.
	ErrNotFinished = errors.New("the run has not finished: its records are stored when it does")
)

// runRecords holds a run's records in columns indexed by plan job, 21 bytes a job: the
// identity is the job's, the configuration (model, judge, case digest) is kept once per case
// and shared by its epochs, and the numbers fit 32 bits but for a worker that sends values
// out of range, kept whole in wide.
type runRecords struct {
	// conf is 1 + the job's configuration's index in confs; 0 for a job without a counted
	// result.
	conf []uint32
	// verdict is the job's verdict; wideVerdict sends the reader to wide.
	verdict []uint8
	tokens  []uint32
	durMS   []uint32
	cost    []float64
	wide    map[int32]wideRecord
	confs   []recordConf
	// names interns the models and judges, the few strings every case repeats.
	names map[string]string
}

// wideVerdict marks a job whose verdict, tokens or duration did not fit its column.
const wideVerdict = math.MaxUint8

// recordConf is what the configuration check compares of a result.
type recordConf struct{ model, judgeModel, judgePrompt, digest string }

// wideRecord is a record's numbers that do not fit the columns.
type wideRecord struct {
	verdict       pb.Verdict
	tokens, durMS int64
}

// add keeps the record of res, the counted result of plan job idx (its identity already the
// job's). The columns are made at the first: a run rebuilt only to read its report keeps none.
// The case's digest, which the job carried, is the catalog's string when it is the same.
func (rr *runRecords) add(plan *suite.Plan, cat *jobCatalog, idx int, res *pb.Result) {
	if rr.conf == nil {
		n := len(plan.Jobs)
		rr.conf, rr.verdict = make([]uint32, n), make([]uint8, n)
		rr.tokens, rr.durMS, rr.cost = make([]uint32, n), make([]uint32, n), make([]float64, n)
		rr.names = map[string]string{}
	}
	u := res.GetUsage()
	tokens, dur, v := u.GetPromptTokens()+u.GetCompletionTokens(), res.GetTimings().GetTotalMs(), res.GetVerdict()
	if v < 0 || v >= wideVerdict || tokens < 0 || tokens > math.MaxUint32 || dur < 0 || dur > math.MaxUint32 {
		if rr.wide == nil {
			rr.wide = map[int32]wideRecord{}
		}
		rr.wide[int32(idx)] = wideRecord{verdict: v, tokens: tokens, durMS: dur}
		rr.verdict[idx] = wideVerdict
	} else {
		rr.verdict[idx], rr.tokens[idx], rr.durMS[idx] = uint8(v), uint32(tokens), uint32(dur)
	}
	rr.cost[idx] = u.GetCost()
	digest := res.GetCaseDigest()
	if d, ok := cat.cases.Load(plan.Jobs[idx].Case); ok && d.(string) == digest {
		digest = d.(string)
	}
	rr.conf[idx] = rr.confOf(plan, idx, recordConf{res.GetModel(), res.GetJudgeModel(), res.GetJudgePrompt(), digest}) + 1
}

// confOf returns the index of c among the configurations of job idx's case (its jobs are
// adjacent in the plan), adding it if none of them has it.
func (rr *runRecords) confOf(plan *suite.Plan, idx int, c recordConf) uint32 {
	cs := plan.Jobs[idx].Case
	first, last := idx, idx
	for first > 0 && plan.Jobs[first-1].Case == cs {
		first--
	}
	for last+1 < len(plan.Jobs) && plan.Jobs[last+1].Case == cs {
		last++
	}
	for k := first; k <= last; k++ {
		if i := rr.conf[k]; i != 0 && k != idx && rr.confs[i-1] == c {
			return i - 1
		}
	}
	in := func(s string) string {
		if v, ok := rr.names[s]; ok {
			return v
		}
		rr.names[s] = s
		return s
	}
	// The digest is the case's own, unlike the models and judges: not interned (add shares the
	// catalog's).
	rr.confs = append(rr.confs, recordConf{in(c.model), in(c.judgeModel), in(c.judgePrompt), c.digest})
	return uint32(len(rr.confs) - 1)
}

// recordsGroupKey is what splits a case's records into groups: agent, arm and configuration.
type recordsGroupKey struct {
	agent string
	arm   string
	conf  uint32
}

// eachGroup calls fn with each group of the records kept, case by case in plan order, its
// jobs in plan order (epochs ascending).
func (rr *runRecords) eachGroup(plan *suite.Plan, fn func(k recordsGroupKey, jobs []int) error) error {
	var keys []recordsGroupKey
	var members [][]int
	for start := 0; start < len(plan.Jobs); {
		end := start + 1
		for end < len(plan.Jobs) && plan.Jobs[end].Case == plan.Jobs[start].Case {
			end++
		}
		keys = keys[:0]
		for i := range members {
			members[i] = members[i][:0]
		}
		for j := start; j < end && rr.conf != nil; j++ {
			if rr.conf[j] == 0 {
				continue
			}
			k := recordsGroupKey{agent: plan.Jobs[j].Agent, arm: normArm(string(plan.Jobs[j].Arm)), conf: rr.conf[j] - 1}
			g := 0
			for g < len(keys) && keys[g] != k {
				g++
			}
			if g == len(keys) {
				keys = append(keys, k)
				if g == len(members) {
					members = append(members, nil)
				}
			}
			members[g] = append(members[g], j)
		}
		for g, k := range keys {
			if err := fn(k, members[g]); err != nil {
				return err
			}
		}
		start = end
	}
	return nil
}

// encode writes the records kept in package comparison's encoding.
func (rr *runRecords) encode(w io.Writer, plan *suite.Plan) error {
	var arms []comparison.RecordsArm
	armIndex := map[string]int{}
	_ = rr.eachGroup(plan, func(k recordsGroupKey, jobs []int) error {
		i, ok := armIndex[k.arm]
		if !ok {
			i = len(arms)
			armIndex[k.arm] = i
			arms = append(arms, comparison.RecordsArm{Arm: k.arm})
		}
		arms[i].Groups++
		arms[i].Records += len(jobs)
		return nil
	})
	rw, err := comparison.NewRecordsWriter(w, arms)
	if err != nil {
		return err
	}
	var epochs []comparison.EpochRecord
	err = rr.eachGroup(plan, func(k recordsGroupKey, jobs []int) error {
		epochs = epochs[:0]
		for _, j := range jobs {
			e := comparison.EpochRecord{Epoch: int32(plan.Jobs[j].Epoch), Verdict: pb.Verdict(rr.verdict[j]),
				Tokens: int64(rr.tokens[j]), Cost: rr.cost[j], DurationMS: int64(rr.durMS[j])}
			if rr.verdict[j] == wideVerdict {
				wr := rr.wide[int32(j)]
				e.Verdict, e.Tokens, e.DurationMS = wr.verdict, wr.tokens, wr.durMS
			}
			epochs = append(epochs, e)
		}
		c := rr.confs[k.conf]
		job := plan.Jobs[jobs[0]]
		return rw.Write(&comparison.RecordGroup{
			Arm: k.arm, Skill: job.Case.Skill.Name, Case: job.Case.Name, Agent: k.agent,
			Model: c.model, JudgeModel: c.judgeModel, JudgePrompt: c.judgePrompt, Digest: c.digest,
			Epochs: epochs,
		})
	})
	if err != nil {
		return err
	}
	return rw.Close()
}

// storeRecords stores a finished run's records beside its report, encoded as the store reads
// them: never whole in memory.
func (c *Coordinator) storeRecords(ctx context.Context, r *run) error {
	pr, pw := io.Pipe()
	encoded := make(chan error, 1)
	go func() {
		err := r.records.encode(pw, r.plan)
		_ = pw.CloseWithError(err)
		encoded <- err
	}()
	err := c.queue.PutRecords(ctx, r.id, pr)
	// A store that gave up leaves the encoder blocked on the pipe: this ends it.
	_ = pr.CloseWithError(errors.New("the store stopped reading"))
	if encErr := <-encoded; encErr != nil && err == nil {
		err = encErr
	}
	if err != nil {
		return fmt.Errorf("store the records of run %s: %w", r.id, err)
	}
	return nil
}

// keepRecords stores a finishing run's records and says whether they were stored; a failure
// is logged, and comparisons of the run read its results instead.
func (c *Coordinator) keepRecords(ctx context.Context, r *run) bool {
	if r.readOnly {
		return false
	}
	if err := c.storeRecords(ctx, r); err != nil {
		c.log.Warn("storing the run's records failed; comparisons will read its results", zap.String("run", r.id), zap.Error(err))
		return false
	}
	return true
}

// Records opens the records of finished run id for the caller of ctx, with their size in
// bytes: ErrNotFound for a run it may not read, ErrNotFinished for a run still going,
// ErrNoRecords for one that has none. The caller closes what it gets.
func (c *Coordinator) Records(ctx context.Context, id string) (io.ReadCloser, int64, error) {
	st, err := c.Status(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	if !isFinal(st.GetState()) {
		return nil, 0, fmt.Errorf("run %s: %w", id, ErrNotFinished)
	}
	if !st.GetRecordsStored() {
		return nil, 0, fmt.Errorf("run %s: %w", id, ErrNoRecords)
	}
	rc, size, err := c.queue.OpenRecords(ctx, id)
	if errors.Is(err, queue.ErrNotFound) {
		return nil, 0, fmt.Errorf("run %s: %w", id, ErrNoRecords)
	}
	return rc, size, err
}
