package coordinator

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// metrics are the coordinator's Prometheus series; labels are bounded (states, verdicts,
// outcomes), never run, job or case ids.
type metrics struct {
	submitted prometheus.Counter
	active    prometheus.Gauge
	runs      *prometheus.CounterVec
	cases     *prometheus.CounterVec
	published prometheus.Counter
	results   *prometheus.CounterVec
	duration  prometheus.Histogram
	swept     *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		submitted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skillfleet_coordinator_runs_submitted_total", Help: "Runs accepted for execution.",
		}),
		active: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "skillfleet_coordinator_runs_active", Help: "Runs this coordinator is driving now.",
		}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillfleet_coordinator_runs_total", Help: "Finished runs by final state.",
		}, []string{"state"}),
		cases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillfleet_coordinator_cases_total", Help: "Cases of finished runs by verdict.",
		}, []string{"verdict"}),
		published: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skillfleet_coordinator_jobs_published_total", Help: "Jobs published to the queue (republications after a restart included).",
		}),
		results: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillfleet_coordinator_results_total", Help: "Results received, by outcome: accepted, duplicate (a redelivered job), forged (without the job's secret: refused), unknown or malformed. Results replayed from the stream after a restart are not counted again.",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "skillfleet_coordinator_run_duration_seconds", Help: "Time from submission to the end of a run.",
			Buckets: prometheus.ExponentialBucketsRange(1, 24*3600, 16),
		}),
		swept: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillfleet_coordinator_swept_total", Help: "What retention removed: run records of runs past retention, and bundles no kept run refers to.",
		}, []string{"kind"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.submitted, m.active, m.runs, m.cases, m.published, m.results, m.duration, m.swept} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

func (m *metrics) finished(st *pb.RunStatus, took time.Duration) {
	m.runs.WithLabelValues(strings.ToLower(strings.TrimPrefix(st.GetState().String(), "RUN_STATE_"))).Inc()
	cs := st.GetCases()
	for verdict, n := range map[string]int32{
		"passed": cs.GetPassed(), "failed": cs.GetFailed(), "errored": cs.GetErrored(),
		"timed_out": cs.GetTimedOut(), "skipped": cs.GetSkipped(),
	} {
		m.cases.WithLabelValues(verdict).Add(float64(n))
	}
	m.duration.Observe(took.Seconds())
}
