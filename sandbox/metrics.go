package sandbox

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the Runner's Prometheus series. Labels are bounded: never job or container ids.
type metrics struct {
	startLatency *prometheus.HistogramVec // path=cold|warm
	created      prometheus.Counter
	removed      prometheus.Counter
	poolHits     prometheus.Counter
	poolMisses   prometheus.Counter
	reaped       prometheus.Counter
	execs        *prometheus.CounterVec // outcome=ok|timed_out|oom|exited|error
}

func newMetrics(reg prometheus.Registerer, live, idle func() float64) (*metrics, error) {
	m := &metrics{
		startLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "skillfleet_sandbox_start_seconds",
			Help:    "Time a job waited for its started sandbox container, by path (cold create+start or warm pool).",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .2, .3, .5, .75, 1, 2, 5, 10},
		}, []string{"path"}),
		created: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skillfleet_sandbox_containers_created_total",
			Help: "Sandbox containers created (cold and warm).",
		}),
		removed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skillfleet_sandbox_containers_removed_total",
			Help: "Sandbox containers removed by this worker (released, discarded or reaped).",
		}),
		poolHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skillfleet_sandbox_pool_hits_total",
			Help: "Acquires served by a warm pool container.",
		}),
		poolMisses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skillfleet_sandbox_pool_misses_total",
			Help: "Acquires that found no warm container and started one cold (pool enabled only).",
		}),
		reaped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skillfleet_sandbox_reaped_total",
			Help: "Stray sandbox containers removed by the reaper.",
		}),
		execs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillfleet_sandbox_execs_total",
			Help: "Commands run in sandboxes, by outcome.",
		}, []string{"outcome"}),
	}
	cs := []prometheus.Collector{m.startLatency, m.created, m.removed, m.poolHits, m.poolMisses, m.reaped, m.execs,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "skillfleet_sandbox_containers_live",
			Help: "Sandbox containers this worker currently owns (in use or idle in the pool).",
		}, live),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "skillfleet_sandbox_pool_idle",
			Help: "Started containers waiting in the warm pool.",
		}, idle),
	}
	var errs []error
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("sandbox: register metrics: %w", err)
	}
	for _, o := range []string{"ok", "timed_out", "oom", "exited", "error"} {
		m.execs.WithLabelValues(o)
	}
	m.startLatency.WithLabelValues("cold")
	m.startLatency.WithLabelValues("warm")
	return m, nil
}

// Counters is a snapshot of what a Runner has done since New, for tests, logs and the bench
// command (Prometheus has the same numbers).
type Counters struct {
	Created, Removed, PoolHits, PoolMisses, Reaped int64
	Live, Idle                                     int // now
}

type counters struct {
	created, removed, poolHits, poolMisses, reaped atomic.Int64
}
