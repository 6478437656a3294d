package worker

import (
	"context"
	"fmt"
	"path"
	"time"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/assert"
	"github.com/skillfleet/skillfleet/assert/assertpb"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/sandbox"
	"github.com/skillfleet/skillfleet/verdict"
)

// SkillsMount is where a job's skills appear inside its sandbox, read-only (see skillMounts).
const SkillsMount = "/skills"

// SandboxExecutor runs jobs in sandboxes: command cases directly, prompt cases through an
// agent (see WithAgents; without one they are errored, never passed).
type SandboxExecutor struct {
	sandboxes Sandboxes
	log       *zap.Logger
	now       func() time.Time
	agents    map[string]AgentSpec
	judge     Judge
	votes     int
	// trajectories encodes the agents' trajectories for the results.
	trajectories TrajectoryEncoder
	// detectors are the activation detectors of recent runs' catalogs.
	detectors detectors
}

// NewSandboxExecutor returns the executor the worker uses in production and in local mode: it
// runs jobs in the pool's Docker sandboxes.
func NewSandboxExecutor(pool Pool, log *zap.Logger) *SandboxExecutor {
	return NewExecutor(Containers(pool), log)
}

// NewExecutor returns an executor that runs jobs in the given sandboxes.
func NewExecutor(sandboxes Sandboxes, log *zap.Logger) *SandboxExecutor {
	if log == nil {
		log = zap.NewNop()
	}
	return &SandboxExecutor{sandboxes: sandboxes, log: log, now: time.Now}
}

// Execute runs one job. Errors are infrastructure failures and are retried by the worker;
// everything the case caused is in the Result.
func (e *SandboxExecutor) Execute(ctx context.Context, job *pb.Job, bundleDir string) (*pb.Result, error) {
	assertions, err := assertpb.DecodeAll(job.GetAssertions())
	if err != nil {
		// The plan compiled these; a job whose do not compile is corrupt or from a newer planner.
		return erroredResult(job, "the job's assertions cannot be used: "+err.Error()), nil
	}
	switch job.GetKind() {
	case pb.CaseKind_CASE_KIND_COMMAND:
		return e.command(ctx, job, bundleDir, assertions)
	case pb.CaseKind_CASE_KIND_PROMPT:
		return e.prompt(ctx, job, bundleDir, assertions)
	}
	return erroredResult(job, fmt.Sprintf("unknown case kind %v", job.GetKind())), nil
}

func (e *SandboxExecutor) command(ctx context.Context, job *pb.Job, bundleDir string, assertions []assert.Assertion) (*pb.Result, error) {
	timeout := time.Duration(job.GetTimeoutMs()) * time.Millisecond
	mounts, err := skillMounts(job, bundleDir)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	spec := sandbox.Spec{
		JobID:   job.GetId(),
		Mounts:  mounts,
		Env:     job.GetEnv(),
		Limits:  limitsOf(job.GetLimits()),
		Timeout: timeout,
	}
	sb, err := e.sandboxes.Acquire(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	defer e.release(ctx, job, sb)
	req := sandbox.ExecRequest{
		Cmd:     []string{"bash", "-c", job.GetCommand()},
		WorkDir: path.Join(SkillsMount, job.GetSkillPath()),
		Timeout: timeout,
	}
	if job.GetHasStdin() {
		req.Stdin = job.GetStdin()
	}
	start := e.now()
	// The job's deadline, for the assertions: they run in this process, outside the sandbox,
	// and get what the command left of the job's time (assert.EvaluateAllContext).
	jctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := sb.Exec(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	out := &pb.Result{
		Kind:            job.GetKind(),
		Stdout:          string(res.Stdout),
		Stderr:          string(res.Stderr),
		ExitCode:        int32(res.ExitCode),
		OutputTruncated: res.StdoutTruncated || res.StderrTruncated,
		Timings: &pb.Timings{
			SandboxStartMs: sb.StartLatency().Milliseconds(),
			ExecutionMs:    e.now().Sub(start).Milliseconds(),
		},
	}
	switch {
	case res.TimedOut:
		out.Verdict = pb.Verdict_VERDICT_TIMED_OUT
		out.Reason = fmt.Sprintf("timed out after %s: the sandbox was killed", timeout)
		return out, nil
	case res.SandboxExited:
		out.Verdict = pb.Verdict_VERDICT_ERRORED
		out.Reason = "the sandbox stopped while the command ran (its init was killed or it ran out of memory)"
		return out, nil
	}
	// The files the assertions name are gathered now, before the sandbox is released.
	files, err := observeFiles(ctx, sb, req.WorkDir, assertions)
	if err != nil {
		return nil, err
	}
	obs := assert.Observation{Stdout: out.Stdout, Stderr: out.Stderr, ExitCode: res.ExitCode, OutputTruncated: out.OutputTruncated, Files: files}
	Decide(jctx, out, assertions, obs)
	if out.Verdict != pb.Verdict_VERDICT_ERRORED && res.OOMKilled {
		out.Reason = "a process was killed by the memory limit (exit 137)"
	}
	return out, nil
}

// Decide evaluates a command job's assertions against what its command produced, within ctx,
// the job's deadline, and sets the result's assertion results and verdict (verdict.Of): an
// assertion the deadline cut short is errored, and so is the job, with the reason. Any
// executor of command jobs decides with it, so that its passes are ones the report counts.
func Decide(ctx context.Context, out *pb.Result, assertions []assert.Assertion, obs assert.Observation) {
	results, _ := assert.EvaluateAllContext(ctx, assertions, obs)
	setVerdict(out, results)
}

// setVerdict records a job's assertion results and the verdict they give (package verdict).
func setVerdict(out *pb.Result, results []assert.Result) {
	out.Assertions = assertpb.Results(results)
	v, reason := verdict.Of(out.Assertions)
	out.Verdict = v
	if v == pb.Verdict_VERDICT_ERRORED {
		out.Reason = reason
	}
}

func limitsOf(l *pb.Limits) sandbox.Limits {
	if l == nil {
		return sandbox.Limits{}
	}
	return sandbox.Limits{
		MemoryBytes: l.GetMemoryBytes(), NanoCPUs: l.GetNanoCpus(), Pids: l.GetPids(),
		FileSizeBytes: l.GetFileSizeBytes(), OutputBytes: l.GetOutputBytes(),
	}
}
