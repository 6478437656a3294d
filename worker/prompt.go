package worker

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/assert"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/sandbox"
)

// Agent answers a prompt case. The built-in agent's model loop runs here, in the worker, and
// only its tool calls run in the job's sandbox; a command agent runs a CLI in the sandbox whose
// model traffic goes through the worker's gateway. Either way no credential enters the
// sandbox: at most a per-job gateway token does.
type Agent interface {
	Run(ctx context.Context, sb agent.Sandbox, req agent.Request) (string, agent.Transcript, error)
}

// Judge decides semantic_match assertions. reference is what a good answer looks like (the
// job's reference, an eval's expected_output), empty when the case gives none.
type Judge interface {
	EvaluateWithReference(ctx context.Context, criterion, input, reference, output string, votes int) (assert.Result, agent.Usage, error)
}

// skillPlacer is an agent that places the job's skills in the sandbox itself before it runs
// (agent.Command copies them into its CLI's skills_dir). The executor has it place them
// before the work directory's snapshot, so that the copies are never kept as outputs.
type skillPlacer interface {
	PlaceSkills(ctx context.Context, sb agent.Sandbox, req agent.Request) (dir string, err error)
}

// describedJudge is a Judge that can say which model and prompt version it judges a job with
// (the reference picks the prompt); results then carry them.
type describedJudge interface {
	Describe(reference string) (model, prompt string)
}

// AgentWorkDir is where an agent works inside the sandbox (a writable tmpfs).
const AgentWorkDir = "/work"

// AgentSpec is a configured agent and the limits its runs get.
type AgentSpec struct {
	Agent  Agent
	Limits agent.Limits
	// Model is the agent's model as configured, reported in each of its results so that a
	// comparison can refuse runs made with different models.
	Model string
	// Mounts are added to the sandbox of each of the agent's jobs (read-only), e.g. a command
	// agent's gateway socket directory.
	Mounts []sandbox.Mount
}

// WithAgents lets the executor run prompt cases: agents by name ("" is the default agent, used
// by jobs that name none), and the judge for semantic_match with its number of votes (nil
// judge: such assertions are errored).
func (e *SandboxExecutor) WithAgents(agents map[string]AgentSpec, judge Judge, votes int) *SandboxExecutor {
	e.agents, e.judge, e.votes = agents, judge, max(votes, 1)
	return e
}

// catalogOf is what the job's agent is told about the suite's skills: the entries of the job's
// catalog (armCatalog), located where they are mounted (skillMounts).
func catalogOf(job *pb.Job) []agent.SkillRef {
	refs := make([]agent.SkillRef, 0, len(job.GetCatalog()))
	for _, c := range job.GetCatalog() {
		refs = append(refs, agent.SkillRef{Name: c.GetName(), Description: c.GetDescription(), Location: path.Join(SkillsMount, sandboxPath(c.GetPath()))})
	}
	return refs
}

func (e *SandboxExecutor) prompt(ctx context.Context, job *pb.Job, bundleDir string, assertions []assert.Assertion) (*pb.Result, error) {
	spec, ok := e.agents[job.GetAgent()]
	a := spec.Agent
	if !ok || a == nil {
		reason := "no agent configured: prompt cases need an agent (skillfleet test --model, or a worker with --model)"
		if job.GetAgent() != "" {
			reason = fmt.Sprintf("agent %q is not configured on this worker", job.GetAgent())
		}
		return erroredResult(job, reason), nil
	}
	if len(job.GetCatalog()) == 0 && !emptyByArm(job) {
		// Every bundle holds the job's own skill: a job without a catalog comes from a
		// coordinator older than the field, and its agent would be shown no skill.
		return erroredResult(job, "the job carries no skill catalog (a coordinator older than this worker planned it): upgrade the coordinator"), nil
	}
	if reason := oldVersionMissing(job); reason != "" {
		return erroredResult(job, reason), nil
	}
	timeout := time.Duration(job.GetTimeoutMs()) * time.Millisecond
	mounts, err := skillMounts(job, bundleDir)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	mounts = append(mounts, spec.Mounts...)
	sb, err := e.sandboxes.Acquire(ctx, sandbox.Spec{
		JobID: job.GetId(), Mounts: mounts,
		Env: job.GetEnv(), Limits: limitsOf(job.GetLimits()), Timeout: timeout,
	})
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	defer e.release(ctx, job, sb)

	start := e.now()
	copyIn := copyInputFiles
	if baselineJob(job) {
		copyIn = func(ctx context.Context, sb Sandbox, job *pb.Job, timeout time.Duration) (string, error) {
			return copyInputFilesIn(ctx, sb, job, bundleDir, timeout)
		}
	}
	if reason, err := copyIn(ctx, sb, job, timeout); err != nil || reason != "" {
		if err != nil {
			return nil, err
		}
		return erroredResult(job, reason), nil
	}
	limits := spec.Limits
	if limits.WallTime <= 0 || limits.WallTime > timeout {
		limits.WallTime = timeout
	}
	actx, cancel := context.WithTimeout(agent.WithJobID(ctx, job.GetId()), timeout)
	defer cancel()
	req := agent.Request{
		Input: job.GetInput(), Catalog: catalogOf(job), AllowedTools: job.GetAllowedTools(),
		WorkDir: AgentWorkDir, Limits: limits, Skills: e.detectors.get(job, bundleDir),
	}
	// A CLI's skills are placed before the snapshot: copied into its skills_dir, often under
	// the work directory, they are the job's setup, not files the agent made (issue 31: every
	// with_skill job kept the whole catalog as its outputs, against the outputs' caps).
	placed := false
	if p, ok := a.(skillPlacer); ok {
		dir, err := p.PlaceSkills(actx, sandboxTools{sb}, req)
		switch {
		case err != nil && actx.Err() != nil:
			return &pb.Result{Verdict: pb.Verdict_VERDICT_TIMED_OUT, Kind: job.GetKind(),
				Reason: fmt.Sprintf("placing the agent's skills did not finish within %s", timeout)}, nil
		case err != nil:
			return erroredResult(job, "the agent's skills could not be placed: "+err.Error()), nil
		}
		req.SkillsPlaced, placed = true, dir != ""
	}
	// What was there before the agent, so the files it leaves can be told from the copies.
	before, beforeWhy, err := snapshotWork(ctx, sb, job, placed)
	if err != nil {
		return nil, fmt.Errorf("listing the work directory: %w", err)
	}
	output, tr, err := a.Run(actx, sandboxTools{sb}, req)
	out := &pb.Result{
		Kind:       job.GetKind(),
		Output:     output,
		Usage:      usageOf(tr.Usage),
		Transcript: transcriptOf(tr),
		Trajectory: e.trajectories.Encode(tr.Trajectory, job),
		Timings: &pb.Timings{
			SandboxStartMs: sb.StartLatency().Milliseconds(),
			ExecutionMs:    e.now().Sub(start).Milliseconds(),
		},
	}
	out.Model, out.AgentVersion = spec.Model, tr.AgentVersion
	if dj, ok := e.judge.(describedJudge); ok && hasSemantic(assertions) {
		out.JudgeModel, out.JudgePrompt = dj.Describe(job.GetReference())
	}
	// Kept whatever the verdict: what the agent left is most wanted when it failed.
	out.Outputs, out.OutputsOmitted = collectOutputs(ctx, sb, before, beforeWhy)
	var endpoint *agent.Error
	switch {
	case err == nil:
	case errors.As(err, &endpoint):
		// The model endpoint failed after its own retries: infrastructure, so the job is tried
		// again later (and errored, with this reason, on its last attempt).
		return nil, fmt.Errorf("agent: %w", err)
	case errors.Is(err, agent.ErrTimeLimit) || actx.Err() != nil:
		out.Verdict = pb.Verdict_VERDICT_TIMED_OUT
		out.Reason = fmt.Sprintf("the agent did not finish within %s: %v", limits.WallTime, err)
		return out, nil
	default:
		out.Verdict = pb.Verdict_VERDICT_ERRORED
		out.Reason = "the agent gave no answer: " + err.Error()
		return out, nil
	}

	// The deterministic assertions get what the agent left of the job's time: they run in this
	// process, and a costly output_matches must not run past the job (assert.EvaluateAllContext).
	// The trajectory is taken before the judge adds its tokens: max_tokens bounds the agent's.
	files, err := observeFiles(ctx, sb, AgentWorkDir, assertions)
	if err != nil {
		return nil, err
	}
	obs := assert.Observation{Output: output, Trajectory: trajectoryOf(tr), Files: files}
	results, pending := assert.EvaluateAllContext(actx, assertions, obs)
	for _, i := range pending {
		if e.judge == nil {
			results[i].Message = "no judge configured: semantic_match needs one (skillfleet test --judge-model)"
			continue
		}
		votes := e.votes
		if v := job.GetAssertions()[i].GetVotes(); v > 0 {
			votes = int(v) // the suite asked for this many samples of this criterion
		}
		r, u, err := e.judge.EvaluateWithReference(ctx, assertions[i].Value, job.GetInput(), job.GetReference(), output, votes)
		if err != nil && ctx.Err() != nil {
			return nil, err
		}
		results[i] = r
		tr.Usage.Add(u)
		out.Usage = usageOf(tr.Usage)
	}
	setVerdict(out, results)
	return out, nil
}

// copyScript copies each (source, destination) pair of its arguments, making the
// destination's directory first. The paths are arguments, never part of the script, so no
// name is ever parsed by the shell; the copies are made writable, as the agent's own files are.
const copyScript = `set -e
while [ "$#" -gt 1 ]; do
  mkdir -p -- "$(dirname -- "$2")"
  cp -- "$1" "$2"
  chmod u+w -- "$2"
  shift 2
done`

// copyInputFiles copies the job's input files from its skill directory in the bundle into the
// agent's work directory, at the same relative path (evals/files/a.csv → /work/evals/files/a.csv),
// before the agent starts. A reason is returned when the job cannot run (a path that would
// leave either directory, a copy that failed); an error is an infrastructure failure.
func copyInputFiles(ctx context.Context, sb Sandbox, job *pb.Job, timeout time.Duration) (string, error) {
	files := job.GetFiles()
	if len(files) == 0 {
		return "", nil
	}
	args := []string{"sh", "-c", copyScript, "sh"}
	for _, f := range files {
		// The planner checked these; a job is still not trusted to name a path outside.
		if !localPath(f) {
			return fmt.Sprintf("input file %q is not a path inside the skill directory", f), nil
		}
		args = append(args, path.Join(SkillsMount, job.GetSkillPath(), f), path.Join(AgentWorkDir, f))
	}
	res, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: args, WorkDir: AgentWorkDir, Timeout: timeout})
	if err != nil {
		return "", fmt.Errorf("copying input files: %w", err)
	}
	if res.ExitCode != 0 || res.TimedOut || res.SandboxExited {
		msg, _ := trimText(string(res.Stderr), maxToolOutputStored)
		return fmt.Sprintf("copying the case's input files into %s failed (exit %d): %s", AgentWorkDir, res.ExitCode, msg), nil
	}
	return "", nil
}

// localPath reports whether p is a clean relative slash path that stays below its directory.
func localPath(p string) bool {
	return p != "" && p != "." && !path.IsAbs(p) && path.Clean(p) == p && p != ".." && !strings.HasPrefix(p, "../")
}

// transcriptLimits keep a transcript small enough for a result message: the first calls, each
// with a capped output.
const (
	maxTranscriptCalls  = 50
	maxToolOutputStored = 2 << 10
)

func transcriptOf(tr agent.Transcript) *pb.Transcript {
	t := &pb.Transcript{ActivatedSkills: tr.Activated, Turns: int32(tr.Turns), Stop: tr.Stop}
	for _, a := range tr.Activations {
		t.Activations = append(t.Activations, &pb.Activation{Skill: a.Skill, Turn: int32(a.Turn)})
	}
	for i, c := range tr.ToolCalls {
		if i == maxTranscriptCalls {
			t.ToolCalls = append(t.ToolCalls, &pb.ToolCall{Name: "…", Error: fmt.Sprintf("%d more tool calls not kept", len(tr.ToolCalls)-i)})
			break
		}
		out, _ := trimText(c.Output, maxToolOutputStored)
		args, _ := trimText(c.Arguments, maxToolOutputStored)
		t.ToolCalls = append(t.ToolCalls, &pb.ToolCall{Name: c.Name, Arguments: args, Output: out, ExitCode: int32(c.ExitCode), Error: c.Error})
	}
	return t
}

// trajectoryOf is what the trajectory assertions look at: every tool call, not only the ones
// transcriptOf keeps for the report.
func trajectoryOf(tr agent.Transcript) *assert.Trajectory {
	t := &assert.Trajectory{
		Turns: tr.Turns, Tokens: tr.Usage.Total(), ToolsSeen: tr.ToolsSeen, ActivationsSeen: tr.ActivationsSeen,
		Activated: make([]assert.Activation, len(tr.Activations)),
		ToolCalls: make([]assert.ToolCall, len(tr.ToolCalls)),
	}
	for i, a := range tr.Activations {
		t.Activated[i] = assert.Activation{Skill: a.Skill, Turn: a.Turn}
	}
	for i, c := range tr.ToolCalls {
		t.ToolCalls[i] = assert.ToolCall{Name: c.Name, Arguments: c.Arguments}
	}
	return t
}

func usageOf(u agent.Usage) *pb.Usage {
	return &pb.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, Cost: u.Cost,
		CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens}
}

// sandboxTools adapts a job's sandbox to what the agent's tools need.
type sandboxTools struct{ sb Sandbox }

func (t sandboxTools) Exec(ctx context.Context, cmd []string, stdin []byte, workdir string, timeout time.Duration) (agent.ExecResult, error) {
	r, err := t.sb.Exec(ctx, sandbox.ExecRequest{Cmd: cmd, Stdin: stdin, WorkDir: workdir, Timeout: timeout})
	if err != nil {
		return agent.ExecResult{}, err
	}
	if r.SandboxExited {
		return agent.ExecResult{}, errors.New("the sandbox stopped while the command ran")
	}
	return agent.ExecResult{
		ExitCode: r.ExitCode, Stdout: r.Stdout, Stderr: r.Stderr,
		Truncated: r.StdoutTruncated || r.StderrTruncated, TimedOut: r.TimedOut,
	}, nil
}

// release removes a job's sandbox with its own context: a cancelled job must still not leave
// a container behind.
func (e *SandboxExecutor) release(ctx context.Context, job *pb.Job, sb Sandbox) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := e.sandboxes.Release(rctx, sb); err != nil {
		e.log.Warn("releasing the sandbox failed; the reaper will remove it", zap.String("job", job.GetId()), zap.Error(err))
	}
}

// hasSemantic reports whether a job needs the judge.
func hasSemantic(assertions []assert.Assertion) bool {
	for _, a := range assertions {
		if a.Type == assert.SemanticMatch {
			return true
		}
	}
	return false
}
