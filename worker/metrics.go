package worker

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// metrics are the worker's Prometheus series. Labels are bounded: verdict and kind only, never
// run, job or case ids.
type metrics struct {
	jobs          *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	queueWait     prometheus.Histogram
	inFlight      prometheus.Gauge
	retries       prometheus.Counter
	malformed     prometheus.Counter
	fetchErrors   prometheus.Counter
	publishErrors prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, slots int) (*metrics, error) {
	m := &metrics{
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillfleet_worker_jobs_total", Help: "Jobs finished by this worker, by verdict and case kind.",
		}, []string{"verdict", "kind"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "skillfleet_worker_job_duration_seconds", Help: "Wall time of a job on the worker, from pickup to result.",
			Buckets: prometheus.ExponentialBucketsRange(0.05, 600, 14),
		}, []string{"kind"}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "skillfleet_worker_queue_wait_seconds", Help: "Time a job waited in the queue before a worker picked it up.",
			Buckets: prometheus.ExponentialBucketsRange(0.001, 3600, 16),
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "skillfleet_worker_jobs_in_flight", Help: "Jobs running on this worker now.",
		}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skillfleet_worker_infrastructure_retries_total", Help: "Jobs handed back for redelivery after an infrastructure failure.",
		}),
		malformed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skillfleet_worker_malformed_jobs_total", Help: "Job messages that could not be decoded and were terminated.",
		}),
		fetchErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skillfleet_worker_fetch_errors_total", Help: "Failed fetches from the job consumers.",
		}),
		publishErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skillfleet_worker_result_publish_errors_total", Help: "Results that could not be stored; their jobs were left for redelivery.",
		}),
	}
	slotsGauge := prometheus.NewGauge(prometheus.GaugeOpts{Name: "skillfleet_worker_slots", Help: "Jobs this worker runs at once."})
	slotsGauge.Set(float64(slots))
	if reg != nil {
		for _, c := range []prometheus.Collector{m.jobs, m.duration, m.queueWait, m.inFlight, m.retries, m.malformed, m.fetchErrors, m.publishErrors, slotsGauge} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

func (m *metrics) observe(r *pb.Result) {
	verdict := strings.ToLower(strings.TrimPrefix(r.GetVerdict().String(), "VERDICT_"))
	kind := strings.ToLower(strings.TrimPrefix(r.GetKind().String(), "CASE_KIND_"))
	m.jobs.WithLabelValues(verdict, kind).Inc()
	m.duration.WithLabelValues(kind).Observe(float64(r.GetTimings().GetTotalMs()) / 1000)
}
