package agent

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/activation"
	"github.com/skillfleet/skillfleet/atif"
	"github.com/skillfleet/skillfleet/internal/text"
	"github.com/skillfleet/skillfleet/sandbox"
)

// forwarderScript is the in-sandbox forwarder from 127.0.0.1:PORT to the gateway's socket.
//
//go:embed forwarder.py
var forwarderScript string

// Command defaults.
const (
	// DefaultGatewayDir is where the worker mounts the gateway's socket directory in the
	// sandbox.
	DefaultGatewayDir = "/run/skillfleet"
	// DefaultForwardPort is the forwarder's port on the sandbox's own loopback.
	DefaultForwardPort = 8765
	// stderrExcerpt bounds the stderr quoted in a failed run's error.
	stderrExcerpt = 2048
	// CommandAgentName is the agent name of a gateway's trajectories when its config names none.
	CommandAgentName = "agent-cli"
	// CommandAgentVersion is the agent version of a gateway's trajectories when the CLI named
	// none in its User-Agent.
	CommandAgentVersion = "unknown"
)

// GatewaySession is one job's access to the model gateway (package gateway): a token, the
// socket it is served on, and what the gateway saw of the CLI's model traffic.
type GatewaySession interface {
	// Token is the per-job token the CLI presents instead of a key.
	Token() string
	// Socket is the session's own socket file in the gateway's directory ("": the shared one).
	Socket() string
	Usage() Usage
	// Turns is how many model calls of the CLI's main loop got an answer.
	Turns() int
	Activations() []activation.Activation
	// Record is the run in ATIF, as the gateway recorded it, and whether it holds every tool
	// call the model asked for.
	Record() (t *atif.Trajectory, complete bool)
	// BudgetExhausted says the gateway refused a request for the job's token budget.
	BudgetExhausted() bool
	// AgentVersion is the CLI's name and version from the User-Agent it sent
	// ("claude-cli/2.1.240"); "" when it named none.
	AgentVersion() string
	Close()
}

// OpenGateway opens a gateway session for a job: its token budget and, when set, the
// detector of the skills whose bodies may enter the model's context.
type OpenGateway func(jobID string, maxTokens int64, skills *activation.Detector) (GatewaySession, error)

// CommandConfig says how to run an agent CLI.
//
// Placeholders, in Template elements and Env values, replaced in one pass (a prompt that
// contains "{{token}}" stays literal): {{prompt}} the case's input, {{token}} the job's gateway
// token, {{base_url}} the forwarder's base URL with OpenAI's version path
// (http://127.0.0.1:PORT/v1), {{gateway_url}} the same without it (http://127.0.0.1:PORT, for
// SDKs that append /v1 or /v1beta themselves: Claude Code's ANTHROPIC_BASE_URL, Gemini CLI's
// GOOGLE_GEMINI_BASE_URL), {{workdir}} the request's work dir, {{skills_dir}} SkillsDir. When
// no Template element contains {{prompt}}, the prompt goes on the CLI's stdin (so a template
// ending in "-" reads it there, for CLIs that take "-" for stdin).
type CommandConfig struct {
	// Template is the CLI's argv; never run through a shell. Template[0] must not start with
	// "-" nor contain "=" (it follows env(1)'s assignments).
	Template []string
	// Env is added to the CLI's environment, e.g. OPENAI_BASE_URL={{base_url}},
	// OPENAI_API_KEY={{token}}.
	Env map[string]string
	// Gateway, when set, gives each run a session (budget: Request.Limits.MaxTokens) and wraps
	// the CLI in the forwarder; nil runs the CLI as is ({{token}}, {{base_url}} and
	// {{gateway_url}} are then "").
	Gateway OpenGateway
	// GatewayDir is the gateway's socket directory inside the sandbox (default
	// DefaultGatewayDir); a session's socket is found there by name.
	GatewayDir string
	// ForwardPort is the forwarder's loopback port in the sandbox (default DefaultForwardPort).
	ForwardPort int
	// SkillsDir, when set, is where the CLI's own skill loader looks (for example
	// /work/.claude/skills): before the CLI starts, each skill of the job's catalog is copied
	// there under its name and made read-only, so the CLI finds the skills the arm gives it
	// (none of the skill under test for without_skill, its old version for old_skill). It
	// must be an absolute path under a writable directory of the sandbox (/work, /tmp, or the
	// sandbox user's HOME).
	SkillsDir string
}

// Command is the command agent: an agent CLI (Claude Code, Codex, Gemini CLI, ...) run inside
// the job's sandbox, whose stdout is the answer. Its model traffic goes through the model
// gateway, so the sandbox only ever holds a per-job token. Each job's sandbox is a fresh
// container, so the CLI's HOME (a tmpfs) is fresh and writable for its settings.
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
	if cfg.GatewayDir == "" {
		cfg.GatewayDir = DefaultGatewayDir
	}
	if cfg.SkillsDir != "" && !sandbox.InWritableTree(cfg.SkillsDir) {
		return nil, fmt.Errorf("agent: command: skills_dir %q must be a clean absolute path under /work, /tmp or /home/sandbox", cfg.SkillsDir)
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
// gateway metered, also on error, and so is the trajectory the gateway recorded. Errors:
// ErrTimeLimit (req.Limits.WallTime or ctx's deadline), ErrTokenLimit (the CLI failed after
// the gateway refused it for the budget), ErrEmptyOutput, the sandbox's error.
func (a *Command) Run(ctx context.Context, sb Sandbox, req Request) (output string, tr Transcript, err error) {
	var sess GatewaySession
	if a.cfg.Gateway != nil {
		id, _ := ctx.Value(jobIDKey{}).(string)
		sess, err = a.cfg.Gateway(id, req.Limits.MaxTokens, req.Skills)
		if err != nil {
			tr.Stop = "error"
			return "", tr, err
		}
		defer sess.Close()
	}
	if req.Limits.WallTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, req.Limits.WallTime, errWallTime)
		defer cancel()
	}
	fail := func(stop string, e error) (string, Transcript, error) {
		tr.Stop = stop
		if note := maxOutputNote(tr.Trajectory); note != "" {
			// A CLI reports a cut answer as an error of its own, or retries it until its
			// time is up: the reason says what the model boundary saw.
			e = fmt.Errorf("%w (%s)", e, note)
		}
		return "", tr, e
	}
	if !req.SkillsPlaced {
		if _, err := a.PlaceSkills(ctx, sb, req); err != nil {
			if ctx.Err() != nil {
				return fail("time", fmt.Errorf("%w: placing the skills did not finish", ErrTimeLimit))
			}
			return fail("error", err)
		}
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
		tr.Trajectory, tr.ToolsSeen = sess.Record()
		tr.AgentVersion = sess.AgentVersion()
		// The calls the model asked for, as the gateway saw them: complete only when every
		// request matched a step of one conversation, no message was skipped and no answer
		// was cut (a CLI that compacts its history or runs sub-agents leaves calls out of
		// sight, and an incomplete list could pass tool_not_called).
		tr.ToolCalls = toolCallsOf(tr.Trajectory)
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
	if stop := refusalOf(tr.Trajectory); stop != "" {
		// The CLI printed something, but the model's last answer was a refusal or a safety
		// stop: the case must not pass on whatever the CLI made of it.
		return fail("error", fmt.Errorf("agent: command: the model stopped with %q (a refusal or safety stop)", stop))
	}
	tr.Stop = "final"
	return output, tr, nil
}

// placeSkillsScript copies skill directories into the CLI's skills directory and takes their
// write permission away: $1 is the directory, then pairs of name and source. Names and paths
// are arguments, never part of the script.
const placeSkillsScript = `set -eu
dest=$1; shift
mkdir -p "$dest"
while [ $# -ge 2 ]; do
  rm -rf "$dest/$1"
  cp -R "$2" "$dest/$1"
  chmod -R a-w "$dest/$1"
  shift 2
done`

// skillName is what a catalog name must look like to become a directory name.
var skillName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// PlaceSkills puts the job's catalog where the CLI's own loader looks (SkillsDir), one
// directory per skill under its name, and returns that directory ("" when the agent has no
// SkillsDir and nothing was placed). The catalog is the arm's: a without_skill job's lacks
// the skill under test, an old_skill job's holds its old version. Run calls it unless
// req.SkillsPlaced says the caller did: the worker places the skills before it lists the
// work directory, so that the copies, which land there when SkillsDir is under it, are never
// taken for files the agent made.
func (a *Command) PlaceSkills(ctx context.Context, sb Sandbox, req Request) (string, error) {
	if a.cfg.SkillsDir == "" {
		return "", nil
	}
	return a.cfg.SkillsDir, a.placeSkills(ctx, sb, req)
}

func (a *Command) placeSkills(ctx context.Context, sb Sandbox, req Request) error {
	argv := []string{"bash", "-c", placeSkillsScript, "place-skills", a.cfg.SkillsDir}
	seen := map[string]bool{}
	for _, ref := range req.Catalog {
		if !skillName.MatchString(ref.Name) || seen[ref.Name] || !strings.HasSuffix(ref.Location, "/SKILL.md") {
			continue
		}
		seen[ref.Name] = true
		argv = append(argv, ref.Name, path.Dir(ref.Location))
	}
	timeout := req.Limits.WallTime
	if timeout <= 0 || timeout > time.Minute {
		timeout = time.Minute
	}
	res, err := sb.Exec(ctx, argv, nil, req.WorkDir, timeout)
	switch {
	case err != nil:
		return fmt.Errorf("agent: command: placing the skills in %s: %w", a.cfg.SkillsDir, err)
	case res.TimedOut:
		return fmt.Errorf("%w: placing the skills did not finish", ErrTimeLimit)
	case res.ExitCode != 0:
		return fmt.Errorf("agent: command: placing the skills in %s failed (status %d): %s", a.cfg.SkillsDir, res.ExitCode, excerpt(res.Stderr))
	}
	return nil
}

// maxOutputNote says how many of the model's answers ended at their max output, as the
// gateway recorded them ("" when none did).
func maxOutputNote(t *atif.Trajectory) string {
	if t == nil {
		return ""
	}
	n, _ := t.Extra[atif.ExtraMaxOutputAnswers].(int)
	if n == 0 {
		return ""
	}
	tokens, _ := t.Extra[atif.ExtraMaxOutputReached].(int64)
	what := "answer of the model was cut at its max output"
	if n > 1 {
		what = "answers of the model were cut at their max output"
	}
	// The max output was the CLI's own, the agent's max_output_tokens or what the budget
	// left: the trajectory's steps say which answers, the config says which figure.
	return fmt.Sprintf("%d %s (up to %d tokens)", n, what, tokens)
}

// refusalOf is the stop reason of a trajectory's last agent step when it is a refusal or a
// safety stop ("" else).
func refusalOf(t *atif.Trajectory) string {
	if t == nil {
		return ""
	}
	for i := len(t.Steps) - 1; i >= 0; i-- {
		if t.Steps[i].Source == atif.SourceAgent {
			s, _ := t.Steps[i].Extra[atif.ExtraStopReason].(string)
			return s
		}
	}
	return ""
}

// command is the argv and stdin of one run.
func (a *Command) command(req Request, sess GatewaySession) ([]string, []byte) {
	var token, root, socket string
	if sess != nil {
		token = sess.Token()
		root = "http://127.0.0.1:" + strconv.Itoa(a.cfg.ForwardPort)
		socket = path.Join(a.cfg.GatewayDir, cmp.Or(sess.Socket(), "gateway.sock"))
	}
	baseURL := ""
	if root != "" {
		baseURL = root + "/v1"
	}
	r := strings.NewReplacer("{{prompt}}", req.Input, "{{token}}", token, "{{base_url}}", baseURL,
		"{{gateway_url}}", root, "{{workdir}}", req.WorkDir, "{{skills_dir}}", a.cfg.SkillsDir)
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
		argv = append(argv, "python3", "-c", forwarderScript, socket, strconv.Itoa(a.cfg.ForwardPort))
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
