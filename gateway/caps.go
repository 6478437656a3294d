package gateway

import (
	"strings"
)

// DefaultMaxOutputTokens is the max output reserved and sent for a budgeted request that names
// none, when neither the agent's config (max_output_tokens) nor the table of documented
// maxima below knows the model. 32,000 is what Claude Code asks for on every turn and the
// smallest documented maximum of the current reasoning families (Claude Opus 4 and 4.1): a
// reasoning model writing a large patch needs that much, where the gateway's former 4,096
// cut such turns at every retry. A local server whose context is smaller than this refuses
// it; its agent sets max_output_tokens.
const DefaultMaxOutputTokens = 32000

// documentedMaxOutput is each known model family's maximum output, in tokens, as its
// provider documents it, by model-name prefix (the longest matching prefix wins, and a prefix
// matches only up to a boundary: "claude-opus-4-1" is not a prefix of "claude-opus-4-10").
// Dated snapshots and suffixes (-mini, -codex, -preview) share their family's row. Each row
// names the provider's page the figure is documented on and, where that page itself was not
// readable here (2026-11-29, stored copies), the listing that quotes it.
var documentedMaxOutput = []struct {
	prefix string
	tokens int64
	source string
}{
	// Anthropic: the "Max output" row of the models overview (current and legacy models).
	{"claude-3-haiku", 4096, "platform.claude.com/docs/en/about-claude/models/overview, legacy models"},
	{"claude-3-5-haiku", 8192, "platform.claude.com/docs/en/about-claude/models/overview, legacy models"},
	{"claude-3-5-sonnet", 8192, "platform.claude.com/docs/en/about-claude/models/overview, legacy models"},
	{"claude-3-7-sonnet", 64000, "platform.claude.com/docs/en/about-claude/models/overview, legacy models"},
	{"claude-opus-4", 32000, "platform.claude.com/docs/en/about-claude/models/overview, legacy models (as quoted by labring/fastgpt-plugin#242)"},
	{"claude-opus-4-0", 32000, "platform.claude.com/docs/en/about-claude/models/overview, legacy models (as quoted by labring/fastgpt-plugin#242)"},
	{"claude-opus-4-1", 32000, "platform.claude.com/docs/en/about-claude/models/overview, legacy models (as quoted by labring/fastgpt-plugin#242)"},
	{"claude-sonnet-4", 64000, "platform.claude.com/docs/en/about-claude/models/overview, legacy models (as quoted by labring/fastgpt-plugin#242)"},
	{"claude-sonnet-4-5", 64000, "platform.claude.com/docs/en/about-claude/models/overview (as quoted by labring/fastgpt-plugin#242)"},
	{"claude-opus-4-5", 64000, "platform.claude.com/docs/en/about-claude/models/overview (as quoted by Effect-TS/effect @effect/ai-anthropic 4.0.0-beta.106)"},
	{"claude-opus-4-6", 128000, "platform.claude.com/docs/en/docs/legacy-model-guide: Max output 128k"},
	{"claude-opus-4-7", 128000, "platform.claude.com/docs/claude/docs/models-overview (128k, as quoted by Effect-TS/effect @effect/ai-anthropic 4.0.0-beta.106)"},
	{"claude-opus-4-8", 128000, "platform.claude.com/docs/resources/overview (128k, as quoted by Effect-TS/effect @effect/ai-anthropic 4.0.0-beta.106)"},
	{"claude-sonnet-4-6", 64000, "platform.claude.com/docs/en/docs/legacy-model-guide: Max output 64k"},
	{"claude-haiku-4-5", 64000, "platform.claude.com/docs/en/models: Claude Haiku 4.5, 64K"},
	{"claude-opus-5", 128000, "platform.claude.com/docs/en/models: Claude Opus 5 and 5.5, 128K"},
	{"claude-sonnet-5", 128000, "platform.claude.com/docs/en/models: Claude Sonnet 5, 128K"},
	{"claude-fable-5", 128000, "platform.claude.com/docs/en/models: Claude Fable 5 and 5.1, 128K"},
	{"claude-mythos-5", 128000, "platform.claude.com/docs/en/about-claude/models/overview: Claude Mythos 5 shares Claude Fable 5's specs"},
	// OpenAI: "max output tokens" of each model's page (developers.openai.com/api/docs/models/...).
	{"gpt-4o", 16384, "developers.openai.com/api/docs/models/gpt-4o (as quoted by OpenAI-DotNet's Model docs)"},
	{"gpt-4.1", 32768, "developers.openai.com/api/docs/models/gpt-4.1 (as quoted by vercel.com/ai-gateway/models/gpt-4.1-fast)"},
	{"o1", 100000, "developers.openai.com/api/docs/models/o1 (not re-read here)"},
	{"o1-mini", 65536, "developers.openai.com/api/docs/models/o1-mini (not re-read here)"},
	{"o1-preview", 32768, "developers.openai.com/api/docs/models/o1-preview (not re-read here)"},
	{"o3", 100000, "developers.openai.com/api/docs/models/o3 (as quoted by RooCodeInc/Roo-Code#2691)"},
	{"o4-mini", 100000, "developers.openai.com/api/docs/models/o4-mini (as quoted by RooCodeInc/Roo-Code#2691)"},
	{"gpt-5", 128000, "developers.openai.com/api/docs/models/gpt-5, gpt-5.1, gpt-5.2, gpt-5.5: 128,000 (as quoted by vercel.com/ai-gateway, withceleste/celeste-python#67, docs.oxen.ai)"},
	{"gpt-5-chat", 16384, "developers.openai.com/api/docs/models/gpt-5-chat-latest (not re-read here)"},
	{"gpt-5.1-chat", 16384, "developers.openai.com/api/docs/models/gpt-5.1-chat-latest (not re-read here)"},
	{"gpt-5.2-chat", 16384, "developers.openai.com/api/docs/models/gpt-5.2-chat-latest (not re-read here)"},
	// Google: "Output token limit" of each model's page; maxOutputTokens bounds thinking and
	// answer together (googleapis/python-genai#2062).
	{"gemini-2.0", 8192, "ai.google.dev/gemini-api/docs/models/gemini-2.0-flash: output token limit 8,192"},
	{"gemini-2.5", 65536, "ai.google.dev/gemini-api/docs/models (Gemini 2.5 Pro, Flash, Flash-Lite: 65,536; Vertex AI's page says 65,535)"},
	{"gemini-3", 65536, "ai.google.dev/gemini-api/docs/models/gemini-3-pro-preview: 65,536"},
}

// DocumentedMaxOutput is the documented maximum output of model's family (0: not a known
// family). A provider prefix ("anthropic/", "models/") is ignored.
func DocumentedMaxOutput(model string) int64 {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	best, tokens := 0, int64(0)
	for _, row := range documentedMaxOutput {
		rest, ok := strings.CutPrefix(m, row.prefix)
		if !ok || len(row.prefix) <= best || (rest != "" && isAlnum(rest[0])) {
			continue
		}
		best, tokens = len(row.prefix), row.tokens
	}
	return tokens
}

// maxOutputFor is the max output the gateway reserves for, and sends with, a request that
// names none: the agent's configured one, else the model's documented maximum, else
// DefaultMaxOutputTokens.
func maxOutputFor(configured int64, model string) int64 {
	if configured > 0 {
		return configured
	}
	if n := DocumentedMaxOutput(model); n > 0 {
		return n
	}
	return DefaultMaxOutputTokens
}

// thinkingUnder is a thinking budget kept below the max output it comes with: Anthropic's
// budget_tokens must be less than max_tokens, and Gemini counts thoughts within
// maxOutputTokens, so a budget at or over the cap would leave the answer nothing. Only a
// budget the gateway's cap undercut is lowered (a CLI's own pair is its own); floor is the
// least budget the API takes (a budget that cannot stay above it is left for the API to
// refuse rather than silently changed into no thinking). ok says it was lowered.
func thinkingUnder(budget, maxOutput, floor int64) (int64, bool) {
	if budget <= 0 || maxOutput <= 0 || budget < maxOutput || maxOutput-1 < floor {
		return budget, false
	}
	return maxOutput - 1, true
}
