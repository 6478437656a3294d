package fleet

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/worker"
)

// QueueWorkerConfig is one worker's part on NATS: who it is, how many jobs it runs at once,
// where it keeps bundles and how it logs in. What the coordinator's consumers enforce
// (AckWait, MaxDeliver) it reads from them, not from here.
type QueueWorkerConfig struct {
	// ID names the worker in results and logs (worker.Config.ID).
	ID    string
	Slots int
	// DrainGrace is how long running jobs may finish once Run's context ends.
	DrainGrace time.Duration
	// CacheDir is the bundle cache.
	CacheDir string
	NATS     queue.ConnectConfig
	// AgentDigests are the digests of the agents' configurations (worker.Config.AgentDigests).
	AgentDigests map[string]string
}

// QueueWorkerDeps are what a QueueWorker runs jobs with.
type QueueWorkerDeps struct {
	// Executor runs each job: the sandboxes in the worker daemon, a stand-in in the fleet
	// simulator. Everything else (claims, heartbeats, results, acks, drain) is the worker's.
	Executor worker.Executor
	Log      *zap.Logger
	// Registry receives the worker's metrics; nil keeps them private.
	Registry prometheus.Registerer
	// Rates, when set, is bound to the fleet's rate budgets once the topology is open.
	Rates *LateRates
}

// QueueWorker is a worker bound to NATS as the worker daemon binds it: a connection of its
// own, the topology the coordinator created (opened, never changed, so the worker user of
// deploy/nats/permissions.conf is enough), the lane consumers, a result publisher, and the
// worker pulling from them.
type QueueWorker struct {
	nc      *queue.Conn
	results *queue.ResultPublisher
	w       *worker.Worker
	log     *zap.Logger
	closed  sync.Once
}

// NewQueueWorker connects to NATS and binds to the coordinator's topology, waiting (and
// logging why) while either is not there yet, until ctx ends. Run starts pulling jobs.
func NewQueueWorker(ctx context.Context, cfg QueueWorkerConfig, deps QueueWorkerDeps) (qw *QueueWorker, err error) {
	if deps.Executor == nil {
		return nil, errors.New("fleet: a worker needs an executor")
	}
	log := deps.Log
	if log == nil {
		log = zap.NewNop()
	}
	// A worker may start before NATS is reachable: it waits (logging why) rather than exit.
	nc, err := queue.ConnectRetry(ctx, cfg.NATS, queue.RetryConfig{}, log.Named("nats"))
	if err != nil {
		return nil, err
	}
	qw = &QueueWorker{nc: nc, log: log}
	defer func() {
		if err != nil {
			qw.Close()
		}
	}()
	topo, err := openTopology(ctx, nc, log)
	if err != nil {
		return nil, err
	}
	if deps.Rates != nil {
		deps.Rates.Bind(topo.Rates())
	}
	// The coordinator owns the topology; what its consumers enforce is what this worker obeys.
	lanes := topo.LaneConsumers()
	ackWait, maxDeliver := lanes[0].AckWait(), lanes[0].MaxDeliver()
	log.Info("bound to the job queue", zap.Duration("ack_wait", ackWait), zap.Int("max_deliver", maxDeliver))
	if qw.results, err = topo.NewResultPublisher(queue.DefaultResultPublisherConfig()); err != nil {
		return nil, err
	}
	qw.w, err = worker.New(worker.Config{
		ID: cfg.ID, Slots: cfg.Slots, MaxAttempts: maxDeliver, Heartbeat: ackWait / 3,
		DrainGrace: cfg.DrainGrace, CacheDir: cfg.CacheDir, MaxResultBytes: int(nc.MaxPayload()),
		AgentDigests: cfg.AgentDigests,
	}, worker.Deps{
		Lanes:         queueLanes(lanes),
		Results:       qw.results,
		Bundles:       topo,
		Executor:      deps.Executor,
		Artifacts:     queueArtifacts{topo},
		Cancellations: topo,
		Withdrawals:   topo,
		Log:           log.Named("worker"),
		Registry:      deps.Registry,
	})
	if err != nil {
		return nil, err
	}
	return qw, nil
}

// Connected reports whether the worker's NATS connection is up, for a health check.
func (q *QueueWorker) Connected() bool { return q.nc.IsConnected() }

// Force stops running jobs at once (they go back to the queue for other workers); for a
// second signal after the first ended Run's context.
func (q *QueueWorker) Force() { q.w.Force() }

// Run pulls and runs jobs until ctx ends, then drains (worker.Worker.Run) and closes the
// worker's publisher and connection.
func (q *QueueWorker) Run(ctx context.Context) error {
	defer q.Close()
	return q.w.Run(ctx)
}

// Close releases the publisher and the connection; for a caller that does not get to Run.
func (q *QueueWorker) Close() {
	q.closed.Do(func() {
		if q.results != nil {
			// The worker has waited for its results before Run returned; this only releases
			// the publisher.
			_ = q.results.Close(context.Background())
		}
		q.nc.Close()
	})
}

// openTopology binds to the streams and consumers the coordinator created, waiting for them
// when the worker starts first.
func openTopology(ctx context.Context, nc *queue.Conn, log *zap.Logger) (*queue.Topology, error) {
	for {
		topo, err := queue.OpenWorker(ctx, nc, queue.DefaultConfig())
		if err == nil {
			return topo, nil
		}
		log.Warn("job queue not ready; waiting for the coordinator to create it", zap.Error(err))
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
