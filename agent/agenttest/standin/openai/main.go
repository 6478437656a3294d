// Command openai stands in for Codex: a minimal agent loop on the OpenAI Responses API
// (store false, the whole conversation sent each turn, as Codex does), or on Chat Completions
// with -chat, through the official Go SDK. It reads its endpoint and key from the variables
// Codex reads (OPENAI_BASE_URL with /v1; CODEX_API_KEY or OPENAI_API_KEY) and its skills from
// .agents/skills in the working directory and in $HOME, and from $SKILLS_DIR.
//
//	openai [-chat] [-stream] [-model m] [prompt]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/skillfleet/skillfleet/agent/agenttest/standin"
)

func main() { standin.Main("openai", run) }

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("openai", flag.ContinueOnError)
	chat := fs.Bool("chat", false, "speak Chat Completions instead of the Responses API")
	stream := fs.Bool("stream", false, "stream the answers (as Codex does)")
	model := fs.String("model", "gpt-5-codex", "model name")
	if err := fs.Parse(args); err != nil {
		return err
	}
	prompt, err := standin.Prompt(fs.Args(), stdin)
	if err != nil {
		return err
	}
	base, key := getenv("OPENAI_BASE_URL"), standin.Env(getenv, "CODEX_API_KEY", "OPENAI_API_KEY")
	if base == "" || key == "" {
		return errors.New("OPENAI_BASE_URL and CODEX_API_KEY or OPENAI_API_KEY must be set")
	}
	client := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey(key), option.WithMaxRetries(2))

	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	home, _ := os.UserHomeDir()
	system, err := standin.Catalog(standin.SkillDirs(wd, home, []string{".agents/skills"}, []string{".agents/skills"}, getenv))
	if err != nil {
		return err
	}
	l := loop{client: client, model: *model, system: system, dir: wd, stream: *stream}
	var answer string
	if *chat {
		answer, err = l.chat(ctx, prompt)
	} else {
		answer, err = l.responses(ctx, prompt)
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, answer)
	return err
}

type loop struct {
	client        openai.Client
	model, system string
	dir           string
	stream        bool
}

func (l loop) responses(ctx context.Context, prompt string) (string, error) {
	var tools []responses.ToolUnionParam
	for _, t := range standin.Tools() {
		tools = append(tools, responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
			Name: t.Name, Description: openai.String(t.Description), Parameters: t.Schema(), Strict: openai.Bool(false)}})
	}
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage(prompt, responses.EasyInputMessageRoleUser)}
	for range standin.MaxTurns {
		params := responses.ResponseNewParams{Model: l.model, Instructions: openai.String(l.system),
			Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}, Tools: tools,
			Store: openai.Bool(false), ParallelToolCalls: openai.Bool(true)}
		resp, err := l.respond(ctx, params)
		if err != nil {
			return "", err
		}
		calls := 0
		for _, item := range resp.Output {
			switch item.Type {
			case "message":
				for _, c := range item.Content {
					if c.Type == "refusal" {
						return "", fmt.Errorf("%w: %s", standin.ErrRefused, c.Refusal)
					}
				}
				input = append(input, responses.ResponseInputItemParamOfMessage(messageText(item), responses.EasyInputMessageRoleAssistant))
			case "function_call":
				fc := item.AsFunctionCall()
				calls++
				out := standin.RunTool(ctx, l.dir, fc.Name, []byte(fc.Arguments))
				input = append(input, responses.ResponseInputItemParamOfFunctionCall(fc.Arguments, fc.CallID, fc.Name),
					responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
						CallID: openai.String(fc.CallID),
						Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String(out)}}})
			}
		}
		if calls == 0 {
			return resp.OutputText(), nil
		}
	}
	return "", fmt.Errorf("no answer after %d turns", standin.MaxTurns)
}

func messageText(item responses.ResponseOutputItemUnion) string {
	var s string
	for _, c := range item.Content {
		s += c.Text
	}
	return s
}

// respond sends one turn; a stream's answer is its response.completed event's response, which
// carries the whole output, as Codex reads it.
func (l loop) respond(ctx context.Context, params responses.ResponseNewParams) (*responses.Response, error) {
	if !l.stream {
		return l.client.Responses.New(ctx, params)
	}
	s := l.client.Responses.NewStreaming(ctx, params)
	defer s.Close()
	for s.Next() {
		ev := s.Current()
		switch ev.Type {
		case "response.completed":
			r := ev.AsResponseCompleted().Response
			return &r, nil
		case "response.failed", "response.incomplete":
			return nil, fmt.Errorf("%s: %s", ev.Type, ev.Response.Error.Message)
		case "error":
			return nil, fmt.Errorf("stream error: %s", ev.Message)
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("the stream ended without response.completed")
}

func (l loop) chat(ctx context.Context, prompt string) (string, error) {
	var tools []openai.ChatCompletionToolUnionParam
	for _, t := range standin.Tools() {
		tools = append(tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: t.Name, Description: openai.String(t.Description), Parameters: t.Schema()}))
	}
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(l.system), openai.UserMessage(prompt)}
	for range standin.MaxTurns {
		params := openai.ChatCompletionNewParams{Model: l.model, Messages: msgs, Tools: tools}
		msg, err := l.complete(ctx, params)
		if err != nil {
			return "", err
		}
		if msg.Refusal != "" {
			return "", fmt.Errorf("%w: %s", standin.ErrRefused, msg.Refusal)
		}
		if len(msg.ToolCalls) == 0 {
			return msg.Content, nil
		}
		msgs = append(msgs, msg.ToParam())
		for _, c := range msg.ToolCalls {
			out := standin.RunTool(ctx, l.dir, c.Function.Name, []byte(c.Function.Arguments))
			msgs = append(msgs, openai.ToolMessage(out, c.ID))
		}
	}
	return "", fmt.Errorf("no answer after %d turns", standin.MaxTurns)
}

// complete sends one turn and returns the message, accumulated from the chunks when streaming.
func (l loop) complete(ctx context.Context, params openai.ChatCompletionNewParams) (*openai.ChatCompletionMessage, error) {
	if !l.stream {
		res, err := l.client.Chat.Completions.New(ctx, params)
		if err != nil {
			return nil, err
		}
		if len(res.Choices) == 0 {
			return nil, errors.New("no choices in the answer")
		}
		return &res.Choices[0].Message, nil
	}
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	s := l.client.Chat.Completions.NewStreaming(ctx, params)
	defer s.Close()
	acc := openai.ChatCompletionAccumulator{}
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if len(acc.Choices) == 0 {
		return nil, errors.New("no choices in the stream")
	}
	return &acc.Choices[0].Message, nil
}
