package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrIncompatibleStream means a stream exists with a setting the server cannot change in place
// (retention or storage). Ensure refuses to touch it; an operator must migrate it.
var ErrIncompatibleStream = errors.New("queue: incompatible existing stream")

// Topology is the set of JetStream assets skillfleet runs on, as ensured by Ensure. Its
// methods are the only way to them: no client library type leaves this package.
type Topology struct {
	// Config is what the topology was ensured (or opened) with.
	Config Config

	conn *Conn
	js   jetstream.JetStream
	// jobs is the SKILLFLEET_JOBS work queue; results the SKILLFLEET_RESULTS stream.
	jobs, results jetstream.Stream
	// onDemand and scheduled are the lanes' durable pull consumers on jobs.
	onDemand, scheduled jetstream.Consumer
	// runs is the run-state KV bucket, keyed by run id.
	runs jetstream.KeyValue
	// rates is the shared rate budgets' KV bucket; nil on a topology opened without it
	// (OpenWorker), which Rates binds on first use.
	rates jetstream.KeyValue
	// exhausted is the coordinators' consumer of the kept MAX_DELIVERIES advisories.
	exhausted jetstream.Consumer
	// bundles is the bundle object store.
	bundles jetstream.ObjectStore
	// artifacts is the artifacts stream; nil on a topology opened before Ensure made it.
	artifacts jetstream.Stream
	// reports is the finished runs' report store; nil on a topology Open made, which binds
	// it on first use.
	reports jetstream.ObjectStore
	// pullers take the lanes' jobs for LaneConsumers, made on first use.
	pullMu  sync.Mutex
	pullers map[Lane]*puller
}

// Ensure creates the streams, consumers, KV buckets and object store, or updates them to cfg.
// It is idempotent and safe to run from every coordinator and worker at start-up. A stream that
// exists with another retention policy or storage type is reported with ErrIncompatibleStream,
// naming it, and left alone: the server cannot change either in place.
func Ensure(ctx context.Context, conn *Conn, cfg Config) (*Topology, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	js := conn.js
	t := &Topology{conn: conn, js: js, Config: cfg}
	var err error
	if t.jobs, err = ensureStream(ctx, js, jobsStreamConfig(cfg)); err != nil {
		return nil, err
	}
	if t.results, err = ensureStream(ctx, js, resultsStreamConfig(cfg)); err != nil {
		return nil, err
	}
	if t.artifacts, err = ensureStream(ctx, js, artifactsStreamConfig(cfg)); err != nil {
		return nil, err
	}
	if t.onDemand, err = ensureLaneConsumer(ctx, t.jobs, LaneOnDemand, cfg); err != nil {
		return nil, err
	}
	if t.scheduled, err = ensureLaneConsumer(ctx, t.jobs, LaneScheduled, cfg); err != nil {
		return nil, err
	}
	if t.exhausted, err = ensureExhausted(ctx, js, cfg); err != nil {
		return nil, err
	}
	t.runs, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      RunsBucket,
		Description: "skillfleet run state, keyed by run id",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("queue: ensure KV bucket %s: %w", RunsBucket, err)
	}
	if t.rates, err = ensureRates(ctx, js, cfg); err != nil {
		return nil, err
	}
	if t.reports, err = js.CreateOrUpdateObjectStore(ctx, reportsStoreConfig(cfg)); err != nil {
		return nil, fmt.Errorf("queue: ensure object store %s: %w", ReportsBucket, err)
	}
	if err := checkObjectStoreShrink(ctx, js, cfg.BundlesMaxBytes); err != nil {
		return nil, err
	}
	t.bundles, err = js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket:      BundlesBucket,
		Description: "skillfleet suite bundles, keyed by content digest",
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
		MaxBytes:    limit(cfg.BundlesMaxBytes),
	})
	if err != nil {
		if storageExceeded(err) {
			err = fmt.Errorf("%w (BundlesMaxBytes %d is more than the server's JetStream storage has left)", err, cfg.BundlesMaxBytes)
		}
		return nil, fmt.Errorf("queue: ensure object store %s: %w", BundlesBucket, err)
	}
	return t, nil
}

// Open binds to a topology that Ensure created, changing nothing: for processes (workers, say)
// whose NATS permissions do not allow managing streams. cfg should match what Ensure was given;
// what the server enforces is in the consumers' and streams' CachedInfo.
func Open(ctx context.Context, conn *Conn, cfg Config) (*Topology, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	js := conn.js
	t := &Topology{conn: conn, js: js, Config: cfg}
	var err error
	if t.jobs, err = js.Stream(ctx, JobsStream); err != nil {
		return nil, fmt.Errorf("queue: open stream %s (has Ensure run?): %w", JobsStream, err)
	}
	if t.results, err = js.Stream(ctx, ResultsStream); err != nil {
		return nil, fmt.Errorf("queue: open stream %s (has Ensure run?): %w", ResultsStream, err)
	}
	if t.onDemand, err = t.jobs.Consumer(ctx, OnDemandConsumer); err != nil {
		return nil, fmt.Errorf("queue: open consumer %s > %s (has Ensure run?): %w", JobsStream, OnDemandConsumer, err)
	}
	if t.scheduled, err = t.jobs.Consumer(ctx, ScheduledConsumer); err != nil {
		return nil, fmt.Errorf("queue: open consumer %s > %s (has Ensure run?): %w", JobsStream, ScheduledConsumer, err)
	}
	if t.exhausted, err = js.Consumer(ctx, ExhaustedStream, ExhaustedConsumer); err != nil {
		return nil, fmt.Errorf("queue: open consumer %s > %s (has Ensure run?): %w", ExhaustedStream, ExhaustedConsumer, err)
	}
	if t.runs, err = js.KeyValue(ctx, RunsBucket); err != nil {
		return nil, fmt.Errorf("queue: open KV bucket %s (has Ensure run?): %w", RunsBucket, err)
	}
	if t.rates, err = js.KeyValue(ctx, RatesBucket); err != nil {
		return nil, fmt.Errorf("queue: open KV bucket %s (has Ensure run?): %w", RatesBucket, err)
	}
	if t.bundles, err = js.ObjectStore(ctx, BundlesBucket); err != nil {
		return nil, fmt.Errorf("queue: open object store %s (has Ensure run?): %w", BundlesBucket, err)
	}
	return t, nil
}

// consumer returns the durable consumer of lane, or nil for an unknown lane.
func (t *Topology) consumer(lane Lane) jetstream.Consumer {
	switch lane {
	case LaneOnDemand:
		return t.onDemand
	case LaneScheduled:
		return t.scheduled
	}
	return nil
}

// ratesBucketConfig is the shared rate budgets' bucket: the latest TAT per key only, and a key
// idle for a day dropped (a TAT that far in the past books the same as none). It is bounded in
// bytes: the workers' NATS user may write any key of it (it books by compare-and-swap), and
// without a bound one worker filled the disk every stream shares with it.
func ratesBucketConfig(cfg Config) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:       RatesBucket,
		Description:  "skillfleet rate budgets shared by the fleet: a GCRA arrival time per endpoint budget",
		History:      1,
		TTL:          24 * time.Hour,
		MaxValueSize: ratesMaxValueSize,
		MaxBytes:     RatesMaxBytes,
		Storage:      jetstream.FileStorage,
		Replicas:     cfg.Replicas,
	}
}

const (
	// RatesMaxBytes bounds the rate budgets' bucket. A budget takes at most about 400 bytes on
	// the server (its subject with a key of up to 256 characters, the compare-and-swap header,
	// 19 digits): room for some 2,500 budgets, where a fleet's endpoints make tens.
	RatesMaxBytes = 1 << 20
	// ratesMaxValueSize is the largest message the bucket takes, headers included; a TAT is
	// 19 digits.
	ratesMaxValueSize = 1024
)

// ensureRates creates or updates the rate budgets' bucket, then has its stream discard its
// oldest entries when full rather than refuse new ones (the client library makes every bucket
// refuse): a worker that writes keys of no endpoint then pushes out idle ones, whose loss
// books the same as an idle budget, and never leaves a configured endpoint's budget without
// room, which would leave each process pacing alone.
func ensureRates(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.KeyValue, error) {
	kv, err := js.CreateOrUpdateKeyValue(ctx, ratesBucketConfig(cfg))
	if err != nil {
		return nil, fmt.Errorf("queue: ensure KV bucket %s: %w", RatesBucket, err)
	}
	s, err := js.Stream(ctx, ratesStream)
	if err != nil {
		return nil, fmt.Errorf("queue: ensure KV bucket %s: %w", RatesBucket, err)
	}
	if sc := s.CachedInfo().Config; sc.Discard != jetstream.DiscardOld {
		sc.Discard = jetstream.DiscardOld
		if _, err := js.UpdateStream(ctx, sc); err != nil {
			return nil, fmt.Errorf("queue: ensure KV bucket %s discards its oldest entries: %w", RatesBucket, err)
		}
	}
	return kv, nil
}

func jobsStreamConfig(cfg Config) jetstream.StreamConfig {
	subjects := make([]string, 0, 2)
	for _, l := range Lanes() {
		// One subject per lane rather than "skillfleet.jobs.>": a job for an unknown lane would
		// be stored where no consumer reads it; this way its publish fails.
		subjects = append(subjects, l.filter())
	}
	return jetstream.StreamConfig{
		Name:        JobsStream,
		Description: "skillfleet jobs: one message per job, removed when a worker acks or terminates it",
		Subjects:    subjects,
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
		Duplicates:  cfg.JobsDuplicates,
		// Full means refusing the next job, not dropping a queued one.
		Discard:    jetstream.DiscardNew,
		MaxBytes:   limit(cfg.JobsMaxBytes),
		MaxMsgs:    limit(cfg.JobsMaxMsgs),
		MaxMsgSize: int32(limit(int64(cfg.JobsMaxMsgSize))),
	}
}

// exhaustedSubject is where the server announces a job that ran out of deliveries.
const exhaustedSubject = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + JobsStream + ".*"

// ensureExhausted keeps the MAX_DELIVERIES advisories of the jobs stream in a stream of their
// own, with a durable consumer for the coordinators: an advisory is a plain message, lost when
// no coordinator listens as it is sent, and the job it names would then wait for its run's
// deadline. Kept, it is handled by the next coordinator that starts.
func ensureExhausted(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.Consumer, error) {
	s, err := ensureStream(ctx, js, jetstream.StreamConfig{
		Name:        ExhaustedStream,
		Description: "skillfleet: the server's advisories of jobs that ran out of deliveries",
		Subjects:    []string{exhaustedSubject},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
		MaxAge:      cfg.ResultsMaxAge,
		MaxBytes:    64 << 20,
		Discard:     jetstream.DiscardOld,
	})
	if err != nil {
		return nil, err
	}
	c, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       ExhaustedConsumer,
		Description:   "skillfleet coordinators: record exhausted jobs as errored",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       time.Minute,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("queue: ensure consumer %s > %s: %w", ExhaustedStream, ExhaustedConsumer, err)
	}
	return c, nil
}

func resultsStreamConfig(cfg Config) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        ResultsStream,
		Description: "skillfleet results: one message per job attempt",
		Subjects:    []string{ResultsSubjectPrefix + ".>"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
		MaxAge:      cfg.ResultsMaxAge,
		Duplicates:  cfg.ResultsDuplicates,
		// A full stream refuses new results rather than dropping old ones: anyone with a
		// worker's credentials could otherwise flood it and evict a finished run's results,
		// whose rebuilt report would then count its failures as pending (issue 25). The
		// coordinator refuses new runs before it fills (see ResultsUsage).
		Discard:      jetstream.DiscardNew,
		MaxBytes:     limit(cfg.ResultsMaxBytes),
		MaxConsumers: resultsMaxConsumers,
	}
}

// resultsMaxConsumers bounds the results stream's consumers: one follows each unfinished run
// and one serves each read in progress (a case page, an export). Left unset, the server's
// default of 1,000 a stream (JSDefaultMaxConsumersPerStream, as of 2.15.2) would fail an
// organisation's 1,001st unfinished run with "cannot read results: maximum consumers limit
// reached". An account limit set lower still applies.
const resultsMaxConsumers = 100_000

// storageExceeded reports the server's refusal to reserve a limit it has no storage for
// (JetStream error 10047).
func storageExceeded(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == 10047
}

// limit maps the config's "0: no limit" to the server's -1.
func limit(v int64) int64 {
	if v <= 0 {
		return -1
	}
	return v
}

// checkObjectStoreShrink refuses to set an object store limit below what it holds: the server
// would make room by deleting chunks, corrupting stored bundles.
func checkObjectStoreShrink(ctx context.Context, js jetstream.JetStream, maxBytes int64) error {
	if maxBytes <= 0 {
		return nil
	}
	os, err := js.ObjectStore(ctx, BundlesBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("queue: look up object store %s: %w", BundlesBucket, err)
	}
	st, err := os.Status(ctx)
	if err != nil {
		return fmt.Errorf("queue: look up object store %s: %w", BundlesBucket, err)
	}
	if st.Size() > uint64(maxBytes) {
		return fmt.Errorf("%w: object store %s holds %d bytes, more than the new limit of %d: the server would delete stored bundles to fit; raise the limit or delete bundles first",
			ErrIncompatibleStream, BundlesBucket, st.Size(), maxBytes)
	}
	return nil
}

func ensureStream(ctx context.Context, js jetstream.JetStream, want jetstream.StreamConfig) (jetstream.Stream, error) {
	existing, err := js.Stream(ctx, want.Name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		// Created below.
	case err != nil:
		return nil, fmt.Errorf("queue: look up stream %s: %w", want.Name, err)
	default:
		have := existing.CachedInfo().Config
		if have.Retention != want.Retention {
			return nil, fmt.Errorf("%w: stream %s has retention %s, want %s; retention cannot be changed in place: "+
				"drain or back up the stream, delete it (nats stream rm %s) and start again",
				ErrIncompatibleStream, want.Name, have.Retention, want.Retention, want.Name)
		}
		// Lowering a limit below what the stream holds makes the server delete messages to
		// fit, whatever the discard policy: queued jobs or results would be lost silently.
		if st := existing.CachedInfo().State; (want.MaxBytes > 0 && st.Bytes > uint64(want.MaxBytes)) || (want.MaxMsgs > 0 && st.Msgs > uint64(want.MaxMsgs)) {
			return nil, fmt.Errorf("%w: stream %s holds %d messages of %d bytes, more than the new limits (%d messages, %d bytes): "+
				"the server would delete messages to fit; raise the limits or let the stream drain first",
				ErrIncompatibleStream, want.Name, st.Msgs, st.Bytes, want.MaxMsgs, want.MaxBytes)
		}
		if have.Storage != want.Storage {
			return nil, fmt.Errorf("%w: stream %s has %s storage, want %s; storage cannot be changed in place: "+
				"drain or back up the stream, delete it (nats stream rm %s) and start again",
				ErrIncompatibleStream, want.Name, have.Storage, want.Storage, want.Name)
		}
	}
	s, err := js.CreateOrUpdateStream(ctx, want)
	if storageExceeded(err) {
		return nil, fmt.Errorf("queue: ensure stream %s: %w (its MaxBytes %d is more than the server's JetStream storage has left: lower the limits)", want.Name, err, want.MaxBytes)
	}
	if err != nil {
		return nil, fmt.Errorf("queue: ensure stream %s: %w", want.Name, err)
	}
	return s, nil
}

func laneConsumerConfig(lane Lane, cfg Config) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       lane.consumer(),
		Description:   "skillfleet workers, " + string(lane) + " lane",
		FilterSubject: lane.filter(),
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		MaxDeliver:    cfg.MaxDeliver,
		MaxAckPending: cfg.MaxAckPending,
		MaxWaiting:    cfg.MaxWaiting,
		// No BackOff: a BackOff list silently replaces AckWait. Retry delays are NakWithDelay.
		Replicas: cfg.Replicas,
	}
}

func ensureLaneConsumer(ctx context.Context, s jetstream.Stream, lane Lane, cfg Config) (jetstream.Consumer, error) {
	want := laneConsumerConfig(lane, cfg)
	existing, err := s.Consumer(ctx, want.Durable)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
	case err != nil:
		return nil, fmt.Errorf("queue: look up consumer %s > %s: %w", JobsStream, want.Durable, err)
	default:
		// The server refuses to change MaxWaiting; keep what the consumer was created with
		// rather than fail every start-up after a config change.
		want.MaxWaiting = existing.CachedInfo().Config.MaxWaiting
	}
	c, err := s.CreateOrUpdateConsumer(ctx, want)
	if err != nil {
		return nil, fmt.Errorf("queue: ensure consumer %s > %s: %w", JobsStream, want.Durable, err)
	}
	return c, nil
}

// OpenWorker binds what a worker uses, and nothing more: the two lane consumers, by name,
// without a stream lookup. The streams, the run store and the object store stay unbound; GetBundle then reads a
// bundle by its name alone; Rates binds the rate budgets' bucket when first used. A worker's NATS user thereby needs no STREAM.INFO on any stream:
// with a subjects_filter, that lists every subject, and so every run id (the jobs, results and
// run-state streams) or every bundle (the object store) (deploy/nats/permissions.conf).
func OpenWorker(ctx context.Context, conn *Conn, cfg Config) (*Topology, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	js := conn.js
	t := &Topology{conn: conn, js: js, Config: cfg}
	var err error
	if t.onDemand, err = js.Consumer(ctx, JobsStream, OnDemandConsumer); err != nil {
		return nil, fmt.Errorf("queue: open consumer %s > %s (has Ensure run?): %w", JobsStream, OnDemandConsumer, err)
	}
	if t.scheduled, err = js.Consumer(ctx, JobsStream, ScheduledConsumer); err != nil {
		return nil, fmt.Errorf("queue: open consumer %s > %s (has Ensure run?): %w", JobsStream, ScheduledConsumer, err)
	}
	return t, nil
}

// MaxPayload is the largest message the server takes on the topology's connection, headers
// included.
func (t *Topology) MaxPayload() int64 { return t.conn.MaxPayload() }

// JobsMaxMsgSize is the largest job message the jobs stream takes, as the server enforces it;
// 0 means no limit of its own (or a topology opened without the stream, OpenWorker).
func (t *Topology) JobsMaxMsgSize() int32 {
	if t.jobs == nil {
		return 0
	}
	return max(t.jobs.CachedInfo().Config.MaxMsgSize, 0)
}
