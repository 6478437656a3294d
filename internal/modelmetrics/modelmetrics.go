// Package modelmetrics holds the Prometheus metrics of model requests that the model client
// (package agent) and the model gateway (package gateway) share on one registry, so that a
// dashboard sees the built-in agent's and an agent CLI's traffic under the same names.
package modelmetrics

import (
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the model requests' metrics; several clients and gateways (one per endpoint)
// share them on one registry. Labels are bounded: endpoint and model come from the config,
// outcome, status and kind are enums.
type Metrics struct {
	// Requests counts attempts by endpoint, model, outcome (ok|retried|failed|refused) and
	// status (2xx|4xx|429|5xx|transport|timeout|no_usage|client_gone).
	Requests *prometheus.CounterVec
	// Tokens counts tokens by endpoint, model and kind (prompt|completion|cache_read|
	// cache_write; prompt includes the cache's).
	Tokens *prometheus.CounterVec
	// Cost is in the price table's currency units, by endpoint and model.
	Cost *prometheus.CounterVec
	// Limit is an endpoint's adaptive concurrency limit.
	Limit *prometheus.GaugeVec
	// Latency is one attempt's duration, by endpoint and model.
	Latency *prometheus.HistogramVec
}

// New makes the metrics and registers them on reg (nil: not registered), or takes the ones
// already registered there under the same names.
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillfleet_model_requests_total",
			Help: "Attempts of model requests by outcome (ok, retried, failed; refused: the model gateway turned a sandboxed agent's request away) and status class.",
		}, []string{"endpoint", "model", "outcome", "status"}),
		Tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillfleet_model_tokens_total",
			Help: "Tokens consumed by model requests, by kind (prompt, completion; cache_read and cache_write are the part of prompt the provider's cache served or stored).",
		}, []string{"endpoint", "model", "kind"}),
		Cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillfleet_model_cost_total",
			Help: "Cost of model requests in the price table's currency units.",
		}, []string{"endpoint", "model"}),
		Limit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "skillfleet_model_concurrency_limit",
			Help: "Current adaptive concurrency limit of a model endpoint.",
		}, []string{"endpoint"}),
		Latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "skillfleet_model_request_duration_seconds",
			Help:    "Latency of one model request attempt.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 20, 40, 80, 160},
		}, []string{"endpoint", "model"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.Requests, err = register(reg, m.Requests); err != nil {
		return nil, err
	}
	if m.Tokens, err = register(reg, m.Tokens); err != nil {
		return nil, err
	}
	if m.Cost, err = register(reg, m.Cost); err != nil {
		return nil, err
	}
	if m.Limit, err = register(reg, m.Limit); err != nil {
		return nil, err
	}
	if m.Latency, err = register(reg, m.Latency); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or returns the collector already registered under its name, so that
// every endpoint's client and gateway can share one registry.
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

// StatusClass is the bounded status label of an HTTP answer's status code.
func StatusClass(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "429"
	case status >= 500:
		return "5xx"
	case status >= 400:
		return "4xx"
	case status >= 200 && status < 300:
		return "2xx"
	}
	return "other"
}
