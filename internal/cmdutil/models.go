package cmdutil

import (
	"errors"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/judge"
	"github.com/skillfleet/skillfleet/worker"
)

// ModelFlags choose the OpenAI-compatible endpoint that prompt cases run against. The key is
// read from $OPENAI_API_KEY only (never a flag, so it stays out of process listings), and it
// is used by the worker process alone: sandboxes never see it.
type ModelFlags struct {
	BaseURL    string
	Model      string
	JudgeModel string
	MaxTurns   int
}

// Register adds the flags to fs.
func (m *ModelFlags) Register(fs *pflag.FlagSet) {
	fs.StringVar(&m.BaseURL, "model-base-url", "", "OpenAI-compatible endpoint (default $OPENAI_BASE_URL, else https://api.openai.com/v1)")
	fs.StringVar(&m.Model, "model", "", "model of the built-in agent that runs prompt cases; empty: prompt cases are errored")
	fs.StringVar(&m.JudgeModel, "judge-model", "", "model that judges semantic_match (separate from --model); empty: those assertions are errored")
	fs.IntVar(&m.MaxTurns, "max-turns", agent.DefaultMaxTurns, "model turns a prompt case may take")
}

// Build returns the default agent and the judge the flags describe (nil when not asked for).
func (m *ModelFlags) Build(reg prometheus.Registerer, log *zap.Logger) (map[string]worker.Agent, worker.Judge, agent.Limits, error) {
	limits := agent.Limits{MaxTurns: m.MaxTurns}
	if m.Model == "" {
		if m.JudgeModel != "" {
			return nil, nil, limits, errors.New("--judge-model needs --model: the judge only sees prompt cases")
		}
		return nil, nil, limits, nil
	}
	base := m.BaseURL
	if base == "" {
		base = os.Getenv("OPENAI_BASE_URL")
	}
	if base == "" {
		base = "https://api.openai.com/v1"
	}
	key := os.Getenv("OPENAI_API_KEY")
	client, err := agent.NewClient(agent.Endpoint{Name: "agent", BaseURL: base, APIKey: key, Model: m.Model},
		agent.ClientDeps{Registry: reg, Log: log.Named("model")})
	if err != nil {
		return nil, nil, limits, err
	}
	agents := map[string]worker.Agent{"": agent.NewBuiltIn(client, log.Named("agent"))}
	if m.JudgeModel == "" {
		return agents, nil, limits, nil
	}
	jc, err := agent.NewClient(agent.Endpoint{Name: "judge", BaseURL: base, APIKey: key, Model: m.JudgeModel},
		agent.ClientDeps{Registry: reg, Log: log.Named("judge")})
	if err != nil {
		return nil, nil, limits, err
	}
	return agents, judge.New(judge.Config{Model: m.JudgeModel}, jc, judge.NewLRU(10000), log.Named("judge")), limits, nil
}
