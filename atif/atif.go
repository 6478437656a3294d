// Package atif is the Agent Trajectory Interchange Format, version 1.7 (Harbor's RFC 0001,
// "ATIF-v1.7", April 2026): the JSON document skillfleet writes for every prompt job, so that
// what an agent did can be read by any tool that reads ATIF.
//
// Only the parts skillfleet produces are modelled: the root, the agent, steps with their tool
// calls, observations and metrics, and final metrics. Every field the RFC marks optional is
// omitted when empty. Validate checks the RFC's rules a producer can break: sequential step
// ids from 1, a known source, agent-only fields only on agent steps, and every observation
// result naming a tool call of its step.
package atif

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// SchemaVersion is the version this package writes.
const SchemaVersion = "ATIF-v1.7"

// ExtraStopReason is the key of a step's extra that names why the model stopped when it was no
// answer (a refusal or a safety stop): what reads a trajectory must not take that step's
// message for the agent's answer.
const ExtraStopReason = "stop_reason"

// ExtraMaxOutputReached is the key of a step's extra when the provider ended its answer at the
// answer's max output (the value: that max output, in tokens); on a trajectory's extra, the
// largest such max output of any answer in the run. The answer is cut, not finished: an agent
// may retry it, and a CLI may fail over it.
const ExtraMaxOutputReached = "max_output_reached"

// ExtraMaxOutputAnswers is the key of a trajectory's extra that counts the answers ended at
// their max output, those no step shows (an agent's retries) included.
const ExtraMaxOutputAnswers = "max_output_answers"

// The step sources.
const (
	SourceSystem = "system"
	SourceUser   = "user"
	SourceAgent  = "agent"
)

// Trajectory is the root document.
type Trajectory struct {
	SchemaVersion string         `json:"schema_version"`
	SessionID     string         `json:"session_id,omitempty"`
	Agent         Agent          `json:"agent"`
	Steps         []Step         `json:"steps"`
	Notes         string         `json:"notes,omitempty"`
	FinalMetrics  *FinalMetrics  `json:"final_metrics,omitempty"`
	Extra         map[string]any `json:"extra,omitempty"`
}

// Agent names the agent that produced the trajectory.
type Agent struct {
	Name      string         `json:"name"`
	Version   string         `json:"version"`
	ModelName string         `json:"model_name,omitempty"`
	Extra     map[string]any `json:"extra,omitempty"`
}

// Step is one message of the conversation: a system prompt, a user message, or an agent turn
// with its tool calls and what they returned.
type Step struct {
	StepID    int    `json:"step_id"`
	Timestamp string `json:"timestamp,omitempty"`
	Source    string `json:"source"`
	ModelName string `json:"model_name,omitempty"`
	Message   string `json:"message"`
	// ReasoningContent is the model's thinking before this step's message, where the
	// provider returns it (Anthropic thinking blocks, Gemini thought parts).
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall     `json:"tool_calls,omitempty"`
	Observation      *Observation   `json:"observation,omitempty"`
	Metrics          *Metrics       `json:"metrics,omitempty"`
	Extra            map[string]any `json:"extra,omitempty"`
}

// ToolCall is one call an agent step made. Arguments is the JSON object the model wrote; a
// model that wrote something else is kept as {"_raw": "..."} so the document stays valid.
type ToolCall struct {
	ToolCallID   string          `json:"tool_call_id"`
	FunctionName string          `json:"function_name"`
	Arguments    json.RawMessage `json:"arguments"`
	Extra        map[string]any  `json:"extra,omitempty"`
}

// Observation is what the environment returned to an agent step.
type Observation struct {
	Results []Result `json:"results"`
}

// Result is one tool call's output.
type Result struct {
	SourceCallID string         `json:"source_call_id,omitempty"`
	Content      string         `json:"content"`
	Extra        map[string]any `json:"extra,omitempty"`
}

// Metrics are one agent step's model usage.
type Metrics struct {
	PromptTokens     int64   `json:"prompt_tokens,omitempty"`
	CompletionTokens int64   `json:"completion_tokens,omitempty"`
	CachedTokens     int64   `json:"cached_tokens,omitempty"`
	CostUSD          float64 `json:"cost_usd,omitempty"`
}

// FinalMetrics are the whole trajectory's totals.
type FinalMetrics struct {
	TotalPromptTokens     int64   `json:"total_prompt_tokens"`
	TotalCompletionTokens int64   `json:"total_completion_tokens"`
	TotalCostUSD          float64 `json:"total_cost_usd,omitempty"`
	TotalSteps            int     `json:"total_steps"`
}

// Arguments returns a tool call's arguments as ATIF wants them: a JSON object. Anything else
// (malformed JSON, a bare string) is wrapped as {"_raw": args}.
func Arguments(args string) json.RawMessage {
	// A valid document that starts with "{" is an object: no need to decode it.
	if t := strings.TrimLeft(args, " \t\r\n"); strings.HasPrefix(t, "{") && json.Valid([]byte(args)) {
		return json.RawMessage(args)
	}
	b, _ := json.Marshal(map[string]string{"_raw": args})
	return b
}

// Add appends a step with the next step id and returns it for the caller to fill in.
func (t *Trajectory) Add(source, message string) *Step {
	t.Steps = append(t.Steps, Step{StepID: len(t.Steps) + 1, Source: source, Message: message})
	return &t.Steps[len(t.Steps)-1]
}

// Finish sets FinalMetrics from the steps' metrics.
func (t *Trajectory) Finish() {
	fm := &FinalMetrics{TotalSteps: len(t.Steps)}
	for _, s := range t.Steps {
		if s.Metrics != nil {
			fm.TotalPromptTokens += s.Metrics.PromptTokens
			fm.TotalCompletionTokens += s.Metrics.CompletionTokens
			fm.TotalCostUSD += s.Metrics.CostUSD
		}
	}
	t.FinalMetrics = fm
}

// Validate reports every violation of the RFC's producer rules.
func (t *Trajectory) Validate() error {
	var errs []error
	if t.SchemaVersion != SchemaVersion {
		errs = append(errs, fmt.Errorf("schema_version %q, want %q", t.SchemaVersion, SchemaVersion))
	}
	if t.Agent.Name == "" || t.Agent.Version == "" {
		errs = append(errs, errors.New("agent.name and agent.version are required"))
	}
	for i, s := range t.Steps {
		at := fmt.Sprintf("steps[%d]", i)
		if s.StepID != i+1 {
			errs = append(errs, fmt.Errorf("%s: step_id %d, want %d (sequential from 1)", at, s.StepID, i+1))
		}
		switch s.Source {
		case SourceSystem, SourceUser:
			if s.ModelName != "" || len(s.ToolCalls) > 0 || s.Observation != nil || s.Metrics != nil {
				errs = append(errs, fmt.Errorf("%s: model_name, tool_calls, observation and metrics belong to agent steps, not %s", at, s.Source))
			}
		case SourceAgent:
		default:
			errs = append(errs, fmt.Errorf("%s: source %q, want system, user or agent", at, s.Source))
		}
		ids := map[string]bool{}
		for j, c := range s.ToolCalls {
			if c.ToolCallID == "" || c.FunctionName == "" {
				errs = append(errs, fmt.Errorf("%s.tool_calls[%d]: tool_call_id and function_name are required", at, j))
			}
			var obj map[string]json.RawMessage
			if json.Unmarshal(c.Arguments, &obj) != nil || obj == nil {
				errs = append(errs, fmt.Errorf("%s.tool_calls[%d]: arguments must be a JSON object", at, j))
			}
			ids[c.ToolCallID] = true
		}
		if s.Observation != nil {
			for j, r := range s.Observation.Results {
				if r.SourceCallID != "" && !ids[r.SourceCallID] {
					errs = append(errs, fmt.Errorf("%s.observation.results[%d]: source_call_id %q names no tool call of the step", at, j, r.SourceCallID))
				}
			}
		}
	}
	return errors.Join(errs...)
}
