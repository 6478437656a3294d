package agent

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/skillfleet/skillfleet/atif"
	"github.com/skillfleet/skillfleet/internal/text"
)

// forwarderScript is the in-sandbox forwarder from 127.0.0.1:PORT to the gateway's socket.
//
//go:embed forwarder.py
var forwarderScript string

// Command defaults.
const (
	// DefaultGatewaySocket is where the worker mounts the gateway's socket directory
	// (ListenUnix's dir) in the sandbox, plus the socket's name.
	DefaultGatewaySocket = "/run/skillfleet/" + GatewaySocketName
	// DefaultForwardPort is the forwarder's port on the sandbox's own loopback.
	DefaultForwardPort = 8765
	// stderrExcerpt bounds the stderr quoted in a failed run's error.
	stderrExcerpt = 2048
)

// CommandConfig says how to run an agent CLI.
//
// Placeholders, in Template elements and Env values, replaced in one pass (a prompt that
// contains "{{token}}" stays literal): {{prompt}} the case's input, {{token}} the job's gateway
// token, {{base_url}} the forwarder's OpenAI base URL (http://127.0.0.1:PORT/v1), {{workdir}}
// the request's work dir. When no Template element contains {{prompt}}, the prompt goes on the
// CLI's stdin (so a template ending in "-" reads it there, for CLIs that take "-" for stdin).
type CommandConfig struct {
	// Template is the CLI's argv; never run through a shell. Template[0] must not start with
	// "-" nor contain "=" (it follows env(1)'s assignments).
	Template []string
	// Env is added to the CLI's environment, e.g. OPENAI_BASE_URL={{base_url}},
	// OPENAI_API_KEY={{token}}.
	Env map[string]string
	// Gateway, when set, gives each run a session (budget: Request.Limits.MaxTokens) and wraps
	// the CLI in the forwarder; nil runs the CLI as is ({{token}} and {{base_url}} are then "").
	Gateway *Gateway
	// GatewaySocket is the gateway's socket path inside the sandbox (default
	// DefaultGatewaySocket).
	GatewaySocket string
	// ForwardPort is the forwarder's loopback port in the sandbox (default DefaultForwardPort).
	ForwardPort int
}

// Command is the command agent: an agent CLI (Claude Code, Codex, ...) run inside the job's
// sandbox, whose stdout is the answer. Its model traffic goes through the Gateway, so the
// sandbox only ever holds a per-job token.
//
// With a Gateway, one Exec runs: env K=V... python3 -c <forwarder> SOCKET PORT <CLI argv>. The
// forwarder listens on the sandbox's loopback before it starts the CLI, and exits with the CLI's
// status, so nothing outlives the run.
type Command struct {
	cfg CommandConfig
}

// NewCommand checks cfg and makes the command agent.
func NewCommand(cfg CommandConfig) (*Command, error) {
	if len(cfg.Template) == 0 || cfg.Template[0] == "" {
		return nil, errors.New("agent: command: empty template")
	}
	if strings.HasPrefix(cfg.Template[0], "-") || strings.Contains(cfg.Template[0], "=") {
		return nil, fmt.Errorf("agent: command: program %q must not start with '-' or contain '='", cfg.Template[0])
	}
	for k := range cfg.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.HasPrefix(k, "-") {
			return nil, fmt.Errorf("agent: command: bad environment variable name %q", k)
		}
	}
	if cfg.GatewaySocket == "" {
		cfg.GatewaySocket = DefaultGatewaySocket
	}
	if cfg.ForwardPort == 0 {
		cfg.ForwardPort = DefaultForwardPort
	}
	if cfg.ForwardPort < 1 || cfg.ForwardPort > 65535 {
		return nil, fmt.Errorf("agent: command: forward port %d out of range", cfg.ForwardPort)
	}
	cfg.Template = slices.Clone(cfg.Template)
	return &Command{cfg: cfg}, nil
}

type jobIDKey struct{}

// WithJobID labels ctx with the job's id, which Command gives its gateway session (for logs).
func WithJobID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, jobIDKey{}, id)
}

// Run runs the CLI on req.Input in sb. The output is the CLI's stdout without trailing
// newlines. A non-zero exit, a timeout, a truncated or empty stdout is an error with output ""
// (never a partial answer that assertions could pass); the transcript's usage is what the
// gateway metered, also on error, and so is the trajectory the gateway recorded (see
// Session.Trajectory). Errors: ErrTimeLimit (req.Limits.WallTime or ctx's
// deadline), ErrTokenLimit (the CLI failed after the gateway refused it for the budget),
// ErrEmptyOutput, the sandbox's error.
func (a *Command) Run(ctx context.Context, sb Sandbox, req Request) (output string, tr Transcript, err error) {
	var sess *Session
	if a.cfg.Gateway != nil {
		id, _ := ctx.Value(jobIDKey{}).(string)
		sess, err = a.cfg.Gateway.Open(id, Budget{MaxTokens: req.Limits.MaxTokens})
		if err != nil {
			tr.Stop = "error"
			return "", tr, err
		}
		defer sess.Close()
		if req.Skills != nil {
			sess.TrackActivations(req.Skills)
		}
	}
	if req.Limits.WallTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, req.Limits.WallTime, errWallTime)
		defer cancel()
	}
	argv, stdin := a.command(req, sess)
	res, xerr := sb.Exec(ctx, argv, stdin, req.WorkDir, req.Limits.WallTime)
	tr.Turns = 1
	if sess != nil {
		tr.Usage = sess.Usage()
		tr.Turns = sess.Turns()
		tr.Activations = sess.Activations()
		tr.ActivationsSeen = req.Skills != nil
		for _, a := range tr.Activations {
			tr.Activated = append(tr.Activated, a.Skill)
		}
		tr.Trajectory = sess.Trajectory()
		// The calls the model asked for, as the gateway saw them: complete only when every
		// request matched a step of one conversation, no message was skipped and no answer
		// was cut (a CLI that compacts its history or talks to the model on the side leaves
		// calls out of sight, and an incomplete list could pass tool_not_called).
		tr.ToolCalls = toolCallsOf(tr.Trajectory)
		tr.ToolsSeen = complete(tr.Trajectory)
	}
	fail := func(stop string, e error) (string, Transcript, error) {
		tr.Stop = stop
		return "", tr, e
	}
	switch {
	case res.TimedOut || ctx.Err() != nil:
		return fail("time", fmt.Errorf("%w: the agent command did not finish", ErrTimeLimit))
	case xerr != nil:
		return fail("error", fmt.Errorf("agent: command: sandbox: %w", xerr))
	case res.ExitCode != 0:
		e := fmt.Errorf("agent: command %q exited with status %d: %s", a.cfg.Template[0], res.ExitCode, excerpt(res.Stderr))
		if sess != nil && sess.BudgetExhausted() {
			return fail("tokens", fmt.Errorf("%w (%d tokens used of %d): %w", ErrTokenLimit, tr.Usage.Total(), req.Limits.MaxTokens, e))
		}
		return fail("error", e)
	case res.Truncated:
		return fail("error", errors.New("agent: command: the sandbox truncated the output; refusing a partial answer"))
	}
	output = strings.TrimRight(string(res.Stdout), "\r\n")
	if strings.TrimSpace(output) == "" {
		return fail("error", ErrEmptyOutput)
	}
	tr.Stop = "final"
	return output, tr, nil
}

// command is the argv and stdin of one run.
func (a *Command) command(req Request, sess *Session) ([]string, []byte) {
	var token, baseURL string
	if sess != nil {
		token = sess.Token()
		baseURL = "http://127.0.0.1:" + strconv.Itoa(a.cfg.ForwardPort) + "/v1"
	}
	r := strings.NewReplacer("{{prompt}}", req.Input, "{{token}}", token, "{{base_url}}", baseURL, "{{workdir}}", req.WorkDir)
	var argv []string
	if len(a.cfg.Env) > 0 {
		keys := make([]string, 0, len(a.cfg.Env))
		for k := range a.cfg.Env {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		argv = append(argv, "env")
		for _, k := range keys {
			argv = append(argv, k+"="+r.Replace(a.cfg.Env[k]))
		}
	}
	if sess != nil {
		argv = append(argv, "python3", "-c", forwarderScript, a.cfg.GatewaySocket, strconv.Itoa(a.cfg.ForwardPort))
	}
	inArgv := false
	for _, t := range a.cfg.Template {
		inArgv = inArgv || strings.Contains(t, "{{prompt}}")
		argv = append(argv, r.Replace(t))
	}
	if inArgv {
		return argv, nil
	}
	return argv, []byte(req.Input)
}

// excerpt is the end of a command's stderr (where the error usually is), clipped.
func excerpt(b []byte) string {
	s := strings.ToValidUTF8(strings.TrimSpace(string(b)), "?")
	if s == "" {
		return "(no stderr)"
	}
	return text.Tail(s, stderrExcerpt)
}

// toolCallsOf lists a trajectory's tool calls in order, with what each returned (a CLI runs
// its own tools, so exit codes are unknown: -1).
func toolCallsOf(t *atif.Trajectory) []ToolCall {
	if t == nil {
		return nil
	}
	var out []ToolCall
	for _, st := range t.Steps {
		results := map[string]string{}
		if st.Observation != nil {
			for _, r := range st.Observation.Results {
				results[r.SourceCallID] = r.Content
			}
		}
		for _, c := range st.ToolCalls {
			out = append(out, ToolCall{Name: c.FunctionName, Arguments: string(c.Arguments), Output: results[c.ToolCallID], ExitCode: -1})
		}
	}
	return out
}
