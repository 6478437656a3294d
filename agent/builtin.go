package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
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
	// Activated are the skills whose SKILL.md the model read, in order, once each.
	Activated []string
	// ActivatedAt[i] is the turn (from 1) in which Activated[i] was read; an agent that does
	// not know leaves it shorter than Activated.
	ActivatedAt []int
	// ToolsSeen says ToolCalls and Activated are complete: the agent ran every tool call
	// itself. A command agent's CLI runs its own tools, out of sight, and leaves it false.
	ToolsSeen bool
	Turns     int
	Usage     Usage
	// Stop says why the run ended: "final" (an answer), "turns", "tokens", "time" (a limit),
	// or "error" (the endpoint, the sandbox, an empty answer, cancellation).
	Stop string
}

// The run's errors. Limit errors are wrapped with details; errors.Is finds them.
var (
	ErrTurnLimit   = errors.New("agent: turn limit reached without a final answer")
	ErrTokenLimit  = errors.New("agent: token limit exceeded")
	ErrTimeLimit   = errors.New("agent: wall time limit reached")
	ErrEmptyOutput = errors.New("agent: the final message is empty")
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
	tr.ToolsSeen = true // every tool call goes through ts.run below
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

	msgs := []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage(systemPrompt(req.Catalog, ts.names, req.WorkDir)),
		openai.UserMessage(req.Input),
	}
	tools := ts.definitions()
	activated := map[string]bool{}

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
		p := openai.ChatCompletionNewParams{Messages: msgs}
		if len(tools) > 0 {
			p.Tools = tools
		}
		comp, u, err := a.c.Chat(ctx, p)
		tr.Usage.Add(u)
		if err != nil {
			return ended(fmt.Errorf("agent: turn %d: %w", tr.Turns, err))
		}
		if lim.MaxTokens > 0 && tr.Usage.Total() > lim.MaxTokens {
			return fail("tokens", fmt.Errorf("%w: %d tokens used, limit %d", ErrTokenLimit, tr.Usage.Total(), lim.MaxTokens))
		}
		msg := comp.Choices[0].Message
		a.log.Debug("agent turn", zap.Int("turn", tr.Turns), zap.Int("tool_calls", len(msg.ToolCalls)),
			zap.Int64("tokens", tr.Usage.Total()))
		if len(msg.ToolCalls) == 0 {
			out := msg.Content
			if strings.TrimSpace(out) == "" {
				// A refusal is what the model said; assertions judge it like any answer.
				out = msg.Refusal
			}
			if strings.TrimSpace(out) == "" {
				return fail("error", fmt.Errorf("%w (turn %d, finish reason %q)", ErrEmptyOutput, tr.Turns,
					comp.Choices[0].FinishReason))
			}
			tr.Stop = "final"
			return out, tr, nil
		}
		if tr.Turns >= lim.MaxTurns {
			// No turn is left to show the model these calls' results: do not run them.
			return fail("turns", fmt.Errorf("%w (%d turns)", ErrTurnLimit, lim.MaxTurns))
		}
		msgs = append(msgs, msg.ToParam())
		for _, call := range msg.ToolCalls {
			name, args := call.Function.Name, call.Function.Arguments
			if call.Type == "custom" {
				name, args = call.Custom.Name, call.Custom.Input
			}
			res, err := ts.run(ctx, sb, name, args)
			tr.ToolCalls = append(tr.ToolCalls, res.call)
			if err != nil {
				return ended(fmt.Errorf("agent: turn %d: tool %s: %w", tr.Turns, name, err))
			}
			if res.activated != "" && !activated[res.activated] {
				activated[res.activated] = true
				tr.Activated = append(tr.Activated, res.activated)
				tr.ActivatedAt = append(tr.ActivatedAt, tr.Turns)
			}
			msgs = append(msgs, openai.ToolMessage(res.content, call.ID))
		}
	}
}
