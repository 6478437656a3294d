package agent

import "time"

// Defaults of an Endpoint's zero fields.
const (
	DefaultMaxConcurrency = 8
	DefaultMaxRetries     = 4
	DefaultRequestTimeout = 2 * time.Minute
)

// Price is what an endpoint's model costs, in currency units per million tokens. Cache reads
// and writes are priced apart where the provider prices them apart; a zero cache price means
// the prompt price (a cache price of nothing is not what any provider charges).
type Price struct {
	PromptPerMTok     float64
	CompletionPerMTok float64
	CacheReadPerMTok  float64
	CacheWritePerMTok float64
}

// Cost is the price of the given token counts, none of them from a cache.
func (p Price) Cost(prompt, completion int64) float64 {
	return float64(prompt)*p.PromptPerMTok/1e6 + float64(completion)*p.CompletionPerMTok/1e6
}

// CostOf is the price of a usage whose prompt tokens include cache reads and writes.
func (p Price) CostOf(u Usage) float64 {
	read, write := min(max(u.CacheReadTokens, 0), u.PromptTokens), max(u.CacheWriteTokens, 0)
	write = min(write, u.PromptTokens-read)
	plain := u.PromptTokens - read - write
	readPrice, writePrice := p.CacheReadPerMTok, p.CacheWritePerMTok
	if readPrice == 0 {
		readPrice = p.PromptPerMTok
	}
	if writePrice == 0 {
		writePrice = p.PromptPerMTok
	}
	return float64(plain)*p.PromptPerMTok/1e6 + float64(read)*readPrice/1e6 +
		float64(write)*writePrice/1e6 + float64(u.CompletionTokens)*p.CompletionPerMTok/1e6
}

// Endpoint is one configured model endpoint.
type Endpoint struct {
	// Name is the endpoint's name in the config; it is a metric label, so it must be bounded.
	Name string
	// API is the protocol the endpoint speaks: openai (the default: Chat Completions),
	// anthropic (Messages) or gemini (generateContent).
	API string
	// BaseURL is the endpoint's base URL as its protocol's SDK takes it: OpenAI's with its
	// version path, Anthropic's and Gemini's without.
	BaseURL string
	// APIKey is resolved by the caller (from an env var it names); it is never logged. Empty
	// sends no Authorization header (local servers).
	APIKey string
	// Model is the model requests use when they name none.
	Model string
	// MaxConcurrency is the ceiling of the adaptive concurrency limit (0 = 8).
	MaxConcurrency int
	// MaxRetries bounds the retries after the first attempt (0 = 4, negative = none).
	MaxRetries int
	// RequestTimeout bounds one attempt (0 = 2 minutes).
	RequestTimeout time.Duration
	// Price turns token usage into cost. A different model is a different Endpoint, so that
	// its price is right.
	Price Price
	// MaxOutput is the max output of a conversation that names none: the operator's
	// max_output_tokens (0: none sent, the provider's default, except Anthropic's, which
	// requires one: DefaultMaxOutput).
	MaxOutput int64
}

func (ep Endpoint) withDefaults() Endpoint {
	if ep.MaxConcurrency <= 0 {
		ep.MaxConcurrency = DefaultMaxConcurrency
	}
	switch {
	case ep.MaxRetries == 0:
		ep.MaxRetries = DefaultMaxRetries
	case ep.MaxRetries < 0:
		ep.MaxRetries = 0
	}
	if ep.RequestTimeout <= 0 {
		ep.RequestTimeout = DefaultRequestTimeout
	}
	return ep
}

// Usage is the tokens a job (or a run) consumed and what they cost. PromptTokens counts every
// prompt token; CacheReadTokens and CacheWriteTokens are the part of them the provider's
// prompt cache served or stored.
type Usage struct {
	PromptTokens     int64
	CompletionTokens int64
	CacheReadTokens  int64
	CacheWriteTokens int64
	Cost             float64
}

// Add adds o to u.
func (u *Usage) Add(o Usage) {
	u.PromptTokens += o.PromptTokens
	u.CompletionTokens += o.CompletionTokens
	u.CacheReadTokens += o.CacheReadTokens
	u.CacheWriteTokens += o.CacheWriteTokens
	u.Cost += o.Cost
}

// Total is prompt plus completion tokens.
func (u Usage) Total() int64 { return u.PromptTokens + u.CompletionTokens }
