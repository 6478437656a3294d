package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/skillfleet/skillfleet/activation"
	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/agent/agenttest"
)

// sdkScript is the two-turn tool conversation the SDK tests script: the model asks for the
// skill's SKILL.md with bash, then answers. Its usage differs per turn, so that each step's
// tokens can be told apart.
func sdkScript(_ int, c agenttest.Conv) (agenttest.Turn, *agenttest.Reply) {
	if len(c.ToolResults) == 0 {
		return agenttest.Turn{Thinking: "I should read the skill.", Calls: []agenttest.Call{{ID: "call_1", Name: "bash",
			Arguments: `{"command":"cat /skills/release-notes/SKILL.md"}`}},
			Usage: agenttest.Tokens{Prompt: 120, Completion: 15, CacheRead: 100}}, nil
	}
	return agenttest.Turn{Text: "Release notes drafted.", Usage: agenttest.Tokens{Prompt: 260, Completion: 7, CacheRead: 100}}, nil
}

// skillResult is what the CLI's bash call returns: the skill's file, body and all.
var skillResult = "---\nname: release-notes\ndescription: Writes release notes.\n---\n" + fixtureBody

// sdkCheck checks what the gateway metered and recorded of sdkScript's conversation.
func sdkCheck(t *testing.T, s *Session, answer string) {
	t.Helper()
	if answer != "Release notes drafted." {
		t.Errorf("the SDK got %q", answer)
	}
	u := s.Usage()
	// Price: 1 per prompt token, 2 per completion token, 0.5 per cache read (a million a
	// MTok makes the cost count tokens).
	if u.PromptTokens != 380 || u.CompletionTokens != 22 || u.CacheReadTokens != 200 || u.Cost != 180+100+44 {
		t.Errorf("usage %+v, want 380 prompt (200 from the cache) + 22, costing 324", u)
	}
	if s.Turns() != 2 {
		t.Errorf("%d turns, want 2", s.Turns())
	}
	acts := s.Activations()
	if len(acts) != 1 || acts[0].Skill != "release-notes" || acts[0].Turn != 2 {
		t.Errorf("activations %+v, want release-notes at turn 2 (its body came back from turn 1's call)", acts)
	}
	traj := s.Trajectory()
	if err := traj.Validate(); err != nil {
		t.Fatal(err)
	}
	var agentSteps []int
	for i, st := range traj.Steps {
		if st.Source == "agent" {
			agentSteps = append(agentSteps, i)
		}
	}
	if len(agentSteps) != 2 {
		t.Fatalf("%d agent steps, want 2: %+v", len(agentSteps), traj.Steps)
	}
	first, last := traj.Steps[agentSteps[0]], traj.Steps[agentSteps[1]]
	if len(first.ToolCalls) != 1 || first.ToolCalls[0].FunctionName != "bash" || first.Observation == nil ||
		!strings.Contains(first.Observation.Results[0].Content, "git log") || first.Metrics == nil ||
		first.Metrics.PromptTokens != 120 || first.Metrics.CachedTokens != 100 {
		t.Errorf("first turn %+v", first)
	}
	if last.Message != "Release notes drafted." || last.Metrics == nil || last.Metrics.PromptTokens != 260 || last.Metrics.CompletionTokens != 7 {
		t.Errorf("last turn %+v", last)
	}
	if !complete(traj) {
		t.Errorf("the trajectory of one straight conversation is not complete: %v", traj.Extra)
	}
}

// sdkSession serves a gateway in front of a scripted OpenAI upstream and opens a session
// that detects the release-notes skill.
func sdkSession(t *testing.T, api string, up *agenttest.Server) (gatewayFixture, *Session) {
	t.Helper()
	base := up.URL
	if api == APIOpenAI {
		base = up.BaseURL()
	}
	f := serveGateway(t, base, func(c *Config) {
		c.API = api
		c.Price = agent.Price{PromptPerMTok: 1e6, CompletionPerMTok: 2e6, CacheReadPerMTok: 0.5e6}
	})
	s, err := f.g.Open("job", Budget{}, activation.New([]activation.Skill{{Name: "release-notes", Body: fixtureBody}}))
	if err != nil {
		t.Fatal(err)
	}
	return f, s
}

// TestOpenAISDKThroughTheGateway drives the gateway with openai-go, Chat Completions and the
// Responses API, streamed and not, in a two-turn tool-using conversation.
func TestOpenAISDKThroughTheGateway(t *testing.T) {
	ctx := context.Background()
	bash := shared.FunctionDefinitionParam{Name: "bash", Parameters: map[string]any{"type": "object",
		"properties": map[string]any{"command": map[string]any{"type": "string"}}}}
	for _, tc := range []struct {
		name   string
		stream bool
		chat   bool
	}{{"chat", false, true}, {"chat streamed", true, true}, {"responses", false, false}, {"responses streamed", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			up := agenttest.NewOpenAI(t, agenttest.Scripted(sdkScript))
			f, s := sdkSession(t, APIOpenAI, up)
			client := openai.NewClient(option.WithBaseURL("http://gateway/v1/"), option.WithAPIKey(s.Token()),
				option.WithHTTPClient(f.client), option.WithMaxRetries(0))
			var answer string
			if tc.chat {
				msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a CLI."), openai.UserMessage("draft the notes")}
				ask := func() openai.ChatCompletionMessage {
					params := openai.ChatCompletionNewParams{Model: "cli-default", Messages: msgs,
						Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(bash)}}
					if !tc.stream {
						res, err := client.Chat.Completions.New(ctx, params)
						if err != nil {
							t.Fatal(err)
						}
						return res.Choices[0].Message
					}
					st := client.Chat.Completions.NewStreaming(ctx, params)
					acc := openai.ChatCompletionAccumulator{}
					for st.Next() {
						acc.AddChunk(st.Current())
					}
					if err := st.Err(); err != nil {
						t.Fatal(err)
					}
					return acc.Choices[0].Message
				}
				m := ask()
				if len(m.ToolCalls) != 1 {
					t.Fatalf("first answer %+v, want one call", m)
				}
				msgs = append(msgs, m.ToParam(), openai.ToolMessage(skillResult, m.ToolCalls[0].ID))
				answer = ask().Content
			} else {
				input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("draft the notes", responses.EasyInputMessageRoleUser)}
				ask := func() responses.Response {
					params := responses.ResponseNewParams{Model: "cli-default", Instructions: openai.String("You are a CLI."),
						Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input},
						Tools: []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "bash",
							Parameters: bash.Parameters, Strict: openai.Bool(false)}}}}
					if !tc.stream {
						res, err := client.Responses.New(ctx, params)
						if err != nil {
							t.Fatal(err)
						}
						return *res
					}
					st := client.Responses.NewStreaming(ctx, params)
					var done responses.Response
					for st.Next() {
						if ev := st.Current(); ev.Type == "response.completed" {
							done = ev.AsResponseCompleted().Response
						}
					}
					if err := st.Err(); err != nil {
						t.Fatal(err)
					}
					return done
				}
				r := ask()
				var call responses.ResponseFunctionToolCall
				for _, it := range r.Output {
					if it.Type == "function_call" {
						call = it.AsFunctionCall()
					}
				}
				if call.CallID == "" {
					t.Fatalf("first answer %+v, want a function call", r.Output)
				}
				input = append(input, responses.ResponseInputItemParamOfFunctionCall(call.Arguments, call.CallID, call.Name),
					responses.ResponseInputItemParamOfFunctionCallOutput(skillResult))
				input[len(input)-1].OfFunctionCallOutput.CallID = openai.String(call.CallID)
				answer = ask().OutputText()
			}
			sdkCheck(t, s, answer)
			// Upstream: the configured model every time, the real key, never the token.
			for _, r := range up.Requests() {
				var body struct{ Model string }
				_ = json.Unmarshal(r.Body, &body)
				if body.Model != "gw-model" || r.Header.Get("Authorization") != "Bearer "+realKey {
					t.Errorf("upstream request: model %q, authorization %q", body.Model, r.Header.Get("Authorization"))
				}
			}
		})
	}
}
