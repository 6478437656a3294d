package queue

import (
	"errors"
	"fmt"
	"time"
)

// Config tunes the topology. The zero value is not useful; start from DefaultConfig.
type Config struct {
	// AckWait is how long a worker may hold a job without acking or heartbeating before it is
	// redelivered. Workers heartbeat (InProgress) every HeartbeatInterval.
	AckWait time.Duration
	// MaxDeliver is how many deliveries a job gets. The worker handling the last one records
	// the failure and terminates the message: the server does not remove it (see Attempt).
	MaxDeliver int
	// MaxAckPending bounds the jobs a lane consumer has out at once, fleet-wide.
	MaxAckPending int
	// MaxWaiting bounds the pull requests waiting on a lane consumer, fleet-wide: at least
	// workers × slots. The server cannot change it on an existing consumer, so a new value
	// applies only to a consumer created afresh.
	MaxWaiting int
	// JobsDuplicates is the jobs stream's deduplication window.
	JobsDuplicates time.Duration
	// ResultsDuplicates is the results stream's deduplication window.
	ResultsDuplicates time.Duration
	// ResultsMaxAge is how long results are kept.
	ResultsMaxAge time.Duration
	// Replicas of every stream, KV bucket and object store (1 for a single server, 3 for a
	// cluster).
	Replicas int
	// TempDir is where PutBundle spools a bundle while hashing it; "" means os.TempDir().
	TempDir string
	// JobsMaxBytes and JobsMaxMsgs bound the queued jobs (0: no limit). The jobs stream
	// discards new messages when full: a publish beyond them is refused (and retried by the
	// coordinator), never a queued job dropped.
	JobsMaxBytes int64
	JobsMaxMsgs  int64
	// JobsMaxMsgSize bounds one job message (0: the server's max payload); the coordinator
	// refuses at plan time a case whose job would not fit.
	JobsMaxMsgSize int32
	// ResultsMaxBytes bounds the results stream (0: no limit). A full stream refuses new
	// results (old ones go only at ResultsMaxAge), and a coordinator refuses new runs above
	// 90% of it; size it for ResultsMaxAge's worth of results.
	ResultsMaxBytes int64
	// ArtifactsMaxBytes bounds the artifacts stream (0: no limit); a full stream refuses new
	// artifacts, as the results stream refuses results.
	ArtifactsMaxBytes int64
	// BundlesMaxBytes bounds the bundle object store (0: no limit); an upload beyond it is
	// refused until retention removes old bundles.
	BundlesMaxBytes int64
	// BundleStall is how long a bundle transfer may go without a byte before it fails
	// (ErrBundleStalled); 0 means twice AckWait, and at least 10 s.
	BundleStall time.Duration
}

// DefaultConfig returns the production defaults.
func DefaultConfig() Config {
	return Config{
		AckWait:           30 * time.Second,
		MaxDeliver:        3,
		MaxAckPending:     10_000,
		MaxWaiting:        4096,
		JobsDuplicates:    10 * time.Minute,
		ResultsDuplicates: 10 * time.Minute,
		ResultsMaxAge:     7 * 24 * time.Hour,
		Replicas:          1,
		// The server reserves each limit against its storage (a JetStream server gets 75 % of
		// its disk's free space by default), so together they stay well under a laptop's 16 GiB.
		JobsMaxBytes:      1 << 30,
		JobsMaxMsgs:       1_000_000,
		ResultsMaxBytes:   4 << 30,
		BundlesMaxBytes:   2 << 30,
		ArtifactsMaxBytes: 1 << 30,
	}
}

// HeartbeatInterval is how often a worker should call InProgress on a job it holds: a third of
// AckWait, so that two lost heartbeats still leave the job with its worker.
func (c Config) HeartbeatInterval() time.Duration { return c.AckWait / 3 }

// Validate reports every bad field at once.
func (c Config) Validate() error {
	var errs []error
	if c.AckWait <= 0 {
		errs = append(errs, fmt.Errorf("AckWait must be positive, got %s", c.AckWait))
	}
	if c.MaxDeliver < 1 {
		errs = append(errs, fmt.Errorf("MaxDeliver must be at least 1, got %d", c.MaxDeliver))
	}
	if c.MaxAckPending < 1 {
		errs = append(errs, fmt.Errorf("MaxAckPending must be at least 1, got %d", c.MaxAckPending))
	}
	if c.MaxWaiting < 1 {
		errs = append(errs, fmt.Errorf("MaxWaiting must be at least 1, got %d", c.MaxWaiting))
	}
	if c.JobsDuplicates <= 0 {
		errs = append(errs, fmt.Errorf("JobsDuplicates must be positive, got %s", c.JobsDuplicates))
	}
	if c.ResultsDuplicates <= 0 {
		errs = append(errs, fmt.Errorf("ResultsDuplicates must be positive, got %s", c.ResultsDuplicates))
	}
	if c.ResultsMaxAge <= 0 {
		errs = append(errs, fmt.Errorf("ResultsMaxAge must be positive, got %s", c.ResultsMaxAge))
	} else if c.ResultsDuplicates > c.ResultsMaxAge {
		// The server rejects a duplicates window longer than the max age.
		errs = append(errs, fmt.Errorf("ResultsDuplicates (%s) must not exceed ResultsMaxAge (%s)", c.ResultsDuplicates, c.ResultsMaxAge))
	}
	for _, l := range []struct {
		name string
		v    int64
	}{{"JobsMaxBytes", c.JobsMaxBytes}, {"JobsMaxMsgs", c.JobsMaxMsgs}, {"JobsMaxMsgSize", int64(c.JobsMaxMsgSize)}, {"ResultsMaxBytes", c.ResultsMaxBytes}, {"BundlesMaxBytes", c.BundlesMaxBytes}, {"ArtifactsMaxBytes", c.ArtifactsMaxBytes}} {
		if l.v < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative (0 means no limit), got %d", l.name, l.v))
		}
	}
	if c.Replicas < 1 || c.Replicas > 5 {
		errs = append(errs, fmt.Errorf("the number of Replicas must be 1 to 5, got %d", c.Replicas))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("queue: invalid config: %w", err)
	}
	return nil
}
