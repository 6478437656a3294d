package worker

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/assert"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/sandbox"
)

// recordingSandbox answers each command with res and keeps the requests.
type recordingSandbox struct {
	res  sandbox.ExecResult
	reqs []sandbox.ExecRequest
}

func (r *recordingSandbox) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	r.reqs = append(r.reqs, req)
	return r.res, nil
}

func (r *recordingSandbox) StartLatency() time.Duration { return time.Millisecond }

type oneSandbox struct{ sb Sandbox }

func (o oneSandbox) Acquire(context.Context, sandbox.Spec) (Sandbox, error) { return o.sb, nil }
func (o oneSandbox) Release(context.Context, Sandbox) error                 { return nil }

// referenceJudge passes every criterion and keeps the references it was shown.
type referenceJudge struct{ refs *[]string }

func (j referenceJudge) EvaluateWithReference(ctx context.Context, criterion, input, reference, output string, votes int) (assert.Result, agent.Usage, error) {
	*j.refs = append(*j.refs, reference)
	return assert.Result{Type: assert.SemanticMatch, Passed: true, Expected: criterion}, agent.Usage{}, nil
}

// execsBeforeAgent is an agent that records how many commands the sandbox had run when it
// started.
type execsBeforeAgent struct {
	sb   *recordingSandbox
	seen *int
}

func (a execsBeforeAgent) Run(ctx context.Context, sb agent.Sandbox, req agent.Request) (string, agent.Transcript, error) {
	*a.seen = len(a.sb.reqs)
	return "done", agent.Transcript{}, nil
}

// TestPromptJobInputFiles: an eval's input files are copied from the skill directory in the
// bundle into the agent's work directory, at the same relative path, before the agent starts;
// the judge is shown the job's reference; a job without files runs no copy.
func TestPromptJobInputFiles(t *testing.T) {
	withFiles := func(files []string, ref string) *pb.Job {
		j := promptJob(semanticHey)
		j.SkillPath, j.Files, j.Reference = "team/s", files, ref
		return j
	}
	tests := []struct {
		name     string
		job      *pb.Job
		res      sandbox.ExecResult
		wantArgs []string // the copy's source/destination pairs; nil: no copy
		want     pb.Verdict
		reason   string
	}{
		{
			name: "files copied", job: withFiles([]string{"evals/files/a.csv", "b.txt"}, "Names february."),
			wantArgs: []string{"/skills/team/s/evals/files/a.csv", "/work/evals/files/a.csv", "/skills/team/s/b.txt", "/work/b.txt"},
			want:     pb.Verdict_VERDICT_PASSED,
		},
		{name: "no files", job: withFiles(nil, ""), want: pb.Verdict_VERDICT_PASSED},
		{
			name: "copy fails", job: withFiles([]string{"a.csv"}, "r"), res: sandbox.ExecResult{ExitCode: 1, Stderr: []byte("cp: cannot stat")},
			wantArgs: []string{"/skills/team/s/a.csv", "/work/a.csv"}, want: pb.Verdict_VERDICT_ERRORED, reason: "cannot stat",
		},
		{name: "path climbing out", job: withFiles([]string{"../x"}, "r"), want: pb.Verdict_VERDICT_ERRORED, reason: "not a path inside"},
		{name: "absolute path", job: withFiles([]string{"/etc/passwd"}, "r"), want: pb.Verdict_VERDICT_ERRORED, reason: "not a path inside"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb := &recordingSandbox{res: tt.res}
			var refs []string
			seen := -1
			e := NewExecutor(oneSandbox{sb}, nil).WithAgents(map[string]AgentSpec{"": {Agent: execsBeforeAgent{sb, &seen}}}, referenceJudge{&refs}, 1)
			out, err := e.Execute(context.Background(), tt.job, "/bundle")
			if err != nil {
				t.Fatal(err)
			}
			if out.GetVerdict() != tt.want || !strings.Contains(out.GetReason(), tt.reason) {
				t.Fatalf("verdict %v (%s), want %v with %q", out.GetVerdict(), out.GetReason(), tt.want, tt.reason)
			}
			if tt.wantArgs == nil {
				if seen > 0 {
					t.Errorf("%d commands ran before the agent, want none", seen)
				}
			} else {
				if len(sb.reqs) == 0 {
					t.Fatal("no copy ran")
				}
				cmd := sb.reqs[0].Cmd
				if len(cmd) < 4 || cmd[0] != "sh" || cmd[2] != copyScript || !slices.Equal(cmd[4:], tt.wantArgs) {
					t.Errorf("copy command %q, want sh -c copyScript with %q", cmd, tt.wantArgs)
				}
			}
			if tt.want != pb.Verdict_VERDICT_PASSED {
				if seen != -1 {
					t.Error("the agent ran though its input files were not copied")
				}
				return
			}
			// Before the agent: the copy and the listing of what it copied; after it, only the
			// listing of what it left.
			if wantBefore := min(len(tt.wantArgs), 2); seen != wantBefore {
				t.Errorf("the agent started after %d commands, want %d", seen, wantBefore)
			}
			if last := sb.reqs[len(sb.reqs)-1].Cmd; !slices.Equal(last, listCommand(AgentWorkDir)) {
				t.Errorf("last command %q, want the listing of the work directory", last)
			}
			if !slices.Equal(refs, []string{tt.job.GetReference()}) {
				t.Errorf("judge shown references %q, want %q", refs, tt.job.GetReference())
			}
		})
	}
}

func TestLocalPath(t *testing.T) {
	for p, want := range map[string]bool{
		"a.csv": true, "evals/files/a.csv": true, "..a": true,
		"": false, ".": false, "..": false, "../a": false, "/a": false, "a/../b": false, "a//b": false, "./a": false,
	} {
		if got := localPath(p); got != want {
			t.Errorf("localPath(%q) = %v, want %v", p, got, want)
		}
	}
}
