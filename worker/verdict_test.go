package worker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/activation"
	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/assert"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/sandbox"
)

// fakeSandbox answers every command with res (or err), after a while when slow is set.
type fakeSandbox struct {
	res  sandbox.ExecResult
	err  error
	slow time.Duration
}

func (f *fakeSandbox) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	if f.slow > 0 {
		// Bounded: long enough for the job's deadline (a millisecond in these tests) to pass.
		time.Sleep(f.slow)
	}
	return f.res, f.err
}

func (f *fakeSandbox) StartLatency() time.Duration { return time.Millisecond }

// fakeSandboxes hands out one fake sandbox and counts what is released.
type fakeSandboxes struct {
	sb       *fakeSandbox
	err      error
	acquired int
	released int
}

func (f *fakeSandboxes) Acquire(ctx context.Context, spec sandbox.Spec) (Sandbox, error) {
	if f.err != nil {
		return nil, f.err
	}
	f.acquired++
	return f.sb, nil
}

func (f *fakeSandboxes) Release(ctx context.Context, s Sandbox) error {
	f.released++
	return nil
}

// fakeAgent answers with output and tr, or err, after a while when slow is set.
type fakeAgent struct {
	output string
	tr     agent.Transcript
	err    error
	slow   time.Duration
}

func (a fakeAgent) Run(ctx context.Context, sb agent.Sandbox, req agent.Request) (string, agent.Transcript, error) {
	if a.slow > 0 {
		time.Sleep(a.slow)
	}
	return a.output, a.tr, a.err
}

// fakeJudge decides every criterion with res, or fails with err.
type fakeJudge struct {
	res assert.Result
	err error
}

func (j fakeJudge) EvaluateWithReference(ctx context.Context, criterion, input, reference, output string, votes int) (assert.Result, agent.Usage, error) {
	return j.res, agent.Usage{}, j.err
}

func commandJob(assertions ...*pb.Assertion) *pb.Job {
	return &pb.Job{Id: "j1", RunId: "r1", Skill: "s", Kind: pb.CaseKind_CASE_KIND_COMMAND, Command: "true", TimeoutMs: 60_000, Assertions: assertions}
}

func promptJob(assertions ...*pb.Assertion) *pb.Job {
	return &pb.Job{Id: "j1", RunId: "r1", Skill: "s", Kind: pb.CaseKind_CASE_KIND_PROMPT, Input: "hi", TimeoutMs: 60_000, Assertions: assertions,
		Catalog: []*pb.CatalogEntry{{Name: "s", Description: "d", Path: "s/SKILL.md"}}}
}

var (
	exitZero    = &pb.Assertion{Type: string(assert.ExitCode)}
	stdoutOK    = &pb.Assertion{Type: string(assert.StdoutContains), Value: "ok"}
	noSecret    = &pb.Assertion{Type: string(assert.NotContains), Value: "secret"}
	saysReady   = &pb.Assertion{Type: string(assert.OutputContains), Value: "ready"}
	semanticHey = &pb.Assertion{Type: string(assert.SemanticMatch), Value: "greets the user"}
	usesS       = &pb.Assertion{Type: string(assert.SkillActivated), Value: "s"}
	notS        = &pb.Assertion{Type: string(assert.SkillNotActivated), Value: "s"}
	noRm        = &pb.Assertion{Type: string(assert.ToolCalled), Value: "bash", ArgsMatch: "rm -rf", MaxSet: true}
	// activatedS is a built-in agent's run that read skill s's SKILL.md in its first turn.
	activatedS = agent.Transcript{
		ToolCalls:   []agent.ToolCall{{Name: "read_file", Arguments: `{"path":"/skills/s/SKILL.md"}`}, {Name: "bash", Arguments: `{"command":"ls"}`}},
		Activated:   []string{"s"},
		Activations: []activation.Activation{{Skill: "s", Turn: 2}},
		ToolsSeen:   true, ActivationsSeen: true, Turns: 2, Stop: "final",
	}
)

// TestNeverAFalsePass runs jobs through the executor on a fake sandbox, one row per way a job
// can end: only assertions that all passed give passed; anything in doubt is errored, with a
// reason; an infrastructure failure is an error, for the worker to retry.
func TestNeverAFalsePass(t *testing.T) {
	withTimeout := func(j *pb.Job, ms int64) *pb.Job { j.TimeoutMs = ms; return j }
	withKind := func(j *pb.Job, k pb.CaseKind) *pb.Job { j.Kind = k; return j }
	withAgent := func(j *pb.Job, a string) *pb.Job { j.Agent = a; return j }
	noCatalog := func(j *pb.Job) *pb.Job { j.Catalog = nil; return j }
	ready := fakeAgent{output: "READY"}
	tests := []struct {
		name   string
		job    *pb.Job
		sb     fakeSandbox
		agent  *fakeAgent // nil: no agent configured
		judge  Judge
		want   pb.Verdict
		reason string // in the result's reason
		retry  bool   // an error for the worker to retry instead of a result
	}{
		{name: "all passed", job: commandJob(exitZero, stdoutOK), sb: fakeSandbox{res: sandbox.ExecResult{Stdout: []byte("ok")}},
			want: pb.Verdict_VERDICT_PASSED},
		{name: "one failed", job: commandJob(exitZero, stdoutOK), sb: fakeSandbox{res: sandbox.ExecResult{ExitCode: 1, Stdout: []byte("ok")}},
			want: pb.Verdict_VERDICT_FAILED},
		{name: "no assertions", job: commandJob(), want: pb.Verdict_VERDICT_ERRORED, reason: "no assertions"},
		{name: "an assertion that does not compile", job: commandJob(&pb.Assertion{Type: string(assert.OutputMatches), Value: "("}),
			want: pb.Verdict_VERDICT_ERRORED, reason: "cannot be used"},
		{name: "timed out", job: commandJob(exitZero), sb: fakeSandbox{res: sandbox.ExecResult{TimedOut: true, ExitCode: 137}},
			want: pb.Verdict_VERDICT_TIMED_OUT, reason: "timed out"},
		{name: "sandbox exited", job: commandJob(exitZero), sb: fakeSandbox{res: sandbox.ExecResult{SandboxExited: true}},
			want: pb.Verdict_VERDICT_ERRORED, reason: "sandbox stopped"},
		{name: "truncated output with not_contains", job: commandJob(noSecret), sb: fakeSandbox{res: sandbox.ExecResult{Stdout: []byte("xx"), StdoutTruncated: true}},
			want: pb.Verdict_VERDICT_ERRORED, reason: "not_contains could not be decided"},
		{name: "assertions cut by the deadline", job: withTimeout(commandJob(exitZero), 1), sb: fakeSandbox{slow: 20 * time.Millisecond},
			want: pb.Verdict_VERDICT_ERRORED, reason: "could not be decided"},
		{name: "sandbox fails to exec", job: commandJob(exitZero), sb: fakeSandbox{err: errors.New("docker gone")}, retry: true},
		{name: "unknown case kind", job: withKind(commandJob(exitZero), pb.CaseKind(9)), want: pb.Verdict_VERDICT_ERRORED, reason: "unknown case kind"},
		{name: "unspecified case kind", job: withKind(commandJob(exitZero), pb.CaseKind_CASE_KIND_UNSPECIFIED), want: pb.Verdict_VERDICT_ERRORED, reason: "unknown case kind"},

		{name: "prompt passed", job: promptJob(saysReady), agent: &ready, want: pb.Verdict_VERDICT_PASSED},
		{name: "prompt failed", job: promptJob(saysReady), agent: &fakeAgent{output: "no"}, want: pb.Verdict_VERDICT_FAILED},
		{name: "no agent configured", job: promptJob(saysReady), want: pb.Verdict_VERDICT_ERRORED, reason: "no agent configured"},
		{name: "an agent not configured here", job: withAgent(promptJob(saysReady), "other"), agent: &ready,
			want: pb.Verdict_VERDICT_ERRORED, reason: `agent "other" is not configured`},
		{name: "no catalog in the job", job: noCatalog(promptJob(saysReady)), agent: &ready, want: pb.Verdict_VERDICT_ERRORED, reason: "no skill catalog"},
		{name: "agent error", job: promptJob(saysReady), agent: &fakeAgent{err: errors.New("bad tool call")},
			want: pb.Verdict_VERDICT_ERRORED, reason: "the agent gave no answer"},
		{name: "model endpoint failed: retried", job: promptJob(saysReady), agent: &fakeAgent{err: &agent.Error{Endpoint: "m", StatusCode: 503}}, retry: true},
		{name: "agent over its time", job: promptJob(saysReady), agent: &fakeAgent{err: agent.ErrTimeLimit},
			want: pb.Verdict_VERDICT_TIMED_OUT, reason: "did not finish"},
		{name: "prompt assertions cut by the deadline", job: withTimeout(promptJob(saysReady), 1), agent: &fakeAgent{output: "ready", slow: 20 * time.Millisecond},
			want: pb.Verdict_VERDICT_ERRORED, reason: "time ran out"},
		{name: "no judge", job: promptJob(saysReady, semanticHey), agent: &ready, want: pb.Verdict_VERDICT_ERRORED, reason: "no judge configured"},
		{name: "judge fails", job: promptJob(saysReady, semanticHey), agent: &ready,
			judge: fakeJudge{res: assert.Result{Type: assert.SemanticMatch, Errored: true, Message: "the judge gave no verdict"}, err: errors.New("judge down")},
			want:  pb.Verdict_VERDICT_ERRORED, reason: "the judge gave no verdict"},
		{name: "judge passes", job: promptJob(saysReady, semanticHey), agent: &ready,
			judge: fakeJudge{res: assert.Result{Type: assert.SemanticMatch, Passed: true}}, want: pb.Verdict_VERDICT_PASSED},

		{name: "trajectory passed", job: promptJob(saysReady, usesS, noRm), agent: &fakeAgent{output: "ready", tr: activatedS}, want: pb.Verdict_VERDICT_PASSED},
		{name: "a skill activated that should not be", job: promptJob(saysReady, notS), agent: &fakeAgent{output: "ready", tr: activatedS},
			want: pb.Verdict_VERDICT_FAILED},
		{name: "an agent error with trajectory assertions", job: promptJob(notS), agent: &fakeAgent{tr: activatedS, err: errors.New("sandbox gone")},
			want: pb.Verdict_VERDICT_ERRORED, reason: "the agent gave no answer"},
		{name: "an agent that does not report its tool calls", job: promptJob(noRm), agent: &fakeAgent{output: "ready", tr: agent.Transcript{Turns: 2}},
			want: pb.Verdict_VERDICT_ERRORED},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb := tt.sb
			sbs := &fakeSandboxes{sb: &sb}
			e := NewExecutor(sbs, nil)
			if tt.agent != nil {
				e.WithAgents(map[string]AgentSpec{"": {Agent: *tt.agent}}, tt.judge, 1)
			} else if tt.judge != nil {
				e.WithAgents(nil, tt.judge, 1)
			}
			res, err := e.Execute(context.Background(), tt.job, t.TempDir())
			if sbs.acquired != sbs.released {
				t.Errorf("%d sandboxes acquired, %d released", sbs.acquired, sbs.released)
			}
			if tt.retry {
				if err == nil {
					t.Fatalf("want an infrastructure error to retry, got a result: %v %q", res.GetVerdict(), res.GetReason())
				}
				return
			}
			if err != nil {
				t.Fatalf("Execute: %v", err)
			}
			if res.GetVerdict() != tt.want || !strings.Contains(res.GetReason(), tt.reason) {
				t.Fatalf("verdict %v, reason %q; want %v, %q", res.GetVerdict(), res.GetReason(), tt.want, tt.reason)
			}
			if res.GetVerdict() == pb.Verdict_VERDICT_PASSED && len(res.GetAssertions()) == 0 {
				t.Fatal("a pass without assertion results")
			}
		})
	}
}
