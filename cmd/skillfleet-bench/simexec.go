package main

import (
	"context"
	"encoding/binary"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skillfleet/skillfleet/assert"
	"github.com/skillfleet/skillfleet/assert/assertpb"
	"github.com/skillfleet/skillfleet/atif"
	"github.com/skillfleet/skillfleet/internal/clock"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/worker"
)

// simExecConfig is what a simulated job does.
type simExecConfig struct {
	// JobTime is how long each job takes, on the executor's clock.
	JobTime time.Duration
	// OutputBytes is the size of each job's stdout (the worker keeps at most 64 KiB of it in
	// the result, as it does of a real job's).
	OutputBytes int
	// FailRate is the share of jobs whose command exits 1; which ones is decided by Seed and
	// the job's run and id, so a redelivered job fails again.
	FailRate float64
	Seed     uint64
	// Track keeps the run and job id of every job made to fail, for a check of the report.
	Track bool
}

// simExecutor is the fleet simulator's worker.Executor: no sandbox and no model. A job waits
// JobTime, "exits" 0 (or 1, for FailRate of them) with OutputBytes of stdout, and its own
// compiled assertions decide it (worker.Decide), so a pass is one its assertion results back
// and the coordinator counts it as a pass, as it would a real one.
type simExecutor struct {
	cfg          simExecConfig
	clock        clock.Clock
	output       string
	trajectories worker.TrajectoryEncoder

	busy prometheus.Gauge
	jobs *prometheus.CounterVec

	mu sync.Mutex
	// byVerdict counts executions (a redelivered job twice); failed is the set of jobs made to
	// fail (when Track), keyed run/job.
	byVerdict map[pb.Verdict]int
	made      int // executions made to fail
	failed    map[string]struct{}
	// first and last are when the first job started and the last one ended.
	first, last time.Time
}

// newSimExecutor registers the simulator's metrics on reg (nil: none).
func newSimExecutor(cfg simExecConfig, c clock.Clock, reg prometheus.Registerer) (*simExecutor, error) {
	e := &simExecutor{
		cfg: cfg, clock: c, output: filler(cfg.OutputBytes),
		busy: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "skillfleet_fleetsim_busy_slots", Help: "Slots of the simulated workers running a job now.",
		}),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillfleet_fleetsim_jobs_total", Help: "Jobs the simulated workers ran, by the verdict their assertions gave.",
		}, []string{"verdict"}),
		byVerdict: make(map[pb.Verdict]int),
		failed:    make(map[string]struct{}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{e.busy, e.jobs} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return e, nil
}

// filler is n bytes of lines of text, the stdout of a simulated job.
func filler(n int) string {
	const line = "skillfleet fleet simulator: simulated output of a job, one line.\n"
	return strings.Repeat(line, n/len(line)+1)[:n]
}

// promptAnswer is what a simulated agent answers: READY, which the generated prompt cases ask
// for (suitetest.GenerateRuns), or for a job made to fail, something else.
func promptAnswer(fail bool) string {
	if fail {
		return "made to fail by the fleet simulator"
	}
	return "READY (the fleet simulator's answer)"
}

// Execute runs one simulated job. Only the end of ctx (a drain's grace over, a cancelled run)
// is an error, as a sandbox killed mid-job is.
func (e *simExecutor) Execute(ctx context.Context, job *pb.Job, _ string) (*pb.Result, error) {
	e.busy.Inc()
	defer e.busy.Dec()
	e.started()
	if e.cfg.JobTime > 0 && !clock.Sleep(ctx, e.clock, e.cfg.JobTime) {
		return nil, ctx.Err()
	}
	out := &pb.Result{Kind: job.GetKind(), Timings: &pb.Timings{ExecutionMs: e.cfg.JobTime.Milliseconds()}}
	assertions, err := assertpb.DecodeAll(job.GetAssertions())
	if err != nil {
		out.Verdict, out.Reason = pb.Verdict_VERDICT_ERRORED, "the job's assertions cannot be used: "+err.Error()
		e.record(job, false, out.Verdict)
		return out, nil
	}
	fail := e.fails(job)
	exit := 0
	if fail {
		exit = 1
	}
	out.Stdout, out.ExitCode = e.output, int32(exit)
	if job.GetKind() == pb.CaseKind_CASE_KIND_PROMPT {
		out.Output = promptAnswer(fail)
		// What a trajectory route and a case page read back, as the worker encodes it.
		tr := &atif.Trajectory{SchemaVersion: atif.SchemaVersion, Agent: atif.Agent{Name: "fleet-simulator", Version: "1"}}
		tr.Add(atif.SourceUser, job.GetInput())
		tr.Add(atif.SourceAgent, out.Output)
		tr.Finish()
		out.Trajectory = e.trajectories.Encode(tr, job)
	}
	worker.Decide(ctx, out, assertions, assert.Observation{Output: out.Output, Stdout: out.Stdout, ExitCode: exit})
	e.record(job, fail, out.Verdict)
	return out, nil
}

// fails decides, from the seed and the job's identity alone, whether the job's command exits 1.
func (e *simExecutor) fails(job *pb.Job) bool {
	if e.cfg.FailRate <= 0 {
		return false
	}
	h := fnv.New64a()
	var seed [8]byte
	binary.LittleEndian.PutUint64(seed[:], e.cfg.Seed)
	_, _ = h.Write(seed[:])
	_, _ = h.Write([]byte(job.GetRunId()))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(job.GetId()))
	// splitmix64's finaliser: FNV's low bits alone are not uniform enough for a threshold.
	x := h.Sum64()
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11)/(1<<53) < e.cfg.FailRate
}

func (e *simExecutor) started() {
	now := e.clock.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.first.IsZero() {
		e.first = now
	}
}

func (e *simExecutor) record(job *pb.Job, fail bool, v pb.Verdict) {
	e.jobs.WithLabelValues(verdictLabel(v)).Inc()
	now := e.clock.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.last = now
	e.byVerdict[v]++
	if fail {
		e.made++
		if e.cfg.Track {
			e.failed[job.GetRunId()+"/"+job.GetId()] = struct{}{}
		}
	}
}

// simCounts is what the simulated workers ran so far.
type simCounts struct {
	// Executions counts every job run (a redelivered job twice), Made those made to fail.
	Executions, Made int
	ByVerdict        map[pb.Verdict]int
	// Span is from the first job's start to the last one's end.
	Span time.Duration
}

func (e *simExecutor) counts() simCounts {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := simCounts{Made: e.made, ByVerdict: make(map[pb.Verdict]int, len(e.byVerdict)), Span: e.last.Sub(e.first)}
	for v, n := range e.byVerdict {
		c.ByVerdict[v] = n
		c.Executions += n
	}
	return c
}

// span is when the first job started and the last one ended, on the executor's clock.
func (e *simExecutor) span() (first, last time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.first, e.last
}

// madeToFail reports whether the job was made to fail (Track only).
func (e *simExecutor) madeToFail(run, job string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.failed[run+"/"+job]
	return ok
}

// failedJobs is how many distinct jobs of run were made to fail (Track only).
func (e *simExecutor) failedJobs(run string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for k := range e.failed {
		if strings.HasPrefix(k, run+"/") {
			n++
		}
	}
	return n
}

// verdictLabel is a verdict as the worker's metrics name it: "passed", "failed", ...
func verdictLabel(v pb.Verdict) string {
	return strings.ToLower(strings.TrimPrefix(v.String(), "VERDICT_"))
}
