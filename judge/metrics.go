package judge

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics tell how the judge decides, beyond the model client's request metrics: how often it
// cannot decide (an errored case), how often its samples disagree (an ambiguous criterion or a
// weak judge model) and how much the cache saves. Every label is an enum.
type metrics struct {
	evaluations *prometheus.CounterVec // verdict (passed|failed|errored), source (model|cache)
	samples     *prometheus.CounterVec // outcome (passed|failed|no_answer|off_schema)
	split       prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		evaluations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillfleet_judge_evaluations_total",
			Help: "semantic_match assertions decided by the judge, by verdict (errored: no strict majority) and source (model or cache).",
		}, []string{"verdict", "source"}),
		samples: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillfleet_judge_samples_total",
			Help: "Single judge answers, by outcome: passed, failed, no_answer (the request failed) or off_schema (an answer outside the verdict schema, or a refusal).",
		}, []string{"outcome"}),
		split: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skillfleet_judge_split_votes_total",
			Help: "Evaluations with several votes whose samples did not all agree.",
		}),
	}
	// Series exist from the start, so a rate over them is 0, not absent.
	for _, v := range []string{"passed", "failed", "errored"} {
		for _, s := range []string{"model", "cache"} {
			m.evaluations.WithLabelValues(v, s)
		}
	}
	for _, o := range []string{"passed", "failed", "no_answer", "off_schema"} {
		m.samples.WithLabelValues(o)
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.evaluations, m.samples, m.split} {
		if err := reg.Register(c); err != nil {
			return nil, errors.Join(errors.New("judge: metrics"), err)
		}
	}
	return m, nil
}
