package coordinator

import (
	"context"
	"io"
	"time"

	"github.com/skillfleet/skillfleet/bundle"
	"github.com/skillfleet/skillfleet/queue"
)

// RunStore keeps each run's status under its run id, the latest value only (queue.RunStore).
type RunStore interface {
	Put(ctx context.Context, key string, value []byte) (revision uint64, err error)
	// Get returns an error wrapping queue.ErrNotFound for a key that holds nothing.
	Get(ctx context.Context, key string) (value []byte, revision uint64, err error)
	Delete(ctx context.Context, key string) error
	// Each calls fn with every key that holds a value and its value, in one pass over the
	// store, keys written meanwhile included; it stops at fn's first error.
	Each(ctx context.Context, fn func(key string, value []byte) error) error
	// PurgeDeletes drops the markers of keys deleted longer ago than olderThan.
	PurgeDeletes(ctx context.Context, olderThan time.Duration) (int, error)
}

// BundleStore keeps suite bundles by content digest (queue.Topology).
type BundleStore interface {
	bundle.BundleSource
	PutBundleFile(ctx context.Context, path string) (digest string, err error)
	ListBundles(ctx context.Context) ([]queue.BundleInfo, error)
	DeleteBundle(ctx context.Context, digest string) error
}

// Queue is the job queue and the results stream as the coordinator uses them (queue.Topology).
type Queue interface {
	NewJobPublisher(cfg queue.PublisherConfig) (*queue.JobPublisher, error)
	PurgeRunJobs(ctx context.Context, run string) error
	// NotifyCancelled tells the workers to stop the run's running jobs.
	NotifyCancelled(ctx context.Context, run string) error
	FollowResults(ctx context.Context, run string) (*queue.ResultIterator, error)
	// ReadCaseResults reads the results stored under one case's result key ("": those of
	// workers older than keys); GetResult one result by its sequence.
	ReadCaseResults(ctx context.Context, run, key string, fn func(queue.ResultMsg) error) error
	GetResult(ctx context.Context, run string, seq uint64) (queue.ResultMsg, error)
	// PublishResult records the coordinator's own verdict on an exhausted job, under the
	// job's result key.
	PublishResult(ctx context.Context, run, key, jobID string, attempt int, data []byte) error
	WatchExhausted(ctx context.Context, fn func(queue.ExhaustedJob)) (stop func(), err error)
	ExhaustedJobs(ctx context.Context) (jobs []queue.ExhaustedJob, undecided int, err error)
	DeleteJob(ctx context.Context, seq uint64) error
	// GetArtifact reads a document a worker stored apart from its result (a long trajectory).
	GetArtifact(ctx context.Context, run string, a queue.Artifact, maxBytes int64) ([]byte, error)
	// PurgeRunResults and PurgeRunArtifacts remove a finished run's results and documents
	// from the streams (see Evict); ArtifactsUsage is what the artifacts stream holds.
	PurgeRunResults(ctx context.Context, run string) error
	PurgeRunArtifacts(ctx context.Context, run string) error
	ArtifactsUsage(ctx context.Context) (used, max uint64, err error)
	// LaneLoad is a lane's queued, running and waiting jobs: the fair share's window.
	LaneLoad(ctx context.Context, lane queue.Lane) (queue.LaneLoad, error)
	// MaxPayload and JobsMaxMsgSize bound a job message (see maxJobBytes).
	MaxPayload() int64
	JobsMaxMsgSize() int32
	// ResultsUsage is the bytes the results stream holds and its limit (0: none): admission
	// refuses new runs when it is nearly full (see checkResultsRoom).
	ResultsUsage(ctx context.Context) (used, max uint64, err error)
	// PutReport, GetReport and DeleteReport keep finished runs' final reports (see
	// storeReport); GetReport's error wraps queue.ErrNotFound for a run that stored none.
	PutReport(ctx context.Context, run string, data []byte) error
	GetReport(ctx context.Context, run string) ([]byte, error)
	DeleteReport(ctx context.Context, run string) error
	// PutRecords, OpenRecords and DeleteRecords keep finished runs' records beside their
	// reports (see storeRecords), streamed; OpenRecords's error wraps queue.ErrNotFound for a
	// run that stored none.
	PutRecords(ctx context.Context, run string, r io.Reader) error
	OpenRecords(ctx context.Context, run string) (io.ReadCloser, int64, error)
	DeleteRecords(ctx context.Context, run string) error
}
