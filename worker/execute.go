package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/assert"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/sandbox"
)

// SkillsMount is where a job's suite bundle appears inside its sandbox, read-only.
const SkillsMount = "/skills"

// Sandboxes hands out and takes back job containers.
type Sandboxes interface {
	Acquire(ctx context.Context, spec sandbox.Spec) (*sandbox.Sandbox, error)
	Release(ctx context.Context, s *sandbox.Sandbox) error
}

// SandboxExecutor runs jobs in sandboxes: command cases directly, prompt cases through an
// agent (see WithAgents; without one they are errored, never passed).
type SandboxExecutor struct {
	sandboxes Sandboxes
	log       *zap.Logger
	now       func() time.Time
	agents    map[string]AgentSpec
	judge     Judge
	votes     int
	catalogs  sync.Map // bundle dir → *catalog
}

// NewSandboxExecutor returns the executor the worker uses in production and in local mode.
func NewSandboxExecutor(sandboxes Sandboxes, log *zap.Logger) *SandboxExecutor {
	if log == nil {
		log = zap.NewNop()
	}
	return &SandboxExecutor{sandboxes: sandboxes, log: log, now: time.Now}
}

// Execute runs one job. Errors are infrastructure failures and are retried by the worker;
// everything the case caused is in the Result.
func (e *SandboxExecutor) Execute(ctx context.Context, job *pb.Job, bundleDir string) (*pb.Result, error) {
	assertions, err := compileAssertions(job.GetAssertions())
	if err != nil {
		// The plan compiled these; a job that does not is corrupt or from a newer planner.
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
	spec := sandbox.Spec{
		JobID:   job.GetId(),
		Mounts:  []sandbox.Mount{{Source: bundleDir, Target: SkillsMount}},
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
	obs := assert.Observation{Stdout: out.Stdout, Stderr: out.Stderr, ExitCode: res.ExitCode, OutputTruncated: out.OutputTruncated}
	decide(jctx, out, assertions, obs)
	if out.Verdict != pb.Verdict_VERDICT_ERRORED && res.OOMKilled {
		out.Reason = "a process was killed by the memory limit (exit 137)"
	}
	return out, nil
}

// decide evaluates a command job's assertions within ctx, the job's deadline, and sets the
// verdict: an assertion the deadline cut short is errored, and so is the job, with the reason.
func decide(ctx context.Context, out *pb.Result, assertions []assert.Assertion, obs assert.Observation) {
	results, _ := assert.EvaluateAllContext(ctx, assertions, obs)
	out.Assertions = assertionResults(results)
	out.Verdict = verdictOf(results)
	if out.Verdict == pb.Verdict_VERDICT_ERRORED {
		out.Reason = erroredReason(results)
	}
}

// verdictOf decides a job from its assertion results: errored if any could not be evaluated,
// failed if any failed, passed only if there is at least one and all passed.
func verdictOf(results []assert.Result) pb.Verdict {
	failed := false
	for _, r := range results {
		if r.Errored {
			return pb.Verdict_VERDICT_ERRORED
		}
		if !r.Passed {
			failed = true
		}
	}
	switch {
	case failed:
		return pb.Verdict_VERDICT_FAILED
	case assert.AllPassed(results):
		return pb.Verdict_VERDICT_PASSED
	}
	return pb.Verdict_VERDICT_ERRORED
}

// erroredReason says why a job whose assertions ran has no verdict.
func erroredReason(results []assert.Result) string {
	for _, r := range results {
		if r.Errored {
			return fmt.Sprintf("%s could not be decided: %s", r.Type, r.Message)
		}
	}
	return "no assertion results"
}

// compileAssertions rebuilds the plan's assertions from the wire.
func compileAssertions(in []*pb.Assertion) ([]assert.Assertion, error) {
	if len(in) == 0 {
		return nil, errors.New("the job has no assertions")
	}
	out := make([]assert.Assertion, 0, len(in))
	for _, pa := range in {
		a := assert.Assertion{Type: assert.Type(pa.GetType()), Value: pa.GetValue(), ExitCode: int(pa.GetExitCode())}
		if len(pa.GetJson()) > 0 {
			dec := json.NewDecoder(bytes.NewReader(pa.GetJson()))
			dec.UseNumber()
			if err := dec.Decode(&a.JSON); err != nil {
				return nil, fmt.Errorf("%s at line %d: %w", pa.GetType(), pa.GetLine(), err)
			}
		}
		if err := assert.Compile(&a); err != nil {
			return nil, fmt.Errorf("%s at line %d: %w", pa.GetType(), pa.GetLine(), err)
		}
		out = append(out, a)
	}
	return out, nil
}

func assertionResults(in []assert.Result) []*pb.AssertionResult {
	out := make([]*pb.AssertionResult, len(in))
	for i, r := range in {
		out[i] = &pb.AssertionResult{
			Type: string(r.Type), Passed: r.Passed, Expected: r.Expected, Actual: r.Actual,
			Message: r.Message, Path: r.Path, Errored: r.Errored,
		}
	}
	return out
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
