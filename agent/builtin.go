package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/activation"
	"github.com/skillfleet/skillfleet/atif"
	"go.uber.org/zap"
)

// Sandbox is what the built-in agent needs of a job's sandbox; the worker adapts
// sandbox.Sandbox to it.
type Sandbox interface {
	// Exec runs cmd (argv, no shell unless asked for) in workdir with stdin; timeout 0 means
	// only the job's deadline. An error means the sandbox failed, not the command.
	Exec(ctx context.Context, cmd []string, stdin []byte, workdir string, timeout time.Duration) (ExecResult, error)
}

// ExecResult is what a command did in the sandbox.
type ExecResult struct {
	ExitCode       int
	Stdout, Stderr []byte
	// Truncated says the sandbox capped the output.
	Truncated bool
	// TimedOut says the sandbox killed the command at a deadline; the sandbox is gone.
	TimedOut bool
}

// SkillRef is one skill of the suite's catalog.
type SkillRef struct {
	Name, Description string
	// Location is the SKILL.md path inside the sandbox, e.g. /skills/env-selector/SKILL.md.
	Location string
}

// Limits bound one job's run. Zero fields: MaxTurns 50, MaxTokens unlimited, WallTime only the
// caller's context, MaxToolOutput 16 KiB.
type Limits struct {
	MaxTurns      int           // model calls
	MaxTokens     int64         // prompt + completion tokens, cumulative
	WallTime      time.Duration // the whole run
	MaxToolOutput int           // bytes of one tool result shown to the model
}

// DefaultMaxTurns is Limits.MaxTurns when it is 0.
const DefaultMaxTurns = 50

// Request is one prompt case for the built-in agent.
type Request struct {
	Input   string
	Catalog []SkillRef
	// AllowedTools is the skill's allowed-tools field; "" allows bash, read_file and write_file.
	AllowedTools string
	// WorkDir is the commands' working directory in the sandbox ("" = the sandbox's default;
	// then relative paths cannot activate skills).
	WorkDir string
	Limits  Limits
	// Skills detects, by content, which skills' bodies enter the model's context (see package
	// activation); nil leaves only the read of a listed SKILL.md path as an activation.
	Skills *activation.Detector
	// SkillsPlaced says the caller has already placed the catalog's skills where a command
	// agent's CLI looks for them (Command.PlaceSkills), so Run does not place them again.
	// The built-in agent reads the skills where they are mounted and ignores it.
	SkillsPlaced bool
}

// ToolCall is one tool call in the transcript.
type ToolCall struct {
	Name string
	// Arguments are the model's JSON arguments (clipped to 4 KiB).
	Arguments string
	// Output is what the model was told (capped like the model saw it).
	Output string
	// ExitCode is the command's; -1 when nothing ran (refused or malformed call).
	ExitCode int
	// Error says why the call failed or was refused; "" when it ran.
	Error string
}

// Transcript is what a run did, for the report and for debugging a failed case.
type Transcript struct {
	ToolCalls []ToolCall
	// Activated are the skills whose SKILL.md body entered the model's context, in order, once
	// each; Activations says at which turn.
	Activated   []string
	Activations []activation.Activation
	// ToolsSeen says ToolCalls is complete: the built-in agent ran every call itself; for a
	// command agent's CLI, the gateway saw one whole conversation holding every call.
	ToolsSeen bool
	// ActivationsSeen says Activated is complete: everything that entered the model's context
	// was scanned for the catalog's bodies (Request.Skills set; for a command agent, through
	// the model gateway).
	ActivationsSeen bool
	Turns           int
	Usage           Usage
	// Stop says why the run ended: "final" (an answer), "turns", "tokens", "time" (a limit),
	// or "error" (the endpoint, the sandbox, an empty answer, cancellation).
	Stop string
	// AgentVersion is a command agent's CLI name and version as it told the gateway
	// ("claude-cli/2.1.240", "codex_exec/0.162.1", "GeminiCLI/0.56.0"); "" when unknown, and
	// for the built-in agent.
	AgentVersion string
	// Trajectory is the whole conversation as the model saw it, in ATIF (see package atif):
	// tool outputs as shown to the model, arguments as the model wrote them, tokens per turn.
	// It is set on every return, an error's included, with what happened until then.
	Trajectory *atif.Trajectory
}

// BuiltInAgentName is the agent name in the built-in agent's trajectories; its version is the
// loop's, bumped when what a trajectory records changes.
const (
	BuiltInAgentName    = "skillfleet-builtin"
	BuiltInAgentVersion = "1"
)

// The run's errors. Limit errors are wrapped with details; errors.Is finds them.
var (
	ErrTurnLimit   = errors.New("agent: turn limit reached without a final answer")
	ErrTokenLimit  = errors.New("agent: token limit exceeded")
	ErrTimeLimit   = errors.New("agent: wall time limit reached")
	ErrEmptyOutput = errors.New("agent: the final message is empty")
	// ErrModelRefused is a provider's refusal or safety stop: no answer to judge.
	ErrModelRefused = errors.New("agent: the model refused or was stopped for safety")
)

// errWallTime is the cause of the run's own deadline.
var errWallTime = errors.New("wall time")

// BuiltIn is the built-in tool-using agent: the model loop runs here, in the worker, and every
// tool call executes in the job's sandbox.
type BuiltIn struct {
	c   *Client
	log *zap.Logger
}

// NewBuiltIn makes the built-in agent on a model client.
func NewBuiltIn(c *Client, log *zap.Logger) *BuiltIn {
	if log == nil {
		log = zap.NewNop()
	}
	return &BuiltIn{c: c, log: log}
}

// Run answers req.Input with the model, executing its tool calls in sb. The output is the final
// assistant message, the one without tool calls. On any error the output is "" (never a partial
// answer that assertions could pass) and the transcript says how far the run got: a limit gives
// ErrTurnLimit, ErrTokenLimit or ErrTimeLimit (also for the caller's deadline), an empty answer
// ErrEmptyOutput, the endpoint an *Error, the sandbox its error.
func (a *BuiltIn) Run(ctx context.Context, sb Sandbox, req Request) (output string, tr Transcript, err error) {
	lim := req.Limits
	if lim.MaxTurns <= 0 {
		lim.MaxTurns = DefaultMaxTurns
	}
	tr.ToolsSeen = true       // every tool call goes through ts.run below
	tr.ActivationsSeen = true // every tool result is scanned below, by content or by path
	ts, err := newToolset(req)
	if err != nil {
		tr.Stop = "error"
		return "", tr, fmt.Errorf("agent: %w", err)
	}
	if len(ts.policy.ignored) > 0 {
		a.log.Debug("allowed-tools entries the built-in agent has no tool for", zap.Strings("entries", ts.policy.ignored))
	}
	if lim.WallTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, lim.WallTime, errWallTime)
		defer cancel()
	}

	system := systemPrompt(req.Catalog, ts.names, req.WorkDir)
	msgs := []Message{{Role: RoleUser, Text: req.Input}}
	traj := &atif.Trajectory{SchemaVersion: atif.SchemaVersion, Agent: atif.Agent{Name: BuiltInAgentName, Version: BuiltInAgentVersion, ModelName: a.c.Model()}}
	traj.Add(atif.SourceSystem, system)
	traj.Add(atif.SourceUser, req.Input)
	tr.Trajectory = traj
	defer traj.Finish()
	tools := ts.definitions()
	seen := activation.NewTracker(req.Skills)
	blind := map[string]bool{}
	if req.Skills == nil {
		for _, s := range req.Catalog {
			blind[s.Name] = true
		}
	} else {
		for _, n := range req.Skills.Unfingerprinted() {
			blind[n] = true
		}
	}
	// activate records a skill's first activation; the body is shown to the model at the next
	// turn.
	activate := func(skill string) {
		if !slices.Contains(tr.Activated, skill) {
			tr.Activated = append(tr.Activated, skill)
			tr.Activations = append(tr.Activations, activation.Activation{Skill: skill, Turn: tr.Turns + 1})
		}
	}

	fail := func(stop string, e error) (string, Transcript, error) {
		tr.Stop = stop
		return "", tr, e
	}
	// ended turns a failure into the time limit when the run's or the caller's deadline passed.
	ended := func(e error) (string, Transcript, error) {
		if errors.Is(e, errSandboxTimedOut) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			what := "the job's deadline"
			if errors.Is(context.Cause(ctx), errWallTime) {
				what = lim.WallTime.String()
			}
			return fail("time", fmt.Errorf("%w (%s) after %d turns: %w", ErrTimeLimit, what, tr.Turns, e))
		}
		return fail("error", e)
	}

	for {
		if err := ctx.Err(); err != nil {
			return ended(err)
		}
		tr.Turns++
		ans, u, err := a.c.Converse(ctx, Conversation{System: system, Messages: msgs, Tools: tools})
		tr.Usage.Add(u)
		if err != nil {
			return ended(fmt.Errorf("agent: turn %d: %w", tr.Turns, err))
		}
		step := traj.Add(atif.SourceAgent, ans.Text)
		step.ModelName = ans.Model
		step.ReasoningContent = ans.Reasoning
		step.Metrics = &atif.Metrics{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, CachedTokens: u.CacheReadTokens, CostUSD: u.Cost}
		if lim.MaxTokens > 0 && tr.Usage.Total() > lim.MaxTokens {
			return fail("tokens", fmt.Errorf("%w: %d tokens used, limit %d", ErrTokenLimit, tr.Usage.Total(), lim.MaxTokens))
		}
		a.log.Debug("agent turn", zap.Int("turn", tr.Turns), zap.Int("tool_calls", len(ans.Calls)),
			zap.Int64("tokens", tr.Usage.Total()))
		if ans.Stop == StopMaxTokens {
			// Cut at its max output, marked as the model gateway marks a CLI's cut answers.
			step.Extra = map[string]any{atif.ExtraMaxOutputReached: u.CompletionTokens}
			if traj.Extra == nil {
				traj.Extra = map[string]any{}
			}
			n, _ := traj.Extra[atif.ExtraMaxOutputAnswers].(int)
			most, _ := traj.Extra[atif.ExtraMaxOutputReached].(int64)
			traj.Extra[atif.ExtraMaxOutputAnswers] = n + 1
			traj.Extra[atif.ExtraMaxOutputReached] = max(most, u.CompletionTokens)
		}
		if ans.Stop == StopRefusal || ans.Stop == StopSafety {
			// The provider's refusal or safety stop is no answer to judge: the case errors
			// with its reason, whatever text came with it.
			step.Extra = map[string]any{atif.ExtraStopReason: ans.StopDetail}
			return fail("error", fmt.Errorf("%w (turn %d): %s %q", ErrModelRefused, tr.Turns, ans.Stop, ans.StopDetail))
		}
		if len(ans.Calls) == 0 {
			out := ans.Text
			if strings.TrimSpace(out) == "" {
				return fail("error", fmt.Errorf("%w (turn %d, finish reason %q)", ErrEmptyOutput, tr.Turns, ans.StopDetail))
			}
			step.Message = out
			tr.Stop = "final"
			return out, tr, nil
		}
		if tr.Turns >= lim.MaxTurns {
			// No turn is left to show the model these calls' results: do not run them.
			return fail("turns", fmt.Errorf("%w (%d turns)", ErrTurnLimit, lim.MaxTurns))
		}
		msgs = append(msgs, Message{Role: RoleAssistant, Text: ans.Text, Calls: ans.Calls, Replay: ans.Replay})
		for _, call := range ans.Calls {
			name, args := call.Name, call.Arguments
			res, err := ts.run(ctx, sb, name, args)
			tr.ToolCalls = append(tr.ToolCalls, res.call)
			id := call.ID
			if id == "" {
				// ATIF needs an id to pair the call with its result; some servers send none.
				id = fmt.Sprintf("turn%d-call%d", tr.Turns, len(step.ToolCalls)+1)
			}
			step.ToolCalls = append(step.ToolCalls, atif.ToolCall{ToolCallID: id, FunctionName: name, Arguments: atif.Arguments(args)})
			if step.Observation == nil {
				step.Observation = &atif.Observation{}
			}
			step.Observation.Results = append(step.Observation.Results, atif.Result{SourceCallID: id, Content: res.content})
			if err != nil {
				return ended(fmt.Errorf("agent: turn %d: tool %s: %w", tr.Turns, name, err))
			}
			// By content, however the body was read; by path only for a skill whose body has no
			// fingerprint.
			for _, skill := range seen.Observe(tr.Turns+1, res.content) {
				activate(skill)
			}
			if res.activated != "" && blind[res.activated] {
				activate(res.activated)
			}
			msgs = append(msgs, Message{Role: RoleTool, Text: res.content, CallID: call.ID, CallName: name})
		}
	}
}
