// Package config reads skillfleet.yaml: the sandbox limits a suite asks for and, from a file
// the user or operator passes explicitly, the agents and judge prompt cases run against.
// Agent endpoints and key variables are never taken from a file that arrived inside a suite:
// a suite is untrusted, and one could point OPENAI_API_KEY at its own host.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	units "github.com/docker/go-units"
	"go.yaml.in/yaml/v3"

	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/internal/yamlstrict"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/sandbox"
)

// FileName is the suite configuration file, looked for at the root of a suite.
const FileName = "skillfleet.yaml"

// maxFileBytes bounds the file; it is a few lines.
const maxFileBytes = 64 << 10

// maxDepth bounds nesting; the deepest real value (an agent's env) is at depth 4.
const maxDepth = 64

// Settings are what a skillfleet.yaml says: the sandbox limits of a suite's jobs and, from a
// file given explicitly, the agents and the judge.
type Settings struct {
	// Sandbox are the limits every job of the suite asks for. Workers clamp them to the
	// maxima their operator set, so a suite can ask for less, never for more.
	Sandbox Limits `yaml:"sandbox"`
	// Agents are the endpoints prompt cases run against: each prompt case runs once per agent.
	Agents []Agent `yaml:"agents"`
	// Judge decides semantic_match assertions.
	Judge *Judge `yaml:"judge"`
}

// Agent is one model endpoint (api: openai, anthropic or gemini) and model. Without Command it
// runs the built-in agent (its model loop in the worker, its tool calls in the sandbox); with
// Command it is a command agent: an agent CLI run inside the sandbox, whose model traffic goes
// through the worker's model gateway to this endpoint, so the sandbox only ever holds a
// per-job token.
type Agent struct {
	Name           string `yaml:"name"`
	BaseURL        string `yaml:"base_url"`
	APIKeyEnv      string `yaml:"api_key_env"`
	Model          string `yaml:"model"`
	MaxTurns       int    `yaml:"max_turns"`
	MaxTokens      int64  `yaml:"max_tokens"`
	MaxConcurrency int    `yaml:"max_concurrency"`
	// MaxOutputTokens is the max output of one model answer, sent with every request that
	// names none (0: for a command agent under a budget, the model's documented maximum, else
	// 32,000; otherwise none, the provider's default). A command agent's CLI that names its own
	// keeps it; the gateway lowers any of them only to what max_tokens leaves.
	MaxOutputTokens int64 `yaml:"max_output_tokens"`
	Price           Price `yaml:"price"`
	// Command is the agent CLI's argv, never run through a shell, with the placeholders
	// {{prompt}}, {{token}}, {{base_url}} and {{workdir}} (see agent.CommandConfig). max_turns
	// does not apply to it; max_tokens is its per-job budget at the gateway, and
	// max_concurrency how many of a job's requests the gateway forwards at once.
	Command []string `yaml:"command"`
	// Env is added to the command's environment, with the same placeholders, e.g.
	// OPENAI_BASE_URL: "{{base_url}}", OPENAI_API_KEY: "{{token}}".
	Env map[string]string `yaml:"env"`
	// MaxTokensField is the Chat Completions field the gateway sets a job's max output in:
	// max_completion_tokens (default) or max_tokens, for servers that know only that one
	// (Ollama, LM Studio, older llama.cpp). Command agents of api openai only.
	MaxTokensField string `yaml:"max_tokens_field"`
	// API is the protocol the agent's endpoint speaks: openai (the default), anthropic or
	// gemini. The built-in agent speaks it natively; a command agent's CLI talks to the
	// gateway in the same protocol (Claude Code: anthropic, Gemini CLI: gemini, Codex and
	// opencode: openai). Its default base URL and key variable follow it (see
	// DefaultBaseURL, DefaultKeyEnv).
	API string `yaml:"api"`
	// SkillsDir is where a command agent's CLI loads skills from (e.g. /work/.claude/skills):
	// each job's skills are placed there, read-only, one directory per skill.
	SkillsDir string `yaml:"skills_dir"`
	// ServiceTier pins the OpenAI service_tier the gateway sends for a command agent; empty
	// drops the one a CLI sends (Codex's fast mode), so the operator chooses what is billed.
	ServiceTier string `yaml:"service_tier"`
	// RateLimit is the endpoint's rate, which the whole fleet shares: the built-in agent's
	// requests are paced to it (nil: to the limit the endpoint's answers announce, if any).
	RateLimit *RateLimit `yaml:"rate_limit"`
	// Line is where the agent is defined, for messages.
	Line int `yaml:"-"`
}

// Price is a model's price per million tokens, for cost reports. Cache reads and writes are
// the prompt tokens a provider's prompt cache served or stored; unset, they cost the prompt
// price.
type Price struct {
	PromptPerMTok     float64 `yaml:"prompt_per_mtok"`
	CompletionPerMTok float64 `yaml:"completion_per_mtok"`
	CacheReadPerMTok  float64 `yaml:"cache_read_per_mtok"`
	CacheWritePerMTok float64 `yaml:"cache_write_per_mtok"`
}

// RateLimit is an endpoint's rate as its provider (or its operator, for a share of an
// organisation's limit) sets it; 0 is no limit of that kind.
type RateLimit struct {
	RequestsPerMinute int `yaml:"requests_per_minute"`
	TokensPerMinute   int `yaml:"tokens_per_minute"`
}

// maxOutputTokens bounds max_output_tokens as the model gateway bounds a client's max output:
// far above every model's output limit, so that a larger value is a typo.
const maxOutputTokens = 1 << 24

// The most a rate limit may say: beyond them a value is a typo, not a limit.
const (
	maxRequestsPerMinute = 1_000_000
	maxTokensPerMinute   = 1_000_000_000
)

// The APIs an agent's endpoint may speak.
const (
	APIOpenAI    = "openai"
	APIAnthropic = "anthropic"
	APIGemini    = "gemini"
)

// APIOf is an agent's protocol, openai when it names none.
func (a Agent) APIOf() string {
	if a.API == "" {
		return APIOpenAI
	}
	return a.API
}

// DefaultKeyEnv is the variable an endpoint's key is read from when api_key_env names none,
// as each provider's SDK reads it.
func DefaultKeyEnv(api string) string {
	switch api {
	case APIAnthropic:
		return "ANTHROPIC_API_KEY"
	case APIGemini:
		return "GEMINI_API_KEY"
	}
	return "OPENAI_API_KEY"
}

// DefaultBaseURL is an endpoint's base URL when base_url names none: the variable the
// provider's SDK honours, else the provider's own endpoint. OpenAI's carries its version path;
// Anthropic's and Gemini's SDKs add theirs.
func DefaultBaseURL(api string, getenv func(string) string) string {
	first := func(vals ...string) string {
		for _, v := range vals {
			if v != "" {
				return v
			}
		}
		return ""
	}
	switch api {
	case APIAnthropic:
		return first(getenv("ANTHROPIC_BASE_URL"), "https://api.anthropic.com")
	case APIGemini:
		return first(getenv("GEMINI_BASE_URL"), getenv("GOOGLE_GEMINI_BASE_URL"), "https://generativelanguage.googleapis.com")
	}
	return first(getenv("OPENAI_BASE_URL"), "https://api.openai.com/v1")
}

// Judge is the endpoint and model of the semantic judge, separate from the agents'.
type Judge struct {
	// API is the protocol of the judge's endpoint: openai (the default), anthropic or gemini.
	API       string `yaml:"api"`
	BaseURL   string `yaml:"base_url"`
	APIKeyEnv string `yaml:"api_key_env"`
	Model     string `yaml:"model"`
	Votes     int    `yaml:"votes"`
	Price     Price  `yaml:"price"`
	// MaxOutputTokens is the max output of one judge answer (0: the provider's default;
	// Anthropic's, which requires one, 8,192).
	MaxOutputTokens int64 `yaml:"max_output_tokens"`
	// RateLimit is the judge's endpoint's rate, shared by the fleet (nil: the limit its
	// answers announce, if any).
	RateLimit *RateLimit `yaml:"rate_limit"`
}

// Limits are the per-job sandbox limits, in human units: sizes like "256Mi" or "1g", CPUs as
// a decimal.
type Limits struct {
	Memory   string  `yaml:"memory"`
	CPUs     float64 `yaml:"cpus"`
	Pids     int64   `yaml:"pids"`
	FileSize string  `yaml:"file_size"`
	Output   string  `yaml:"output"`
}

// Find returns the skillfleet.yaml of the first root that has one, or "".
func Find(roots []string) string {
	for _, r := range roots {
		p := filepath.Join(r, FileName)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

var (
	agentName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	envName   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// Load reads and checks a skillfleet.yaml. Problems are diagnostics naming the file, the line
// and the rule, like every other input error.
func Load(path string) (*Settings, *pb.Limits, diag.Diagnostics) {
	limits := &pb.Limits{}
	errAt := func(line int, rule, format string, args ...any) diag.Diagnostics {
		return diag.Diagnostics{{Rule: rule, Severity: diag.SeverityError, File: path, Line: line, Message: fmt.Sprintf(format, args...)}}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, errAt(0, "config.file", "cannot read %s: it does not exist", FileName)
		}
		return nil, nil, errAt(0, "config.file", "cannot read %s: %v", FileName, err)
	}
	if len(data) > maxFileBytes {
		return nil, nil, errAt(0, "config.file", "%s is %d bytes, more than %d", FileName, len(data), maxFileBytes)
	}
	root, problems := yamlstrict.Parse(data, yamlstrict.Options{MaxBytes: maxFileBytes, MaxDepth: maxDepth})
	for _, p := range problems {
		switch p.Kind {
		case yamlstrict.Syntax:
			return nil, nil, errAt(p.Line, "config.yaml", "yaml: %s", p.Located)
		case yamlstrict.TooLarge:
			return nil, nil, errAt(0, "config.file", "%s is %d bytes, more than %d", FileName, len(data), maxFileBytes)
		case yamlstrict.Alias:
			// Refused before decoding into Settings, which is where aliases would be followed.
			return nil, nil, errAt(p.Line, RuleAlias, "YAML %s: anchors and aliases are not allowed in %s; write the value out", p.Message, FileName)
		case yamlstrict.TooDeep:
			return nil, nil, errAt(p.Line, "config.yaml", "%s nests deeper than %d levels", FileName, maxDepth)
		}
	}
	// The helpers below look values up from the document node.
	node := yaml.Node{Kind: yaml.DocumentNode}
	if root != nil {
		node.Content = []*yaml.Node{root}
	}
	// A command given as one string would otherwise be a bare decoding error; say what is
	// expected instead.
	if d := commandShapes(&node, errAt); d.HasErrors() {
		return nil, nil, d
	}
	var s Settings
	if line, err := yamlstrict.Decode(data, &s); err != nil {
		return nil, nil, errAt(line, "config.yaml", "%v", err)
	}
	lineOf := func(key string) int { return keyLine(&node, "sandbox", key) }

	var diags diag.Diagnostics
	size := func(key, v string) int64 {
		if v == "" {
			return 0
		}
		if last := v[len(v)-1]; last == 'i' || last == 'I' {
			v += "B" // Kubernetes-style "256Mi" reads as 256MiB
		}
		n, err := units.RAMInBytes(v)
		if err != nil || n <= 0 {
			diags = append(diags, errAt(lineOf(key), "config.sandbox."+key, "%s must be a size such as 256Mi or 1g, got %q", key, v)...)
			return 0
		}
		return n
	}
	limits.MemoryBytes = size("memory", s.Sandbox.Memory)
	limits.FileSizeBytes = size("file_size", s.Sandbox.FileSize)
	limits.OutputBytes = size("output", s.Sandbox.Output)
	if s.Sandbox.CPUs < 0 || s.Sandbox.CPUs > 1024 {
		diags = append(diags, errAt(lineOf("cpus"), "config.sandbox.cpus", "cpus must be between 0 and 1024, got %v", s.Sandbox.CPUs)...)
	}
	limits.NanoCpus = int64(s.Sandbox.CPUs * 1e9)
	if s.Sandbox.Pids < 0 {
		diags = append(diags, errAt(lineOf("pids"), "config.sandbox.pids", "pids must be positive, got %d", s.Sandbox.Pids)...)
	}
	limits.Pids = s.Sandbox.Pids
	names := map[string]bool{}
	for i, a := range s.Agents {
		line := listItemLine(&node, "agents", i)
		s.Agents[i].Line = line
		switch {
		case !agentName.MatchString(a.Name):
			diags = append(diags, errAt(line, "config.agents.name", "agent name %q must be 1-64 characters of [a-z0-9._-]", a.Name)...)
		case names[a.Name]:
			diags = append(diags, errAt(line, "config.agents.name", "agent %q is defined twice", a.Name)...)
		}
		names[a.Name] = true
		if a.Model == "" {
			diags = append(diags, errAt(line, "config.agents.model", "agent %q needs a model", a.Name)...)
		}
		if a.APIKeyEnv != "" && !envName.MatchString(a.APIKeyEnv) {
			diags = append(diags, errAt(line, "config.agents.api_key_env", "api_key_env %q is not an environment variable name", a.APIKeyEnv)...)
		}
		if a.Command == nil && a.Env != nil {
			diags = append(diags, errAt(itemKeyLine(&node, "agents", i, "env"), "config.agents.env", "agent %q has env but no command: env is for command agents", a.Name)...)
		}
		switch a.MaxTokensField {
		case "", "max_completion_tokens", "max_tokens":
		default:
			diags = append(diags, errAt(itemKeyLine(&node, "agents", i, "max_tokens_field"), "config.agents.max_tokens_field",
				"agent %q: max_tokens_field must be max_completion_tokens or max_tokens, got %q", a.Name, a.MaxTokensField)...)
		}
		if a.MaxTokensField != "" && a.Command == nil {
			diags = append(diags, errAt(itemKeyLine(&node, "agents", i, "max_tokens_field"), "config.agents.max_tokens_field",
				"agent %q has max_tokens_field but no command: it sets what the model gateway of a command agent sends", a.Name)...)
		}
		if a.MaxOutputTokens < 0 || a.MaxOutputTokens > maxOutputTokens {
			diags = append(diags, errAt(itemKeyLine(&node, "agents", i, "max_output_tokens"), "config.agents.max_output_tokens",
				"agent %q: max_output_tokens must be from 1 to %d (or 0: the model's own), got %d", a.Name, maxOutputTokens, a.MaxOutputTokens)...)
		}
		diags = append(diags, checkAPI(a, func(key string) int { return itemKeyLine(&node, "agents", i, key) }, errAt)...)
		diags = append(diags, checkRateLimit(a.RateLimit, "config.agents.rate_limit", fmt.Sprintf("agent %q", a.Name), a.Command != nil,
			itemKeyLine(&node, "agents", i, "rate_limit"), errAt)...)
		if a.Command != nil {
			diags = append(diags, checkCommand(a, itemKeyLine(&node, "agents", i, "command"), itemKeyLine(&node, "agents", i, "env"), errAt)...)
		}
	}
	if j := s.Judge; j != nil {
		line := keyLine(&node, "judge", "model")
		if j.Model == "" {
			diags = append(diags, errAt(line, "config.judge.model", "the judge needs a model")...)
		}
		if j.Votes < 0 || j.Votes > 9 || (j.Votes > 0 && j.Votes%2 == 0) {
			diags = append(diags, errAt(keyLine(&node, "judge", "votes"), "config.judge.votes", "votes must be an odd number from 1 to 9, got %d", j.Votes)...)
		}
		if j.APIKeyEnv != "" && !envName.MatchString(j.APIKeyEnv) {
			diags = append(diags, errAt(line, "config.judge.api_key_env", "api_key_env %q is not an environment variable name", j.APIKeyEnv)...)
		}
		if j.MaxOutputTokens < 0 || j.MaxOutputTokens > maxOutputTokens {
			diags = append(diags, errAt(keyLine(&node, "judge", "max_output_tokens"), "config.judge.max_output_tokens",
				"the judge's max_output_tokens must be from 1 to %d (or 0: the provider's default), got %d", maxOutputTokens, j.MaxOutputTokens)...)
		}
		diags = append(diags, checkRateLimit(j.RateLimit, "config.judge.rate_limit", "the judge", false, keyLine(&node, "judge", "rate_limit"), errAt)...)
		switch j.API {
		case "", APIOpenAI, APIAnthropic, APIGemini:
		default:
			diags = append(diags, errAt(keyLine(&node, "judge", "api"), "config.judge.api", "the judge's api must be openai, anthropic or gemini, got %q", j.API)...)
		}
	}
	if diags.HasErrors() {
		return nil, nil, diags
	}
	return &s, limits, nil
}

// checkAPI checks an agent's api and the keys that depend on it.
func checkAPI(a Agent, lineOf func(key string) int, errAt func(int, string, string, ...any) diag.Diagnostics) diag.Diagnostics {
	var diags diag.Diagnostics
	switch a.API {
	case "", APIOpenAI, APIAnthropic, APIGemini:
	default:
		return errAt(lineOf("api"), "config.agents.api", "agent %q: api must be openai, anthropic or gemini, got %q", a.Name, a.API)
	}
	if a.MaxTokensField != "" && a.APIOf() != APIOpenAI {
		diags = append(diags, errAt(lineOf("max_tokens_field"), "config.agents.max_tokens_field",
			"agent %q: max_tokens_field is a Chat Completions field; api %s has its own", a.Name, a.API)...)
	}
	if a.ServiceTier != "" && (a.Command == nil || a.APIOf() != APIOpenAI) {
		diags = append(diags, errAt(lineOf("service_tier"), "config.agents.service_tier",
			"agent %q: service_tier is what the model gateway sends for a command agent of api openai", a.Name)...)
	}
	if a.SkillsDir != "" {
		switch {
		case a.Command == nil:
			diags = append(diags, errAt(lineOf("skills_dir"), "config.agents.skills_dir",
				"agent %q has skills_dir but no command: it is where an agent CLI's own loader finds the skills", a.Name)...)
		case !sandbox.InWritableTree(a.SkillsDir):
			diags = append(diags, errAt(lineOf("skills_dir"), "config.agents.skills_dir",
				"agent %q: skills_dir %q must be a clean absolute path under /work, /tmp or /home/sandbox (the sandbox's writable trees), e.g. /work/.claude/skills", a.Name, a.SkillsDir)...)
		}
	}
	return diags
}

// checkRateLimit checks a rate_limit: counts within bounds, and only where something paces to
// it (not a command agent, whose model gateway does not pace yet).
func checkRateLimit(r *RateLimit, rule, who string, command bool, line int, errAt func(int, string, string, ...any) diag.Diagnostics) diag.Diagnostics {
	if r == nil {
		return nil
	}
	var diags diag.Diagnostics
	if command {
		diags = append(diags, errAt(line, rule, "%s has a command: rate_limit paces the built-in agent, and the model gateway of command agents does not pace yet", who)...)
	}
	if r.RequestsPerMinute < 0 || r.RequestsPerMinute > maxRequestsPerMinute {
		diags = append(diags, errAt(line, rule, "%s: requests_per_minute must be from 0 (no limit) to %d, got %d", who, maxRequestsPerMinute, r.RequestsPerMinute)...)
	}
	if r.TokensPerMinute < 0 || r.TokensPerMinute > maxTokensPerMinute {
		diags = append(diags, errAt(line, rule, "%s: tokens_per_minute must be from 0 (no limit) to %d, got %d", who, maxTokensPerMinute, r.TokensPerMinute)...)
	}
	return diags
}

// RuleAlias refuses YAML anchors and aliases in skillfleet.yaml, as case files (cases.alias)
// and frontmatter (frontmatter.alias) do: an alias is how a small file becomes a large value.
const RuleAlias = "config.alias"

// checkCommand checks a command agent's argv and environment the way agent.NewCommand will,
// so that a bad one is a diagnostic at load time rather than a worker that fails to start.
func checkCommand(a Agent, line, envLine int, errAt func(int, string, string, ...any) diag.Diagnostics) diag.Diagnostics {
	var diags diag.Diagnostics
	switch {
	case len(a.Command) == 0 || a.Command[0] == "":
		diags = append(diags, errAt(line, "config.agents.command", "agent %q: command must be a non-empty list of strings, e.g. [claude, -p, \"{{prompt}}\"]", a.Name)...)
	case strings.HasPrefix(a.Command[0], "-") || strings.Contains(a.Command[0], "="):
		diags = append(diags, errAt(line, "config.agents.command", "agent %q: the program %q must not start with '-' or contain '='", a.Name, a.Command[0])...)
	}
	for _, k := range slices.Sorted(maps.Keys(a.Env)) {
		if !envName.MatchString(k) {
			diags = append(diags, errAt(envLine, "config.agents.env", "agent %q: env %q is not an environment variable name", a.Name, k)...)
		}
	}
	return diags
}

// commandShapes reports agents whose command is not a list of strings.
func commandShapes(doc *yaml.Node, errAt func(int, string, string, ...any) diag.Diagnostics) diag.Diagnostics {
	list := topLevel(doc, "agents")
	if list == nil || list.Kind != yaml.SequenceNode {
		return nil
	}
	var diags diag.Diagnostics
	for _, item := range list.Content {
		cmd := mapValue(item, "command")
		if cmd == nil {
			continue
		}
		ok := cmd.Kind == yaml.SequenceNode && len(cmd.Content) > 0
		for _, e := range cmd.Content {
			ok = ok && e.Kind == yaml.ScalarNode && e.Tag != "!!null"
		}
		if !ok {
			diags = append(diags, errAt(cmd.Line, "config.agents.command", "command must be a non-empty list of strings (the argv, never run through a shell), e.g. [claude, -p, \"{{prompt}}\"]")...)
		}
	}
	return diags
}

// HasEndpoints reports whether the file configures model endpoints (agents or a judge).
func (s *Settings) HasEndpoints() bool { return len(s.Agents) > 0 || s.Judge != nil }

// listItemLine finds the line of the i-th item of a top-level list, or 0.
func listItemLine(doc *yaml.Node, key string, i int) int {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return 0
	}
	m := doc.Content[0]
	for k := 0; k+1 < len(m.Content); k += 2 {
		if m.Content[k].Value == key && i < len(m.Content[k+1].Content) {
			return m.Content[k+1].Content[i].Line
		}
	}
	return 0
}

// topLevel is the value of a top-level key, or nil.
func topLevel(doc *yaml.Node, key string) *yaml.Node {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil
	}
	return mapValue(doc.Content[0], key)
}

// mapValue is the value of key in a mapping node, or nil.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for k := 0; k+1 < len(m.Content); k += 2 {
		if m.Content[k].Value == key {
			return m.Content[k+1]
		}
	}
	return nil
}

// itemKeyLine finds the line of key in the i-th item of a top-level list, else the item's
// line, or 0.
func itemKeyLine(doc *yaml.Node, list string, i int, key string) int {
	l := topLevel(doc, list)
	if l == nil || l.Kind != yaml.SequenceNode || i >= len(l.Content) {
		return 0
	}
	item := l.Content[i]
	if m := item; m.Kind == yaml.MappingNode {
		for k := 0; k+1 < len(m.Content); k += 2 {
			if m.Content[k].Value == key {
				return m.Content[k].Line
			}
		}
	}
	return item.Line
}

// keyLine finds the line of parent.key in a document, or 0.
func keyLine(doc *yaml.Node, parent, key string) int {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return 0
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value != parent {
			continue
		}
		p := m.Content[i+1]
		for j := 0; j+1 < len(p.Content); j += 2 {
			if p.Content[j].Value == key {
				return p.Content[j].Line
			}
		}
		return m.Content[i].Line
	}
	return 0
}
