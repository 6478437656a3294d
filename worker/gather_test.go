package worker

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/assert"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/sandbox"
)

// localSandbox runs each command on this machine, as the sandbox would run it, keeping at most
// limit bytes of stdout with the sandbox's truncation marker (0: no limit).
type localSandbox struct {
	limit int64
	reqs  []sandbox.ExecRequest
}

func (l *localSandbox) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	l.reqs = append(l.reqs, req)
	cmd := exec.CommandContext(ctx, req.Cmd[0], req.Cmd[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := sandbox.ExecResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	if ee, ok := err.(*exec.ExitError); ok {
		res.ExitCode = ee.ExitCode()
	} else if err != nil {
		return res, err
	}
	if l.limit > 0 && int64(len(res.Stdout)) > l.limit {
		out := append([]byte(nil), res.Stdout[:l.limit]...)
		if out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
		res.Stdout, res.StdoutTruncated = append(out, sandbox.TruncationMarker(l.limit)...), true
	}
	return res, nil
}

func (l *localSandbox) StartLatency() time.Duration { return 0 }

// workDir makes a directory like an agent leaves one, and a file outside it.
func workDir(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "work")
	write := func(p, content string) {
		t.Helper()
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("out/report.md", "# Report\nline two\n")
	write("r.json", `{"ok": true}`)
	write("empty", "")
	write("weird name\nwith newline", "x")
	write("big.txt", strings.Repeat("a", 5000))
	if err := os.WriteFile(filepath.Join(root, "secret"), []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"out.link": "../secret", "in.link": "r.json", "dangling": "nowhere", "dir.link": ".."} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestGatherScript runs the gathering command for real (bash and coreutils, as in the sandbox
// image) against a directory with files, a directory, symbolic links in and out, and paths
// that do not exist.
func TestGatherScript(t *testing.T) {
	dir := workDir(t)
	reqs := []fileRequest{
		{"out/report.md", assert.MaxFileReadBytes}, {"out", assert.MaxFileReadBytes}, {"missing.txt", 10},
		{"no/such/dir/x", 10}, {"out/report.md/x", 10}, {"empty", 10}, {"weird name\nwith newline", 10},
		{"big.txt", 100}, {"out.link", 100}, {"in.link", 100}, {"dangling", 100}, {"dir.link/secret", 100},
	}
	sb := &localSandbox{}
	files, err := gatherFiles(context.Background(), sb, dir, reqs)
	if err != nil {
		t.Fatal(err)
	}
	// The paths are arguments after the script, never in it.
	cmd := sb.reqs[0].Cmd
	if cmd[0] != "bash" || cmd[2] != gatherScript || cmd[4] != dir || cmd[5] != fmt.Sprint(assert.MaxFileReadBytes) || cmd[6] != "out/report.md" {
		t.Errorf("command %q", cmd)
	}
	regular := func(content string, size int64, truncated bool) assert.File {
		return assert.File{State: assert.FileRegular, Size: size, Content: []byte(content), Truncated: truncated}
	}
	outside := assert.File{State: assert.FileUnknown, Problem: "a symbolic link leads out of the directory; it was not followed"}
	want := map[string]assert.File{
		"out/report.md":            regular("# Report\nline two\n", 18, false),
		"out":                      {State: assert.FileDirectory},
		"missing.txt":              {State: assert.FileMissing},
		"no/such/dir/x":            {State: assert.FileMissing},
		"out/report.md/x":          {State: assert.FileMissing},
		"empty":                    regular("", 0, false),
		"weird name\nwith newline": regular("x", 1, false),
		"big.txt":                  regular(strings.Repeat("a", 100), 5000, true),
		"out.link":                 outside,
		"in.link":                  regular(`{"ok": true}`, 12, false),
		"dangling":                 {State: assert.FileUnknown, Problem: "a symbolic link that leads nowhere"},
		"dir.link/secret":          outside,
	}
	for p, w := range want {
		g := files[p]
		if g.State != w.State || g.Size != w.Size || !bytes.Equal(g.Content, w.Content) || g.Truncated != w.Truncated || g.Problem != w.Problem {
			t.Errorf("%q: got %+v, want %+v", p, g, w)
		}
	}
}

// TestGatherCut: output cut by the sandbox's cap keeps what arrived whole, the first part of a
// file cut in the middle (marked truncated), and leaves the rest unknown, never missing.
func TestGatherCut(t *testing.T) {
	dir := workDir(t)
	reqs := []fileRequest{{"big.txt", 5000}, {"missing.txt", 10}}
	files, err := gatherFiles(context.Background(), &localSandbox{limit: 1000}, dir, reqs)
	if err != nil {
		t.Fatal(err)
	}
	big := files["big.txt"]
	if big.State != assert.FileRegular || !big.Truncated || len(big.Content) == 0 || len(big.Content) > 1000 || strings.Trim(string(big.Content), "a") != "" {
		t.Errorf("big.txt: %+v", big)
	}
	if m := files["missing.txt"]; m.State != assert.FileUnknown || !strings.Contains(m.Problem, "output cap") {
		t.Errorf("missing.txt: %+v, want unknown for the output cap", m)
	}
}

// TestParseGathered covers what a real run cannot easily show: a directory that cannot be
// searched (as root, every directory can), a command that failed, a read that came up short.
func TestParseGathered(t *testing.T) {
	reqs := []fileRequest{{"a", 10}, {"b", 10}}
	tests := []struct {
		name string
		res  sandbox.ExecResult
		want map[string]assert.FileState
		why  string
	}{
		{name: "unsearchable directory", res: sandbox.ExecResult{Stdout: []byte("U 0 the directory /work/d cannot be searched\nM 1\n")},
			want: map[string]assert.FileState{"a": assert.FileUnknown, "b": assert.FileMissing}, why: "cannot be searched"},
		{name: "short read", res: sandbox.ExecResult{Stdout: []byte("F 0 3 3\nab\x00\nC 0 2\nM 1\n")},
			want: map[string]assert.FileState{"a": assert.FileUnknown, "b": assert.FileMissing}, why: "could not be read in full"},
		{name: "failed", res: sandbox.ExecResult{ExitCode: 127, Stderr: []byte("bash: not found")},
			want: map[string]assert.FileState{"a": assert.FileUnknown, "b": assert.FileUnknown}, why: "exit 127"},
		{name: "timed out", res: sandbox.ExecResult{TimedOut: true, ExitCode: -1},
			want: map[string]assert.FileState{"a": assert.FileUnknown, "b": assert.FileUnknown}, why: "timed out"},
		{name: "no directory", res: sandbox.ExecResult{Stdout: []byte("B the directory cannot be resolved\n")},
			want: map[string]assert.FileState{"a": assert.FileUnknown, "b": assert.FileUnknown}, why: "cannot be resolved"},
		{name: "silent", res: sandbox.ExecResult{},
			want: map[string]assert.FileState{"a": assert.FileUnknown, "b": assert.FileUnknown}, why: "output cap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files, err := gatherFiles(context.Background(), &recordingSandbox{res: tt.res}, "/work", reqs)
			if err != nil {
				t.Fatal(err)
			}
			for p, st := range tt.want {
				if files[p].State != st {
					t.Errorf("%s: state %v, want %v (%+v)", p, files[p].State, st, files[p])
				}
			}
			if !strings.Contains(files["a"].Problem, tt.why) {
				t.Errorf("a: problem %q, want %q", files["a"].Problem, tt.why)
			}
		})
	}
}

// scriptedSandbox answers the listing and the gathering commands from a local directory, and
// every other command (the agent's) with success.
type scriptedSandbox struct {
	local *localSandbox
	dir   string
	// unreadable makes the gathering report every path as in a directory that cannot be
	// searched.
	unreadable bool
}

func (s *scriptedSandbox) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	cmd := slices.Clone(req.Cmd)
	switch {
	case slices.Equal(cmd, listCommand(AgentWorkDir)):
		cmd[1] = s.dir
	case len(cmd) > 4 && cmd[2] == gatherScript:
		if s.unreadable {
			var out bytes.Buffer
			for i := 0; i < (len(cmd)-5)/2; i++ {
				fmt.Fprintf(&out, "U %d the directory /work cannot be searched\n", i)
			}
			return sandbox.ExecResult{Stdout: out.Bytes()}, nil
		}
		cmd[4] = s.dir
	default:
		return sandbox.ExecResult{}, nil
	}
	req.Cmd = cmd
	return s.local.Exec(ctx, req)
}

func (s *scriptedSandbox) StartLatency() time.Duration { return 0 }

// TestPromptJobFiles runs prompt jobs whose assertions name files: they are decided on what the
// gathering found, and a negative check whose directory cannot be searched is errored.
func TestPromptJobFiles(t *testing.T) {
	exists := &pb.Assertion{Type: string(assert.FileExists), Path: "out/report.md"}
	absent := &pb.Assertion{Type: string(assert.FileNotExists), Path: "scratch.tmp"}
	says := &pb.Assertion{Type: string(assert.FileContains), Path: "out/report.md", Value: "line two"}
	notThere := &pb.Assertion{Type: string(assert.FileExists), Path: "nope"}
	tests := []struct {
		name       string
		job        *pb.Job
		unreadable bool
		want       pb.Verdict
	}{
		{name: "passes", job: promptJob(exists, absent, says), want: pb.Verdict_VERDICT_PASSED},
		{name: "fails", job: promptJob(exists, notThere), want: pb.Verdict_VERDICT_FAILED},
		{name: "negative check unreadable", job: promptJob(absent), unreadable: true, want: pb.Verdict_VERDICT_ERRORED},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb := &scriptedSandbox{local: &localSandbox{}, dir: workDir(t), unreadable: tt.unreadable}
			e := NewExecutor(oneSandbox{sb}, nil).WithAgents(map[string]AgentSpec{"": {Agent: fakeAgent{output: "done"}}}, nil, 1)
			out, err := e.Execute(context.Background(), tt.job, "/bundle")
			if err != nil {
				t.Fatal(err)
			}
			if out.GetVerdict() != tt.want {
				t.Fatalf("verdict %v (%s; %v), want %v", out.GetVerdict(), out.GetReason(), out.GetAssertions(), tt.want)
			}
		})
	}
}

// TestCollectOutputs: the files the agent created or changed are kept, sorted by path, within
// the caps on count, per-file and total bytes, and every file left out or cut is named.
func TestCollectOutputs(t *testing.T) {
	dir := t.TempDir()
	write := func(p string, n int) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), bytes.Repeat([]byte("x"), n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("input.csv", 10) // copied in before the agent, and left alone
	local := &localSandbox{}
	before, why, err := listWork(context.Background(), &scriptedSandbox{local: local, dir: dir}, AgentWorkDir)
	if err != nil || before == nil {
		t.Fatalf("listing: %v %s", err, why)
	}
	// Four large files: 256 KiB kept of each, which uses the 1 MiB; the small files that
	// come after them by path are left out for it.
	for i := range 4 {
		write(fmt.Sprintf("a/big%d.bin", i), 300<<10)
	}
	for i := range 110 {
		write(fmt.Sprintf("b/small%03d.txt", i), 3)
	}
	kept, omitted := collectOutputs(context.Background(), &scriptedSandbox{local: local, dir: dir}, before, "")
	if len(kept) != 4 {
		t.Errorf("kept %d files, want the 4 that used the byte budget", len(kept))
	}
	var total int
	for _, f := range kept {
		total += len(f.GetContent())
		if f.GetPath() == "input.csv" {
			t.Error("an input file the agent did not change was kept")
		}
		if strings.HasPrefix(f.GetPath(), "a/") && (!f.GetTruncated() || len(f.GetContent()) != maxOutputFileBytes || f.GetSize() != 300<<10) {
			t.Errorf("%s: %d bytes kept of %d, truncated %v", f.GetPath(), len(f.GetContent()), f.GetSize(), f.GetTruncated())
		}
	}
	if total > maxOutputBytes {
		t.Errorf("kept %d bytes, more than %d", total, maxOutputBytes)
	}
	joined := strings.Join(omitted, "\n")
	for _, want := range []string{
		`14 files: more than 100 files were created or changed (the first 100 by path are kept): "b/small096.txt"`,
		`96 files: the 1024 KiB kept of all files was used: "b/small000.txt"`,
		`4 files: cut to their first 256 KiB`,
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("omitted %q, want it to say %q", omitted, want)
		}
	}
	if nothing, _ := collectOutputs(context.Background(), &scriptedSandbox{local: local, dir: dir}, nil, "the work directory could not be listed"); nothing != nil {
		t.Error("outputs kept without a listing from before the agent")
	}
}

// placingAgent stands in for agent.Command with a skills_dir under the work directory (dir is
// the local directory behind /work): it places the catalog's skill there unless the request
// says it was placed, as Command.Run does, then answers, leaving a file and a skill of its own.
type placingAgent struct{ dir string }

func (a placingAgent) write(p, content string) error {
	p = filepath.Join(a.dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(content), 0o644)
}

func (a placingAgent) PlaceSkills(context.Context, agent.Sandbox, agent.Request) (string, error) {
	for _, p := range []string{".claude/skills/s/SKILL.md", ".claude/skills/s/scripts/run.sh", ".claude/skills/dep/SKILL.md"} {
		if err := a.write(p, "placed "+p); err != nil {
			return "", err
		}
	}
	return "/work/.claude/skills", nil
}

func (a placingAgent) Run(ctx context.Context, sb agent.Sandbox, req agent.Request) (string, agent.Transcript, error) {
	if !req.SkillsPlaced {
		if _, err := a.PlaceSkills(ctx, sb, req); err != nil {
			return "", agent.Transcript{}, err
		}
	}
	for _, p := range []string{"answer.md", ".claude/skills/made/SKILL.md"} {
		if err := a.write(p, "made "+p); err != nil {
			return "", agent.Transcript{}, err
		}
	}
	return "ready", agent.Transcript{}, nil
}

// TestOutputsLeaveThePlacedSkillsOut: the skills a command agent's CLI is given in its
// skills_dir under the work directory are placed before the snapshot, so a job's outputs are
// what the agent made (its answer file, a skill it wrote itself), never the placed copies
// (issue 31: every with_skill job kept the whole catalog, against the outputs' caps).
func TestOutputsLeaveThePlacedSkillsOut(t *testing.T) {
	dir := t.TempDir()
	sb := &scriptedSandbox{local: &localSandbox{}, dir: dir}
	e := NewExecutor(oneSandbox{sb}, nil).WithAgents(map[string]AgentSpec{"": {Agent: placingAgent{dir}}}, nil, 1)
	out, err := e.Execute(context.Background(), promptJob(saysReady), "/bundle")
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, f := range out.GetOutputs() {
		kept = append(kept, f.GetPath())
	}
	if want := []string{".claude/skills/made/SKILL.md", "answer.md"}; !slices.Equal(kept, want) {
		t.Errorf("outputs %q, want %q (what the agent made, without the placed skills); omitted %q", kept, want, out.GetOutputsOmitted())
	}
	if _, err := os.Stat(filepath.Join(dir, ".claude/skills/s/scripts/run.sh")); err != nil {
		t.Errorf("the skills were not placed: %v", err)
	}
}
