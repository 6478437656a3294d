// Command gemini stands in for the Gemini CLI: a minimal agent loop on the Gemini API through
// the official Go SDK (google.golang.org/genai). It reads its endpoint and key from the
// variables the Gemini CLI reads (GOOGLE_GEMINI_BASE_URL without a version path;
// GEMINI_API_KEY, sent as x-goog-api-key) and its skills from .gemini/skills in the working
// directory and in $HOME, and from $SKILLS_DIR.
//
//	gemini [-stream] [-model m] [prompt]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"google.golang.org/genai"

	"github.com/skillfleet/skillfleet/agent/agenttest/standin"
)

func main() { standin.Main("gemini", run) }

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("gemini", flag.ContinueOnError)
	stream := fs.Bool("stream", false, "stream the answers (as the Gemini CLI does)")
	model := fs.String("model", standin.Env(getenv, "GEMINI_MODEL"), "model name")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *model == "" {
		*model = "gemini-2.5-pro"
	}
	prompt, err := standin.Prompt(fs.Args(), stdin)
	if err != nil {
		return err
	}
	base, key := getenv("GOOGLE_GEMINI_BASE_URL"), getenv("GEMINI_API_KEY")
	if base == "" || key == "" {
		return errors.New("GOOGLE_GEMINI_BASE_URL and GEMINI_API_KEY must be set")
	}
	// The SDK retries only when asked to; three attempts is two retries with its backoff.
	attempts := int32(3)
	client, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: key, Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: base, APIVersion: "v1beta",
			RetryOptions: &genai.HTTPRetryOptions{Attempts: &attempts}}})
	if err != nil {
		return err
	}

	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	home, _ := os.UserHomeDir()
	system, err := standin.Catalog(standin.SkillDirs(wd, home, []string{".gemini/skills"}, []string{".gemini/skills"}, getenv))
	if err != nil {
		return err
	}
	var decls []*genai.FunctionDeclaration
	for _, t := range standin.Tools() {
		decls = append(decls, &genai.FunctionDeclaration{Name: t.Name, Description: t.Description,
			ParametersJsonSchema: t.Schema()})
	}
	config := &genai.GenerateContentConfig{
		SystemInstruction: genai.NewContentFromText(system, genai.RoleUser),
		Tools:             []*genai.Tool{{FunctionDeclarations: decls}},
	}
	contents := []*genai.Content{genai.NewContentFromText(prompt, genai.RoleUser)}
	for range standin.MaxTurns {
		turn, err := ask(ctx, client, *model, contents, config, *stream)
		if err != nil {
			return err
		}
		contents = append(contents, turn)
		var text strings.Builder
		var results []*genai.Part
		for _, p := range turn.Parts {
			switch {
			case p.FunctionCall != nil:
				args, _ := json.Marshal(p.FunctionCall.Args)
				out := standin.RunTool(ctx, wd, p.FunctionCall.Name, args)
				// The Gemini CLI wraps a tool's output the same way.
				r := genai.NewPartFromFunctionResponse(p.FunctionCall.Name, map[string]any{"output": out})
				r.FunctionResponse.ID = p.FunctionCall.ID
				results = append(results, r)
			case !p.Thought:
				text.WriteString(p.Text)
			}
		}
		if len(results) == 0 {
			_, err := fmt.Fprintln(stdout, text.String())
			return err
		}
		contents = append(contents, genai.NewContentFromParts(results, genai.RoleUser))
	}
	return fmt.Errorf("no answer after %d turns", standin.MaxTurns)
}

// ask sends one turn and returns the model's content; a stream's chunks are merged, text
// into one part per kind (thought or not), function calls kept whole.
func ask(ctx context.Context, client *genai.Client, model string, contents []*genai.Content, config *genai.GenerateContentConfig, stream bool) (*genai.Content, error) {
	var chunks []*genai.GenerateContentResponse
	if stream {
		for resp, err := range client.Models.GenerateContentStream(ctx, model, contents, config) {
			if err != nil {
				return nil, err
			}
			chunks = append(chunks, resp)
		}
	} else {
		resp, err := client.Models.GenerateContent(ctx, model, contents, config)
		if err != nil {
			return nil, err
		}
		chunks = append(chunks, resp)
	}
	turn := &genai.Content{Role: genai.RoleModel}
	var finish genai.FinishReason
	for _, resp := range chunks {
		if resp.PromptFeedback != nil && resp.PromptFeedback.BlockReason != "" {
			return nil, fmt.Errorf("%w: prompt blocked (%s)", standin.ErrRefused, resp.PromptFeedback.BlockReason)
		}
		if len(resp.Candidates) == 0 {
			continue
		}
		c := resp.Candidates[0]
		if c.FinishReason != "" {
			finish = c.FinishReason
		}
		if c.Content == nil {
			continue
		}
		for _, p := range c.Content.Parts {
			last := len(turn.Parts) - 1
			if p.FunctionCall == nil && p.Text != "" && last >= 0 && turn.Parts[last].FunctionCall == nil &&
				turn.Parts[last].Thought == p.Thought && p.ThoughtSignature == nil {
				turn.Parts[last].Text += p.Text
				continue
			}
			turn.Parts = append(turn.Parts, p)
		}
	}
	switch finish {
	case genai.FinishReasonStop, genai.FinishReasonUnspecified, genai.FinishReasonMaxTokens:
		return turn, nil
	case genai.FinishReasonSafety, genai.FinishReasonProhibitedContent, genai.FinishReasonBlocklist,
		genai.FinishReasonSPII, genai.FinishReasonRecitation, genai.FinishReasonImageSafety:
		return nil, fmt.Errorf("%w: finishReason %s", standin.ErrRefused, finish)
	}
	return nil, fmt.Errorf("finishReason %s", finish)
}
