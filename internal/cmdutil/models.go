package cmdutil

import (
	"errors"
	"fmt"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/config"
	"github.com/skillfleet/skillfleet/judge"
	"github.com/skillfleet/skillfleet/worker"
)

// ModelFlags choose the OpenAI-compatible endpoints that prompt cases run against: one default
// agent from flags, or named agents and a judge from a config file. Keys are read from
// environment variables only (never flags, so they stay out of process listings), by the worker
// process alone: sandboxes never see them.
type ModelFlags struct {
	BaseURL    string
	Model      string
	JudgeModel string
	MaxTurns   int
}

// Register adds the flags to fs.
func (m *ModelFlags) Register(fs *pflag.FlagSet) {
	fs.StringVar(&m.BaseURL, "model-base-url", "", "OpenAI-compatible endpoint (default $OPENAI_BASE_URL, else https://api.openai.com/v1)")
	fs.StringVar(&m.Model, "model", "", "model of the built-in agent that runs prompt cases; empty (and no agents configured): prompt cases are errored")
	fs.StringVar(&m.JudgeModel, "judge-model", "", "model that judges semantic_match (separate from --model); empty: those assertions are errored")
	fs.IntVar(&m.MaxTurns, "max-turns", agent.DefaultMaxTurns, "model turns a prompt case may take")
}

// Models are the agents and judge a worker runs prompt cases with.
type Models struct {
	Agents map[string]worker.AgentSpec
	Judge  worker.Judge
	Votes  int
	// Names are the configured agent names, for a run's spec; empty for the default agent.
	Names []string
}

// Build returns the agents and judge the flags and an explicit config file (nil: none)
// describe. A config's agents replace the flag's default agent; a config's judge wins over
// --judge-model.
func (m *ModelFlags) Build(cfg *config.Suite, reg prometheus.Registerer, log *zap.Logger) (Models, error) {
	out := Models{Agents: map[string]worker.AgentSpec{}, Votes: 1}
	defaultBase := m.BaseURL
	if defaultBase == "" {
		defaultBase = os.Getenv("OPENAI_BASE_URL")
	}
	if defaultBase == "" {
		defaultBase = "https://api.openai.com/v1"
	}
	newClient := func(name, base, keyEnv, model string, maxConc int, price config.Price) (*agent.Client, error) {
		if base == "" {
			base = defaultBase
		}
		if keyEnv == "" {
			keyEnv = "OPENAI_API_KEY"
		}
		return agent.NewClient(agent.Endpoint{
			Name: name, BaseURL: base, APIKey: os.Getenv(keyEnv), Model: model, MaxConcurrency: maxConc,
			Price: agent.Price{PromptPerMTok: price.PromptPerMTok, CompletionPerMTok: price.CompletionPerMTok},
		}, agent.ClientDeps{Registry: reg, Log: log.Named("model")})
	}
	if cfg != nil && len(cfg.Agents) > 0 {
		if m.Model != "" {
			return out, errors.New("--model and a config with agents: choose one")
		}
		for _, a := range cfg.Agents {
			c, err := newClient(a.Name, a.BaseURL, a.APIKeyEnv, a.Model, a.MaxConcurrency, a.Price)
			if err != nil {
				return out, fmt.Errorf("agent %s: %w", a.Name, err)
			}
			turns := a.MaxTurns
			if turns == 0 {
				turns = m.MaxTurns
			}
			out.Agents[a.Name] = worker.AgentSpec{Agent: agent.NewBuiltIn(c, log.Named("agent")), Limits: agent.Limits{MaxTurns: turns, MaxTokens: a.MaxTokens}}
			out.Names = append(out.Names, a.Name)
		}
	} else if m.Model != "" {
		c, err := newClient("agent", "", "", m.Model, 0, config.Price{})
		if err != nil {
			return out, err
		}
		out.Agents[""] = worker.AgentSpec{Agent: agent.NewBuiltIn(c, log.Named("agent")), Limits: agent.Limits{MaxTurns: m.MaxTurns}}
	}
	judgeModel, j := m.JudgeModel, (*config.Judge)(nil)
	if cfg != nil && cfg.Judge != nil {
		j = cfg.Judge
		judgeModel = j.Model
		out.Votes = max(j.Votes, 1)
	}
	if judgeModel == "" {
		return out, nil
	}
	if len(out.Agents) == 0 {
		return out, errors.New("a judge needs an agent (--model or agents in the config): it only sees prompt cases")
	}
	var jc *agent.Client
	var err error
	if j != nil {
		jc, err = newClient("judge", j.BaseURL, j.APIKeyEnv, j.Model, 0, j.Price)
	} else {
		jc, err = newClient("judge", "", "", judgeModel, 0, config.Price{})
	}
	if err != nil {
		return out, fmt.Errorf("judge: %w", err)
	}
	out.Judge = judge.New(judge.Config{Model: judgeModel, Votes: out.Votes}, jc, judge.NewLRU(10000), log.Named("judge"))
	return out, nil
}
