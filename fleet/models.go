package fleet

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/config"
	"github.com/skillfleet/skillfleet/gateway"
	"github.com/skillfleet/skillfleet/judge"
	"github.com/skillfleet/skillfleet/sandbox"
	"github.com/skillfleet/skillfleet/worker"
)

// ModelsConfig chooses the OpenAI-compatible endpoints that prompt cases run against: one
// default agent, or named agents and a judge from a config file (see BuildModels). Keys are
// read from environment variables only (never flags, so they stay out of process listings), by
// the worker process alone: sandboxes never see them.
type ModelsConfig struct {
	// API is the protocol of the default agent's and judge's endpoint (--api): openai (the
	// default), anthropic or gemini.
	API string
	// BaseURL of the default endpoint; empty: the API's variable ($OPENAI_BASE_URL,
	// $ANTHROPIC_BASE_URL, $GEMINI_BASE_URL or $GOOGLE_GEMINI_BASE_URL), else the provider's.
	BaseURL string
	// Model of the built-in default agent; empty (and no agents configured): prompt cases are
	// errored.
	Model string
	// JudgeModel judges semantic_match; empty: those assertions are errored.
	JudgeModel string
	MaxTurns   int
	// GatewayDir holds the model gateways' sockets of command agents, one subdirectory per
	// agent, bind-mounted into their sandboxes; it must be a path the Docker engine can
	// bind-mount. Empty: a fresh private directory under os.TempDir(), removed by Close.
	GatewayDir string
	// RateStore is the rate budget the fleet shares (a topology's Rates()): every built-in
	// agent's and the judge's endpoint gets a gate on it, so that their rate_limit is the
	// fleet's and a 429 holds the whole fleet back. An endpoint without a rate_limit is paced
	// to the limit its answers announce, if any. Nil: each endpoint is paced by this process
	// alone.
	RateStore agent.RateStore
}

// defaultBaseURL is the endpoint of openai agents and a judge that name none (--base-url
// speaks the default API).
func (m ModelsConfig) defaultBaseURL() string {
	if m.API != "" && m.API != config.APIOpenAI {
		return config.DefaultBaseURL(config.APIOpenAI, os.Getenv)
	}
	return cmp.Or(m.BaseURL, config.DefaultBaseURL(config.APIOpenAI, os.Getenv))
}

// baseURLFor is the base URL of an endpoint of api that names none.
func (m ModelsConfig) baseURLFor(api string) string {
	if api == config.APIOpenAI {
		return m.defaultBaseURL()
	}
	if m.API == api && m.BaseURL != "" {
		return m.BaseURL
	}
	return config.DefaultBaseURL(api, os.Getenv)
}

// GatewayMount is where a command agent's gateway directory appears in its sandbox.
const GatewayMount = "/run/skillfleet"

// Models are the agents and judge a worker runs prompt cases with.
type Models struct {
	Agents map[string]worker.AgentSpec
	Judge  worker.Judge
	Votes  int
	// Names are the configured agent names, for a run's spec; empty for the default agent.
	Names []string

	// built are the configuration the models were built from, for their digests.
	built    ModelsConfig
	settings *config.Settings

	// gateways serve the command agents; Close stops them and removes what Build created.
	gateways []*gateway.Gateway
	// created are the sockets and directories Build made, in creation order.
	created []string
}

// Close stops the model gateways of command agents and removes their sockets and the
// directories Build made for them (never anything else: a directory with other files stays).
// Call it once the executor ran its last job.
func (m Models) Close() error {
	var errs []error
	for _, g := range m.gateways {
		errs = append(errs, g.Close())
	}
	// Reverse: sockets, then their directories, then the directory that holds those.
	for i := len(m.created) - 1; i >= 0; i-- {
		_ = os.Remove(m.created[i])
	}
	return errors.Join(errs...)
}

// BuildModels returns the agents and judge that m and an explicit config file (nil: none)
// describe. A config's agents replace m's default agent; a config's judge wins over
// m.JudgeModel. A config agent with a command gets a model gateway listening in its own
// subdirectory of m.GatewayDir. The caller must Close the result; on error BuildModels has
// already released what it made.
func BuildModels(m ModelsConfig, cfg *config.Settings, reg prometheus.Registerer, log *zap.Logger) (out Models, err error) {
	out = Models{Agents: map[string]worker.AgentSpec{}, Votes: 1, built: m, settings: cfg}
	defer func() {
		if err != nil {
			_ = out.Close()
			out = Models{Agents: map[string]worker.AgentSpec{}, Votes: 1}
		}
	}()
	defaultBase := m.defaultBaseURL()
	limits := rateLimits(cfg)
	newClient := func(name, api, base, keyEnv, model string, maxConc int, price config.Price, maxOutput int64) (*agent.Client, error) {
		api = cmp.Or(api, config.APIOpenAI)
		return agent.NewClient(agent.Endpoint{
			Name: name, API: api, BaseURL: cmp.Or(base, m.baseURLFor(api)), APIKey: os.Getenv(cmp.Or(keyEnv, config.DefaultKeyEnv(api))),
			Model: model, MaxConcurrency: maxConc, Price: priceOf(price), MaxOutput: maxOutput,
		}, agent.ClientDeps{Registry: reg, Log: log.Named("model"), Rate: m.rateGate(name, limits[name], log)})
	}
	if cfg != nil && len(cfg.Agents) > 0 {
		if m.Model != "" {
			return out, errors.New("--model and a config with agents: choose one")
		}
		gatewayDir := m.GatewayDir
		for _, a := range cfg.Agents {
			if a.Command != nil {
				if gatewayDir == "" {
					// Private and unpredictable: another local user must not be able to put
					// their own socket where the sandboxes look for the gateway.
					gatewayDir, err = os.MkdirTemp("", fmt.Sprintf("skillfleet-gateway-%d-", os.Getpid()))
					if err != nil {
						return out, fmt.Errorf("gateway directory: %w", err)
					}
					out.created = append(out.created, gatewayDir)
				}
				spec, err := out.commandAgent(a, defaultBase, gatewayDir, reg, log)
				if err != nil {
					return out, fmt.Errorf("agent %s: %w", a.Name, err)
				}
				out.Agents[a.Name] = spec
				out.Names = append(out.Names, a.Name)
				continue
			}
			c, err := newClient(a.Name, a.APIOf(), a.BaseURL, a.APIKeyEnv, a.Model, a.MaxConcurrency, a.Price, a.MaxOutputTokens)
			if err != nil {
				return out, fmt.Errorf("agent %s: %w", a.Name, err)
			}
			turns := a.MaxTurns
			if turns == 0 {
				turns = m.MaxTurns
			}
			out.Agents[a.Name] = worker.AgentSpec{Agent: agent.NewBuiltIn(c, log.Named("agent")), Limits: agent.Limits{MaxTurns: turns, MaxTokens: a.MaxTokens}, Model: reportedModel(a.APIOf(), a.Model)}
			out.Names = append(out.Names, a.Name)
		}
	} else if m.Model != "" {
		c, err := newClient("agent", m.API, "", "", m.Model, 0, config.Price{}, 0)
		if err != nil {
			return out, err
		}
		out.Agents[""] = worker.AgentSpec{Agent: agent.NewBuiltIn(c, log.Named("agent")), Limits: agent.Limits{MaxTurns: m.MaxTurns}, Model: reportedModel(m.API, m.Model)}
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
	if j != nil {
		jc, err = newClient("judge", j.API, j.BaseURL, j.APIKeyEnv, j.Model, 0, j.Price, j.MaxOutputTokens)
	} else {
		jc, err = newClient("judge", m.API, "", "", judgeModel, 0, config.Price{}, 0)
	}
	if err != nil {
		return out, fmt.Errorf("judge: %w", err)
	}
	if out.Judge, err = judge.New(judge.Config{Model: judgeModel, Votes: out.Votes}, judge.Deps{Client: jc, Cache: judge.NewLRU(10000), Log: log.Named("judge"), Registry: reg}); err != nil {
		return out, err
	}
	return out, nil
}

// commandAgent makes a command agent with its own gateway, listening on gatewayDir/NAME/, a
// directory that the agent's sandboxes get at GatewayMount: the gateway's shared socket and
// one socket per job, under names the sandbox cannot list.
func (out *Models) commandAgent(a config.Agent, defaultBase, gatewayDir string, reg prometheus.Registerer, log *zap.Logger) (worker.AgentSpec, error) {
	api := a.APIOf()
	base, keyEnv := a.BaseURL, cmp.Or(a.APIKeyEnv, config.DefaultKeyEnv(api))
	if base == "" {
		base = defaultBase
		if api != config.APIOpenAI {
			base = config.DefaultBaseURL(api, os.Getenv)
		}
	}
	gw, err := gateway.New(gateway.Config{
		Name: a.Name, Model: a.Model, API: api, BaseURL: base, APIKey: os.Getenv(keyEnv),
		Price: priceOf(a.Price), MaxInFlight: a.MaxConcurrency, MaxTokensField: a.MaxTokensField,
		ServiceTier: a.ServiceTier, MaxOutputTokens: a.MaxOutputTokens,
	}, gateway.Deps{Log: log.Named("gateway").With(zap.String("agent", a.Name)), Registry: reg})
	if err != nil {
		return worker.AgentSpec{}, err
	}
	dir, err := filepath.Abs(filepath.Join(gatewayDir, a.Name))
	if err != nil {
		return worker.AgentSpec{}, fmt.Errorf("gateway directory: %w", err)
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		out.created = append(out.created, dir)
	}
	out.gateways = append(out.gateways, gw)
	sock, err := gw.ListenUnix(dir)
	if err != nil {
		return worker.AgentSpec{}, err
	}
	out.created = append(out.created, sock)
	cmd, err := agent.NewCommand(agent.CommandConfig{
		Template: a.Command, Env: a.Env, Gateway: gw.Opener(), GatewayDir: GatewayMount,
		SkillsDir: a.SkillsDir,
	})
	if err != nil {
		return worker.AgentSpec{}, err
	}
	return worker.AgentSpec{
		Agent:  cmd,
		Limits: agent.Limits{MaxTokens: a.MaxTokens},
		Mounts: []sandbox.Mount{{Source: dir, Target: GatewayMount}},
		Model:  reportedModel(api, a.Model),
	}, nil
}

// reportedModel is the model a result reports: qualified by its provider when that is not
// OpenAI's protocol, so that a comparison refuses two runs of the same model name through
// different providers (and a run from before the api key compares as it did).
func reportedModel(api, model string) string {
	if api == "" || api == config.APIOpenAI {
		return model
	}
	return api + "/" + model
}

// rateLimits are the configured rate limits by endpoint name: the agents' names and "judge".
func rateLimits(cfg *config.Settings) map[string]*config.RateLimit {
	out := map[string]*config.RateLimit{}
	if cfg == nil {
		return out
	}
	for _, a := range cfg.Agents {
		out[a.Name] = a.RateLimit
	}
	if cfg.Judge != nil && cfg.Judge.RateLimit != nil {
		out["judge"] = cfg.Judge.RateLimit
	}
	return out
}

// rateGate is the rate gate of the endpoint named name, keyed by that name in the store: on
// m.RateStore when there is one, else pacing this process alone; at lim when it is set, else
// at the limit the endpoint announces (agent.RateGate.Observe).
func (m ModelsConfig) rateGate(name string, lim *config.RateLimit, log *zap.Logger) *agent.RateGate {
	var rl agent.RateLimit
	if lim != nil {
		rl = agent.RateLimit{RequestsPerMinute: lim.RequestsPerMinute, TokensPerMinute: lim.TokensPerMinute}
	}
	return agent.NewRateGate(name, rl, agent.RateGateDeps{Store: m.RateStore, Log: log.Named("rate")})
}

// priceOf is a config price as the agents and the gateway take it.
func priceOf(p config.Price) agent.Price {
	return agent.Price{PromptPerMTok: p.PromptPerMTok, CompletionPerMTok: p.CompletionPerMTok,
		CacheReadPerMTok: p.CacheReadPerMTok, CacheWritePerMTok: p.CacheWritePerMTok}
}
