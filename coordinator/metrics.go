package coordinator

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skillfleet/skillfleet/internal/text"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
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
	evicted   prometheus.Counter
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
		evicted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skillfleet_coordinator_runs_evicted_total", Help: "Finished runs whose results and documents were removed from the streams to make room for running runs (their reports are kept).",
		}),
		swept: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillfleet_coordinator_swept_total", Help: "What retention removed: run records of runs past retention, and bundles no kept run refers to.",
		}, []string{"kind"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.submitted, m.active, m.runs, m.cases, m.published, m.results, m.duration, m.swept, m.evicted, m.suitePass, m.suiteLast} {
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

// maxTeamSeries bounds the teams the share metrics describe per scrape: the ones holding the
// most, since anyone an authenticating proxy names is a team.
const maxTeamSeries = 200

var (
	windowDesc = prometheus.NewDesc("skillfleet_dispatch_window_jobs",
		"Jobs a lane holds at most (queued and running): the running ones, the idle slots and a short backlog.", []string{"lane"}, nil)
	teamJobsDesc = prometheus.NewDesc("skillfleet_team_jobs_outstanding",
		"Jobs a team holds of a lane now (queued or running).", []string{"team", "lane"}, nil)
	teamBytesDesc = prometheus.NewDesc("skillfleet_team_bytes",
		"Bytes a team holds of a shared stream (results, artifacts), for unfinished runs (live) and finished runs whose results are kept (kept).", []string{"team", "stream", "state"}, nil)
	teamOverDesc = prometheus.NewDesc("skillfleet_team_over_bound",
		"1 while a team's unfinished runs are over one of its byte bounds: its runs are not fed and its new runs are refused.", []string{"team"}, nil)
)

// shareCollector reads the fair share and the teams' bytes at scrape time, so that a team
// gone leaves no stale series.
type shareCollector struct{ c *Coordinator }

func (s shareCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- windowDesc
	ch <- teamJobsDesc
	ch <- teamBytesDesc
	ch <- teamOverDesc
}

func (s shareCollector) Collect(ch chan<- prometheus.Metric) {
	for _, l := range queue.Lanes() {
		shares, window := s.c.feed.shares(l)
		if window == 0 {
			continue
		}
		ch <- prometheus.MustNewConstMetric(windowDesc, prometheus.GaugeValue, float64(window), string(l))
		for _, team := range topTeams(shares, func(v laneShare) int64 { return int64(v.Outstanding) }) {
			ch <- prometheus.MustNewConstMetric(teamJobsDesc, prometheus.GaugeValue, float64(shares[team].Outstanding), team, string(l))
		}
	}
	s.c.usage.mu.Lock()
	teams := make(map[string]teamBytes, len(s.c.usage.teams))
	for name, t := range s.c.usage.teams {
		teams[name] = *t
	}
	s.c.usage.mu.Unlock()
	for _, team := range topTeams(teams, func(t teamBytes) int64 { return t.liveResults + t.keptResults + t.liveArtifacts + t.keptArtifacts }) {
		t := teams[team]
		for _, v := range []struct {
			stream, state string
			n             int64
		}{{"results", "live", t.liveResults}, {"results", "kept", t.keptResults}, {"artifacts", "live", t.liveArtifacts}, {"artifacts", "kept", t.keptArtifacts}} {
			ch <- prometheus.MustNewConstMetric(teamBytesDesc, prometheus.GaugeValue, float64(v.n), team, v.stream, v.state)
		}
		over := 0.0
		if t.over != "" {
			over = 1
		}
		ch <- prometheus.MustNewConstMetric(teamOverDesc, prometheus.GaugeValue, over, team)
	}
}

// topTeams returns the keys of m with the largest size, at most maxTeamSeries, largest first
// (names break ties).
func topTeams[V any](m map[string]V, size func(V) int64) []string {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		if sa, sb := size(m[a]), size(m[b]); sa != sb {
			if sa > sb {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return names[:min(len(names), maxTeamSeries)]
}
