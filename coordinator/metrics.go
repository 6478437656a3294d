package coordinator

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skillfleet/skillfleet/internal/text"
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
	// suitePass and suiteLast are per suite and lane: bounded to maxSuiteSeries suites, the
	// least recently finished one's series removed to make room.
	suitePass, suiteLast *prometheus.GaugeVec
	suites               suiteSeries
}

// maxSuiteSeries bounds the suites the per-suite gauges keep: suites, never cases, and not
// without end either, since anyone who submits names a suite.
const maxSuiteSeries = 200

// suiteSeries remembers which suite and lane pairs have series, oldest first.
type suiteSeries struct {
	mu    sync.Mutex
	order [][2]string
}

// touch records that suite and lane were just updated and returns the pair to evict, if any.
func (s *suiteSeries) touch(suite, lane string) (evict [2]string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := [2]string{suite, lane}
	if i := slices.Index(s.order, key); i >= 0 {
		s.order = append(slices.Delete(s.order, i, i+1), key)
		return evict, false
	}
	s.order = append(s.order, key)
	if len(s.order) > maxSuiteSeries {
		evict, s.order = s.order[0], s.order[1:]
		return evict, true
	}
	return evict, false
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
		suitePass: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "skillfleet_suite_pass_ratio", Help: "Cases passed over cases run in the last completed run of a suite, by suite name and lane (at most 200 suites: the least recently finished one's series goes first).",
		}, []string{"suite", "lane"}),
		suiteLast: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "skillfleet_suite_last_run_timestamp_seconds", Help: "When the last run of a suite finished (whatever its state), by suite name and lane.",
		}, []string{"suite", "lane"}),
		swept: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillfleet_coordinator_swept_total", Help: "What retention removed: run records of runs past retention, and bundles no kept run refers to.",
		}, []string{"kind"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.submitted, m.active, m.runs, m.cases, m.published, m.results, m.duration, m.swept, m.suitePass, m.suiteLast} {
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

	suite := text.ClipBytes(st.GetSpec().GetName(), 64)
	if suite == "" {
		suite = "unnamed"
	}
	lane := "ondemand"
	if st.GetSpec().GetPriority() == pb.Priority_PRIORITY_SCHEDULED {
		lane = "scheduled"
	}
	if old, ok := m.suites.touch(suite, lane); ok {
		m.suitePass.DeleteLabelValues(old[0], old[1])
		m.suiteLast.DeleteLabelValues(old[0], old[1])
	}
	m.suiteLast.WithLabelValues(suite, lane).Set(float64(st.GetFinishedAt().AsTime().Unix()))
	if st.GetState() == pb.RunState_RUN_STATE_COMPLETED && cs.GetTotal() > 0 {
		m.suitePass.WithLabelValues(suite, lane).Set(float64(cs.GetPassed()) / float64(cs.GetTotal()))
	}
}
