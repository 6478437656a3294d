package fleet

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/skillfleet/skillfleet/config"
	"github.com/skillfleet/skillfleet/judge"
)

// agentIdentity is what of an agent's configuration decides what its jobs do: its endpoint,
// model, turn and token budgets, CLI argv and environment. Not its API key's variable, price
// or concurrency, which change what a job costs or how fast it goes, not what it answers.
type agentIdentity struct {
	Name           string            `json:"name"`
	BaseURL        string            `json:"base_url,omitempty"`
	Model          string            `json:"model,omitempty"`
	MaxTurns       int               `json:"max_turns,omitempty"`
	MaxTokens      int64             `json:"max_tokens,omitempty"`
	Command        []string          `json:"command,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
	MaxTokensField string            `json:"max_tokens_field,omitempty"`
	// API is left out for openai, so that digests from before the key stay valid.
	API         string `json:"api,omitempty"`
	SkillsDir   string `json:"skills_dir,omitempty"`
	ServiceTier string `json:"service_tier,omitempty"`
	// MaxOutputTokens decides where an answer may be cut; left out when unset, so that
	// digests from before the key stay valid.
	MaxOutputTokens int64 `json:"max_output_tokens,omitempty"`
}

// workerIdentity is what every job of a worker shares: the judge and the sandbox image.
type workerIdentity struct {
	JudgeBaseURL string `json:"judge_base_url,omitempty"`
	// JudgeAPI is left out for openai, so that digests from before the key stay valid.
	JudgeAPI   string `json:"judge_api,omitempty"`
	JudgeModel string `json:"judge_model,omitempty"`
	JudgeVotes int    `json:"judge_votes,omitempty"`
	// JudgeMaxOutputTokens is left out when unset, so that digests from before the key stay
	// valid.
	JudgeMaxOutputTokens int64    `json:"judge_max_output_tokens,omitempty"`
	JudgePrompts         []string `json:"judge_prompts"`
	SandboxImageID       string   `json:"sandbox_image_id"`
	SandboxImageRef      string   `json:"sandbox_image"`
}

// AgentDigests are the digests of the configuration of the agents these models run (see
// AgentDigests) in the sandbox image image, whose content id is imageID.
func (m Models) AgentDigests(image, imageID string) map[string]string {
	return AgentDigests(m.built, m.settings, image, imageID)
}

// AgentDigests are the digests of the configuration of each agent a worker runs, by name, for
// the cells' digests (worker.CellDigest): the agent's identity, the judge (model, endpoint,
// votes, prompt versions) and the sandbox image by content id, in which commands and agent
// CLIs run. "" is the digest of the jobs that name no agent: the default agent's when there is
// one. A worker without the image's id (imageID "") gets none, so nothing it runs is reused.
func AgentDigests(m ModelsConfig, cfg *config.Settings, image, imageID string) map[string]string {
	if imageID == "" {
		return nil
	}

	w := workerIdentity{JudgeModel: m.JudgeModel, JudgeVotes: 1, JudgePrompts: []string{judge.PromptVersion, judge.ReferencePromptVersion},
		SandboxImageID: imageID, SandboxImageRef: image}
	judgeAPI := m.API
	if cfg != nil && cfg.Judge != nil {
		w.JudgeBaseURL, w.JudgeModel, w.JudgeVotes = cfg.Judge.BaseURL, cfg.Judge.Model, max(cfg.Judge.Votes, 1)
		w.JudgeMaxOutputTokens = cfg.Judge.MaxOutputTokens
		judgeAPI = cfg.Judge.API
	}
	if judgeAPI != "" && judgeAPI != config.APIOpenAI {
		w.JudgeAPI = judgeAPI
	}
	if w.JudgeBaseURL == "" && w.JudgeModel != "" {
		w.JudgeBaseURL = m.baseURLFor(cmp.Or(judgeAPI, config.APIOpenAI))
	}
	out := map[string]string{}
	if cfg != nil && len(cfg.Agents) > 0 {
		for _, a := range cfg.Agents {
			turns := a.MaxTurns
			if turns == 0 && a.Command == nil {
				turns = m.MaxTurns
			}
			api := ""
			if a.APIOf() != config.APIOpenAI {
				api = a.APIOf()
			}
			agentBase := m.baseURLFor(a.APIOf())
			out[a.Name] = identityDigest(agentIdentity{Name: a.Name, BaseURL: cmp.Or(a.BaseURL, agentBase), Model: a.Model, MaxTurns: turns,
				MaxTokens: a.MaxTokens, Command: a.Command, Env: a.Env, MaxTokensField: a.MaxTokensField,
				API: api, SkillsDir: a.SkillsDir, ServiceTier: a.ServiceTier, MaxOutputTokens: a.MaxOutputTokens}, w)
		}
		out[""] = identityDigest(agentIdentity{}, w)
	} else {
		api := ""
		if m.API != "" && m.API != config.APIOpenAI {
			api = m.API
		}
		out[""] = identityDigest(agentIdentity{BaseURL: m.baseURLFor(cmp.Or(m.API, config.APIOpenAI)), Model: m.Model, MaxTurns: m.MaxTurns, API: api}, w)
	}
	return out
}

func identityDigest(a agentIdentity, w workerIdentity) string {
	// Marshalling these plain structs cannot fail; map keys are sorted by encoding/json.
	data, _ := json.Marshal(struct {
		Agent  agentIdentity  `json:"agent"`
		Worker workerIdentity `json:"worker"`
	}{a, w})
	h := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(h[:])
}
