package agent

import "time"

// Defaults of an Endpoint's zero fields.
const (
	DefaultMaxConcurrency = 8
	DefaultMaxRetries     = 4
	DefaultRequestTimeout = 2 * time.Minute
)

// Price is what an endpoint's model costs, in currency units per million tokens.
type Price struct {
	PromptPerMTok     float64
	CompletionPerMTok float64
}

// Cost is the price of the given token counts.
func (p Price) Cost(prompt, completion int64) float64 {
	return float64(prompt)*p.PromptPerMTok/1e6 + float64(completion)*p.CompletionPerMTok/1e6
}

// Endpoint is one configured OpenAI-compatible Chat Completions endpoint.
type Endpoint struct {
	// Name is the endpoint's name in the config; it is a metric label, so it must be bounded.
	Name    string
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

// Usage is the tokens a job (or a run) consumed and what they cost.
type Usage struct {
	PromptTokens     int64
	CompletionTokens int64
	Cost             float64
}

// Add adds o to u.
func (u *Usage) Add(o Usage) {
	u.PromptTokens += o.PromptTokens
	u.CompletionTokens += o.CompletionTokens
	u.Cost += o.Cost
}

// Total is prompt plus completion tokens.
func (u Usage) Total() int64 { return u.PromptTokens + u.CompletionTokens }
