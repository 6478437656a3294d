package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
	"go.uber.org/zap"
)

// ErrNotRunning is returned (wrapped, with the reason) by Exec on a sandbox whose container
// has stopped: its idle process was killed from inside, or it ran out of memory.
var ErrNotRunning = errors.New("sandbox: container is not running")

// ErrReleased is returned by Exec after Release.
var ErrReleased = errors.New("sandbox: already released")

// Sandbox is one job's started container.
type Sandbox struct {
	r            *Runner
	id, name     string
	jobID        string
	env          map[string]string
	outputBytes  int64
	deadline     time.Time
	startLatency time.Duration
	warm         bool
	createDur    time.Duration
	startDur     time.Duration
	stopJobTimer func() bool

	mu        sync.Mutex
	state     sandboxState
	reason    string    // why it is no longer running
	oomKills  int64     // the cgroup's oom_kill count last seen
	lastExec  execTrace // for Overhead
	removeDur time.Duration
}

type sandboxState int

const (
	sbRunning  sandboxState = iota
	sbTimedOut              // killed from outside at the job's (or an exec's) deadline
	sbExited                // stopped from inside, or killed because the caller gave up
	sbReleased
)

func (r *Runner) newSandbox(l *launched, spec Spec, limits Limits, timeout time.Duration, t0 time.Time, warm bool) *Sandbox {
	now := r.clock.Now()
	deadline := now.Add(timeout)
	if deadline.After(l.expires) {
		deadline = l.expires // never outlive the label: other workers' reapers trust it
	}
	s := &Sandbox{
		r:            r,
		id:           l.id,
		name:         l.name,
		jobID:        spec.JobID,
		env:          maps.Clone(spec.Env),
		outputBytes:  limits.OutputBytes,
		deadline:     deadline,
		startLatency: now.Sub(t0),
		warm:         warm,
		createDur:    l.createDur,
		startDur:     l.startDur,
	}
	s.stopJobTimer = r.clock.AfterFunc(deadline.Sub(now), func() { s.kill(sbTimedOut, "the job's wall-clock timeout passed") })
	return s
}

// ID is the container id.
func (s *Sandbox) ID() string { return s.id }

// JobID is the job the sandbox was acquired for.
func (s *Sandbox) JobID() string { return s.jobID }

// Deadline is when the job's wall clock runs out and the container is killed.
func (s *Sandbox) Deadline() time.Time { return s.deadline }

// StartLatency is what the job paid to get the container: create and start when cold, about
// nothing for a warm pool hit.
func (s *Sandbox) StartLatency() time.Duration { return s.startLatency }

// Warm reports whether the container came from the warm pool.
func (s *Sandbox) Warm() bool { return s.warm }

// ExecRequest is one command to run in the sandbox as the sandbox user (10001).
type ExecRequest struct {
	Cmd     []string          // argv; no shell unless you ask for one (["bash", "-c", script])
	Stdin   []byte            // nil: no stdin (reads see EOF); else written, then closed
	Env     map[string]string // on top of Spec.Env; the worker's own environment never enters
	WorkDir string            // default /work
	// Timeout bounds this command. It is enforced like the job's: by killing the whole
	// container from outside (Docker cannot signal one exec), so a command that times out ends
	// the job's sandbox too — later Execs report TimedOut. 0 = only the job's deadline.
	Timeout time.Duration
}

// ExecResult is what a command did. ExitCode is -1 when it is unknown (timed out, never ran).
type ExecResult struct {
	ExitCode                         int
	Stdout, Stderr                   []byte // at most Limits.OutputBytes each, plus the truncation marker line
	StdoutTruncated, StderrTruncated bool
	TimedOut                         bool // killed from outside at the job's or the request's deadline
	OOMKilled                        bool // a process was killed by the memory limit (exit 137)
	SandboxExited                    bool // the container stopped during this command; the job cannot continue
	Duration                         time.Duration
}

// execTrace timestamps one exec's phases for Overhead.
type execTrace struct {
	start, attached, streamDone, collected time.Time
}

// Exec runs one command and waits for it. A non-zero exit is a result, not an error; errors
// are infrastructure failures (the engine, a stopped container). When the job's deadline or
// req.Timeout passes, the container is killed with SIGKILL and the result says TimedOut.
// When ctx is cancelled the container is killed too (the command cannot be stopped any other
// way) and ctx's error is returned. After a TimedOut, further Execs return TimedOut at once.
func (s *Sandbox) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	if len(req.Cmd) == 0 {
		return ExecResult{ExitCode: -1}, errors.New("sandbox: exec: empty command")
	}
	if err := ctx.Err(); err != nil {
		return ExecResult{ExitCode: -1}, err
	}
	env, err := mergeEnv(s.env, req.Env)
	if err != nil {
		return ExecResult{ExitCode: -1}, err
	}
	wd := req.WorkDir
	if wd == "" {
		wd = workDir
	}
	if !path.IsAbs(wd) {
		return ExecResult{ExitCode: -1}, fmt.Errorf("sandbox: exec: WorkDir %q is not absolute", wd)
	}
	now := s.r.clock.Now()
	if !now.Before(s.deadline) {
		s.kill(sbTimedOut, "the job's wall-clock timeout passed")
	}
	if res, err, ok := s.unusable(); !ok {
		s.r.m.execs.WithLabelValues(outcome(res, err)).Inc()
		return res, err
	}
	deadline := s.deadline
	if req.Timeout > 0 && now.Add(req.Timeout).Before(deadline) {
		deadline = now.Add(req.Timeout)
	}
	res, tr, err := s.run(ctx, req.Cmd, env, wd, req.Stdin, deadline, s.outputBytes)
	if err == nil && !res.TimedOut {
		s.diagnose(ctx, &res)
	}
	tr.collected = s.r.clock.Now()
	s.mu.Lock()
	s.lastExec = tr
	s.mu.Unlock()
	s.r.m.execs.WithLabelValues(outcome(res, err)).Inc()
	if res.SandboxExited && err == nil {
		s.r.log.Info("sandbox container stopped during a command", zap.String("job", s.jobID),
			zap.String("container", shortID(s.id)), zap.Bool("oom", res.OOMKilled))
	}
	return res, err
}

func outcome(res ExecResult, err error) string {
	switch {
	case res.TimedOut:
		return "timed_out"
	case res.OOMKilled:
		return "oom"
	case res.SandboxExited:
		return "exited"
	case err != nil:
		return "error"
	}
	return "ok"
}

// unusable reports the result for a sandbox that can no longer run commands; ok is true when
// it can.
func (s *Sandbox) unusable() (ExecResult, error, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case sbTimedOut:
		return ExecResult{ExitCode: -1, TimedOut: true}, nil, false
	case sbExited:
		return ExecResult{ExitCode: -1, SandboxExited: true}, fmt.Errorf("%w: %s", ErrNotRunning, s.reason), false
	case sbReleased:
		return ExecResult{ExitCode: -1}, ErrReleased, false
	}
	return ExecResult{}, nil, true
}

// run executes cmd and collects its output and exit code; deadline kills the container.
func (s *Sandbox) run(ctx context.Context, cmd, env []string, wd string, stdin []byte, deadline time.Time, limit int64) (ExecResult, execTrace, error) {
	d := s.r.docker
	tr := execTrace{start: s.r.clock.Now()}
	ec, err := d.ExecCreate(ctx, s.id, client.ExecCreateOptions{
		User:         sandboxUser,
		AttachStdin:  stdin != nil,
		AttachStdout: true,
		AttachStderr: true,
		Env:          env,
		WorkingDir:   wd,
		Cmd:          cmd,
	})
	if err != nil {
		res, err := s.failed(ctx, fmt.Errorf("sandbox: exec create: %w", err))
		return res, tr, err
	}
	att, err := d.ExecAttach(ctx, ec.ID, client.ExecAttachOptions{})
	if err != nil {
		res, err := s.failed(ctx, fmt.Errorf("sandbox: exec start: %w", err))
		return res, tr, err
	}
	defer att.Close()
	tr.attached = s.r.clock.Now()

	stdout, stderr := newCappedBuffer(limit), newCappedBuffer(limit)
	copied := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(stdout, stderr, att.Reader)
		copied <- err
	}()
	if stdin != nil {
		go func() {
			// A command that never reads its stdin leaves this blocked until att.Close.
			_, _ = att.Conn.Write(stdin)
			_ = att.CloseWrite()
		}()
	}
	expired := make(chan struct{})
	stop := s.r.clock.AfterFunc(max(deadline.Sub(tr.start), 0), func() {
		s.kill(sbTimedOut, "a command ran past its deadline")
		close(expired)
	})
	var copyErr error
	cancelled := false
	select {
	case copyErr = <-copied:
	case <-expired:
		copyErr = s.drainAfterKill(copied, &att)
	case <-ctx.Done():
		cancelled = true
		s.kill(sbExited, "the caller gave up: "+context.Cause(ctx).Error())
		copyErr = s.drainAfterKill(copied, &att)
	}
	stop()
	tr.streamDone = s.r.clock.Now()

	res := ExecResult{ExitCode: -1, Duration: tr.streamDone.Sub(tr.start)}
	res.Stdout, res.StdoutTruncated = stdout.bytes()
	res.Stderr, res.StderrTruncated = stderr.bytes()
	s.mu.Lock()
	res.TimedOut = s.state == sbTimedOut
	s.mu.Unlock()
	if cancelled {
		return res, tr, ctx.Err()
	}
	if res.TimedOut {
		return res, tr, nil
	}
	code, err := s.exitCode(ctx, ec.ID)
	if err != nil {
		res, err := s.failed(ctx, errors.Join(err, copyErr))
		res.Stdout, res.Stderr = stdout.buf, stderr.buf
		return res, tr, err
	}
	res.ExitCode = code
	return res, tr, nil
}

// drainAfterKill waits for the output stream to end after the container was killed, and
// closes it if the engine does not (a failed kill must not hang the worker).
func (s *Sandbox) drainAfterKill(copied <-chan error, att *client.ExecAttachResult) error {
	stop := s.r.clock.AfterFunc(killTimeout, func() { att.Close() })
	defer stop()
	return <-copied
}

// exitCode waits briefly for the engine to record the exec's exit: the stream can end a
// moment before.
func (s *Sandbox) exitCode(ctx context.Context, execID string) (int, error) {
	for attempt := range 50 {
		in, err := s.r.docker.ExecInspect(ctx, execID, client.ExecInspectOptions{})
		if err != nil {
			return -1, fmt.Errorf("sandbox: exec inspect: %w", err)
		}
		if !in.Running {
			return in.ExitCode, nil
		}
		if err := s.r.clock.Sleep(ctx, time.Duration(min(attempt+1, 20))*time.Millisecond); err != nil {
			return -1, err
		}
	}
	return -1, errors.New("sandbox: exec output ended but the engine still reports the command running")
}

// diagnose looks closer at a command that may not have ended on its own. Exit 137 (SIGKILL)
// that we did not send is the memory limit (the cgroup's oom_kill count went up) or a stopped
// container (its init was killed from inside, which takes every process with it). Exit 126 is
// also what the engine reports when it could not start the command, e.g. in a container that
// is going down, and 128 what a runtime reports when the command's sandbox died under it
// (gVisor). A probe command tells a live container from a dying one. Other signal deaths
// (SIGPIPE's 141 is common in pipelines) get a look at the container's state only, without the
// probe's cost; ordinary failures (1 to 127 but 126) cost nothing extra.
func (s *Sandbox) diagnose(ctx context.Context, res *ExecResult) {
	switch c := res.ExitCode; {
	case c == 126 || c == 128 || c == 137:
		// The full diagnosis, below.
	case c > 128:
		s.checkStopped(ctx, res)
		return
	default:
		return
	}
	if s.checkStopped(ctx, res) {
		return
	}
	if n, ok := s.oomKillCount(ctx); ok {
		// The container could still run a command: it is alive.
		s.mu.Lock()
		if res.ExitCode == 137 && n > s.oomKills {
			res.OOMKilled = true
		}
		s.oomKills = max(s.oomKills, n)
		s.mu.Unlock()
		return
	}
	s.awaitStopped(ctx, res)
}

// awaitStopped gives a container that could not run a command a moment to be seen as stopped
// by the engine, which notices its init's exit asynchronously.
func (s *Sandbox) awaitStopped(ctx context.Context, res *ExecResult) {
	for range 25 {
		if s.checkStopped(ctx, res) || s.r.clock.Sleep(ctx, 20*time.Millisecond) != nil {
			return
		}
	}
}

// checkStopped inspects the container; when it has stopped it marks the sandbox and the
// result, and reports true.
func (s *Sandbox) checkStopped(ctx context.Context, res *ExecResult) bool {
	in, err := s.r.docker.ContainerInspect(context.WithoutCancel(ctx), s.id, client.ContainerInspectOptions{})
	if err != nil || in.Container.State == nil {
		return false
	}
	st := in.Container.State
	if st.Running {
		return false
	}
	reason := fmt.Sprintf("the container stopped (exit code %d)", st.ExitCode)
	if st.OOMKilled {
		reason += " after running out of memory"
		res.OOMKilled = res.ExitCode == 137
	}
	s.mu.Lock()
	if s.state == sbRunning {
		s.state, s.reason = sbExited, reason
	}
	s.mu.Unlock()
	res.SandboxExited = true
	return true
}

// failed classifies an infrastructure error: when the container has stopped, say so.
func (s *Sandbox) failed(ctx context.Context, err error) (ExecResult, error) {
	res := ExecResult{ExitCode: -1}
	s.mu.Lock()
	st := s.state
	s.mu.Unlock()
	if st == sbTimedOut {
		res.TimedOut = true
		return res, nil
	}
	if s.checkStopped(ctx, &res) {
		s.mu.Lock()
		reason := s.reason
		s.mu.Unlock()
		return res, fmt.Errorf("%w: %s: %w", ErrNotRunning, reason, err)
	}
	return res, err
}

// oomKillCount reads the container's memory cgroup oom_kill counter (cgroup v1
// memory.oom_control, v2 memory.events) from inside. The file is read-only and kernel-written,
// so the sandboxed code cannot fake it.
func (s *Sandbox) oomKillCount(ctx context.Context) (int64, bool) {
	ctx, cancel := context.WithTimeout(ctx, killTimeout)
	defer cancel()
	res, _, err := s.run(ctx, []string{"cat", "/sys/fs/cgroup/memory/memory.oom_control", "/sys/fs/cgroup/memory.events"},
		nil, "/", nil, s.deadline, 4096)
	if err != nil || res.TimedOut {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(res.Stdout))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "oom_kill "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// kill marks the sandbox as no longer running and SIGKILLs the container from outside.
func (s *Sandbox) kill(state sandboxState, reason string) {
	s.mu.Lock()
	if s.state != sbRunning {
		s.mu.Unlock()
		return
	}
	s.state, s.reason = state, reason
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	if _, err := s.r.docker.ContainerKill(ctx, s.id, client.ContainerKillOptions{Signal: "SIGKILL"}); err != nil {
		// Already stopped is fine; anything else leaves Release's force remove to do it.
		s.r.log.Debug("kill sandbox container", zap.String("container", shortID(s.id)), zap.Error(err))
	}
	s.r.log.Info("sandbox killed", zap.String("job", s.jobID), zap.String("container", shortID(s.id)), zap.String("reason", reason))
}

func (s *Sandbox) markReleased() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == sbReleased {
		return false
	}
	s.state = sbReleased
	return true
}

// mergeEnv builds an exec's environment from the job's and the request's variables only.
func mergeEnv(job, req map[string]string) ([]string, error) {
	m := make(map[string]string, len(job)+len(req))
	maps.Copy(m, job)
	maps.Copy(m, req)
	out := make([]string, 0, len(m))
	for k, v := range m {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.Contains(v, "\x00") {
			return nil, fmt.Errorf("sandbox: invalid environment variable %q", k)
		}
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out, nil
}

// String summarises a result for logs and test failures: flags, sizes and the start of each
// stream.
func (r ExecResult) String() string {
	head := func(b []byte) string {
		if len(b) > 200 {
			return fmt.Sprintf("%q…(%d bytes)", b[:200], len(b))
		}
		return fmt.Sprintf("%q", b)
	}
	return fmt.Sprintf("exit=%d timed_out=%v oom=%v exited=%v truncated=%v/%v duration=%v stdout=%s stderr=%s",
		r.ExitCode, r.TimedOut, r.OOMKilled, r.SandboxExited, r.StdoutTruncated, r.StderrTruncated, r.Duration,
		head(r.Stdout), head(r.Stderr))
}
