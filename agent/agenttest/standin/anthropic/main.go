// Command anthropic stands in for Claude Code: a minimal agent loop on the Anthropic Messages
// API through the official Go SDK. It reads its endpoint and key from the variables Claude
// Code reads (ANTHROPIC_BASE_URL without /v1; ANTHROPIC_API_KEY sent as x-api-key, or
// ANTHROPIC_AUTH_TOKEN as a Bearer token) and its skills from .claude/skills in the working
// directory and in $HOME, and from $SKILLS_DIR.
//
//	anthropic [-stream] [-model m] [prompt]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/skillfleet/skillfleet/agent/agenttest/standin"
)

func main() { standin.Main("anthropic", run) }

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("anthropic", flag.ContinueOnError)
	stream := fs.Bool("stream", false, "stream the answers (as Claude Code does)")
	model := fs.String("model", standin.Env(getenv, "ANTHROPIC_MODEL"), "model name")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *model == "" {
		*model = "claude-sonnet-4-5"
	}
	prompt, err := standin.Prompt(fs.Args(), stdin)
	if err != nil {
		return err
	}
	base := getenv("ANTHROPIC_BASE_URL")
	if base == "" {
		return errors.New("ANTHROPIC_BASE_URL is not set")
	}
	// Only what the environment variables above say: no profile, no federation. The SDK (v2)
	// would send an API key as a Bearer token and its own API version; Claude Code sends the
	// key as x-api-key and version 2023-06-01, and a gateway sees what Claude Code sends.
	opts := []option.RequestOption{option.WithoutEnvironmentDefaults(), option.WithBaseURL(base),
		option.WithMaxRetries(2), option.WithHeader("anthropic-version", "2023-06-01")}
	switch {
	case getenv("ANTHROPIC_API_KEY") != "":
		opts = append(opts, option.WithHeader("x-api-key", getenv("ANTHROPIC_API_KEY")))
	case getenv("ANTHROPIC_AUTH_TOKEN") != "":
		opts = append(opts, option.WithAuthToken(getenv("ANTHROPIC_AUTH_TOKEN")))
	default:
		return errors.New("neither ANTHROPIC_API_KEY nor ANTHROPIC_AUTH_TOKEN is set")
	}
	client := anthropic.NewClient(opts...)

	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	home, _ := os.UserHomeDir()
	system, err := standin.Catalog(standin.SkillDirs(wd, home, []string{".claude/skills"}, []string{".claude/skills"}, getenv))
	if err != nil {
		return err
	}
	var tools []anthropic.ToolUnionParam
	for _, t := range standin.Tools() {
		schema := anthropic.ToolInputSchemaParam{Properties: t.Schema()["properties"], Required: t.Params}
		tool := anthropic.ToolUnionParamOfTool(schema, t.Name)
		tool.OfTool.Description = anthropic.String(t.Description)
		tools = append(tools, tool)
	}
	params := anthropic.MessageNewParams{
		Model: *model, MaxTokens: 8192,
		System:   []anthropic.TextBlockParam{{Text: system}},
		Tools:    tools,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
	}
	for range standin.MaxTurns {
		msg, err := ask(ctx, client, params, *stream)
		if err != nil {
			return err
		}
		params.Messages = append(params.Messages, msg.ToParam())
		var text strings.Builder
		var results []anthropic.ContentBlockParamUnion
		for _, b := range msg.Content {
			switch b.Type {
			case "text":
				text.WriteString(b.Text)
			case "tool_use":
				out := standin.RunTool(ctx, wd, b.Name, b.Input)
				results = append(results, anthropic.NewToolResultBlock(b.ID, out, false))
			}
		}
		if msg.StopReason == anthropic.StopReasonRefusal {
			return fmt.Errorf("%w (stop_reason refusal)", standin.ErrRefused)
		}
		if len(results) == 0 {
			_, err := fmt.Fprintln(stdout, text.String())
			return err
		}
		params.Messages = append(params.Messages, anthropic.NewUserMessage(results...))
	}
	return fmt.Errorf("no answer after %d turns", standin.MaxTurns)
}

// ask sends one turn and returns the model's message, accumulated from the events when
// streaming.
func ask(ctx context.Context, client anthropic.Client, params anthropic.MessageNewParams, stream bool) (*anthropic.Message, error) {
	if !stream {
		return client.Messages.New(ctx, params)
	}
	s := client.Messages.NewStreaming(ctx, params)
	defer s.Close()
	msg := anthropic.Message{}
	for s.Next() {
		if err := msg.Accumulate(s.Current()); err != nil {
			return nil, err
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return &msg, nil
}
