package agent

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the model client's; several Clients (one per endpoint) share them on one registry.
// Labels are bounded: endpoint and model come from the config, outcome and status are enums.
type metrics struct {
	requests *prometheus.CounterVec   // endpoint, model, outcome (ok|retried|failed|refused), status (2xx|4xx|429|5xx|transport|timeout)
	tokens   *prometheus.CounterVec   // endpoint, model, kind (prompt|completion)
	cost     *prometheus.CounterVec   // endpoint, model
	limit    *prometheus.GaugeVec     // endpoint
	latency  *prometheus.HistogramVec // endpoint, model
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillfleet_model_requests_total",
			Help: "Attempts of model requests by outcome (ok, retried, failed; refused: the model gateway turned a sandboxed agent's request away) and status class.",
		}, []string{"endpoint", "model", "outcome", "status"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillfleet_model_tokens_total",
			Help: "Tokens consumed by model requests, by kind (prompt, completion).",
		}, []string{"endpoint", "model", "kind"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillfleet_model_cost_total",
			Help: "Cost of model requests in the price table's currency units.",
		}, []string{"endpoint", "model"}),
		limit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "skillfleet_model_concurrency_limit",
			Help: "Current adaptive concurrency limit of a model endpoint.",
		}, []string{"endpoint"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "skillfleet_model_request_duration_seconds",
			Help:    "Latency of one model request attempt.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 20, 40, 80, 160},
		}, []string{"endpoint", "model"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	m.requests, err = register(reg, m.requests)
	if err != nil {
		return nil, err
	}
	if m.tokens, err = register(reg, m.tokens); err != nil {
		return nil, err
	}
	if m.cost, err = register(reg, m.cost); err != nil {
		return nil, err
	}
	if m.limit, err = register(reg, m.limit); err != nil {
		return nil, err
	}
	if m.latency, err = register(reg, m.latency); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or returns the collector already registered under its name, so that
// every endpoint's Client can share one registry.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}
