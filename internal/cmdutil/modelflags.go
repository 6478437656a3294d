package cmdutil

import (
	"github.com/spf13/pflag"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/fleet"
)

// ModelFlags are the flags of the endpoints prompt cases run against (fleet.ModelsConfig);
// fleet.BuildModels turns them, with an agents config, into agents and a judge.
type ModelFlags struct {
	fleet.ModelsConfig
}

// Register adds the flags to fs.
func (m *ModelFlags) Register(fs *pflag.FlagSet) {
	fs.StringVar(&m.API, "api", "openai", "protocol of the --model and --judge-model endpoint: openai (Chat Completions), anthropic (Messages) or gemini; the key comes from OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY")
	fs.StringVar(&m.BaseURL, "model-base-url", "", "endpoint of --api (default $OPENAI_BASE_URL, else https://api.openai.com/v1; $ANTHROPIC_BASE_URL, else https://api.anthropic.com; $GEMINI_BASE_URL or $GOOGLE_GEMINI_BASE_URL, else https://generativelanguage.googleapis.com)")
	fs.StringVar(&m.Model, "model", "", "model of the built-in agent that runs prompt cases; empty (and no agents configured): prompt cases are errored")
	fs.StringVar(&m.JudgeModel, "judge-model", "", "model that judges semantic_match (separate from --model); empty: those assertions are errored")
	fs.IntVar(&m.MaxTurns, "max-turns", agent.DefaultMaxTurns, "model turns a prompt case may take")
	fs.StringVar(&m.GatewayDir, "gateway-dir", "", "directory of the model gateway sockets of command agents, mounted into their sandboxes; must be a path the Docker engine can bind-mount (default: a fresh skillfleet-gateway-<pid>-* directory under $TMPDIR)")
}
