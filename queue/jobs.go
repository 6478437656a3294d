package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NextJob fetches one job for one free worker slot, on-demand lane first. When both lanes are
// empty it long-polls the on-demand lane for up to idle, then looks again, until ctx is done; so
// an idle worker picks up an on-demand job at once and a scheduled one within idle. Priority
// holds at the granularity of the server's bookkeeping: a job published a moment ago may not
// yet be visible to the no-wait fetch, and a scheduled job can go first in that instant.
//
// It never fetches more than one message: every fetched job's AckWait starts at delivery, and a
// prefetched job would age while the slot is busy. It does not abandon a pull request early
// either (so ctx is checked between polls, at most idle apart): a job delivered to an abandoned
// request waits out AckWait and comes back with one delivery attempt fewer.
//
// The caller owns the delivery: heartbeat it with InProgress every Config.HeartbeatInterval,
// then Ack it after publishing the result, or see Delivery.Attempt for the last allowed one.
func (t *Topology) NextJob(ctx context.Context, idle time.Duration) (*Delivery, Lane, error) {
	if idle <= 0 {
		return nil, "", fmt.Errorf("queue: NextJob idle must be positive, got %s", idle)
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, "", err
		}
		for _, lane := range Lanes() {
			batch, err := t.consumer(lane).FetchNoWait(1)
			if m, err := first(batch, err); err != nil || m != nil {
				return t.delivery(m, lane), lane, err
			}
		}
		wait := idle
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(dl))
		}
		if wait < 10*time.Millisecond {
			// Too short for a pull request to be worth it.
			<-ctx.Done()
			return nil, "", ctx.Err()
		}
		batch, err := t.onDemand.Fetch(1, jetstream.FetchMaxWait(wait))
		if m, err := first(batch, err); err != nil || m != nil {
			return t.delivery(m, LaneOnDemand), LaneOnDemand, err
		}
	}
}

// delivery wraps a message of lane; nil stays nil.
func (t *Topology) delivery(m jetstream.Msg, lane Lane) *Delivery {
	if m == nil {
		return nil
	}
	maxDeliver := t.Config.MaxDeliver
	if c := t.consumer(lane); c != nil && c.CachedInfo() != nil {
		// What the server enforces, if another process ensured a different value.
		maxDeliver = c.CachedInfo().Config.MaxDeliver
	}
	return &Delivery{msg: m, lane: lane, maxDeliver: maxDeliver}
}

// first returns the batch's message, nil when it had none, or its error. An expired pull
// request (no message) is not an error.
func first(batch jetstream.MessageBatch, err error) (jetstream.Msg, error) {
	if err != nil {
		return nil, fmt.Errorf("queue: fetch job: %w", err)
	}
	for m := range batch.Messages() {
		return m, nil
	}
	if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, jetstream.ErrNoMessages) {
		return nil, fmt.Errorf("queue: fetch job: %w", err)
	}
	return nil, nil
}

// ParseJobSubject splits a job subject into its lane and run id.
func ParseJobSubject(subject string) (lane Lane, run string, ok bool) {
	rest, found := strings.CutPrefix(subject, JobsSubjectPrefix+".")
	if !found {
		return "", "", false
	}
	l, run, found := strings.Cut(rest, ".")
	if !found || !Lane(l).Valid() || ValidateRunID(run) != nil {
		return "", "", false
	}
	return Lane(l), run, true
}

// PurgeRunJobs removes the run's queued jobs from both lanes: what cancelling a run does to the
// queue. Jobs already delivered to a worker are removed too, so their acks go nowhere, but the
// workers running them are not told: stopping in-flight jobs is the run state's business.
func (t *Topology) PurgeRunJobs(ctx context.Context, run string) error {
	if err := ValidateRunID(run); err != nil {
		return err
	}
	if err := t.jobs.Purge(ctx, jetstream.WithPurgeSubject(JobSubject("*", run))); err != nil {
		return fmt.Errorf("queue: purge jobs of run %s: %w", run, err)
	}
	return nil
}

// ExhaustedJob is a job whose last allowed delivery ran out of AckWait: its worker died or hung.
// The message is still in the jobs stream and nobody will be given it again.
type ExhaustedJob struct {
	Lane Lane
	Run  string
	// MsgID is the job message's id, JobMsgID(run, job).
	MsgID string
	// Seq is the message's sequence in the jobs stream, for DeleteJob.
	Seq uint64
	// Deliveries is how often it was delivered: the attempt to record a result under.
	Deliveries uint64
	Data       []byte
}

// maxDeliveriesAdvisory is the part of the server's io.nats.jetstream.advisory.v1.max_deliver
// event we use.
type maxDeliveriesAdvisory struct {
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
}

// WatchExhausted calls fn, one at a time, for each job that runs out of deliveries, until ctx
// is done or stop is called: those announced while no coordinator listened first (the
// advisories are kept in ExhaustedStream), then each as it comes. fn should record the job's
// errored result under attempt Deliveries (so it deduplicates against a late result of that
// attempt) and then DeleteJob; an advisory is acknowledged once fn returns, and one whose job
// is gone already (acked late, terminated, purged) is acknowledged without calling fn.
func (t *Topology) WatchExhausted(ctx context.Context, fn func(ExhaustedJob)) (stop func(), err error) {
	if t.exhausted == nil {
		return nil, errors.New("queue: watch exhausted jobs: the topology has no advisory consumer (has Ensure run?)")
	}
	cc, err := t.exhausted.Consume(func(msg jetstream.Msg) {
		var adv maxDeliveriesAdvisory
		if json.Unmarshal(msg.Data(), &adv) == nil && adv.Stream == JobsStream {
			job, ok, err := t.exhaustedJob(ctx, adv)
			if err != nil {
				// Not known to be gone: look again later.
				_ = msg.NakWithDelay(5 * time.Second)
				return
			}
			if ok {
				fn(job)
			}
		}
		_ = msg.Ack()
	})
	if err != nil {
		return nil, fmt.Errorf("queue: watch exhausted jobs: %w", err)
	}
	stopCtx := context.AfterFunc(ctx, cc.Stop)
	return func() {
		stopCtx()
		cc.Stop()
	}, nil
}

// exhaustedJob looks up the job an advisory names; false when it is gone.
func (t *Topology) exhaustedJob(ctx context.Context, adv maxDeliveriesAdvisory) (ExhaustedJob, bool, error) {
	raw, err := t.jobs.GetMsg(ctx, adv.StreamSeq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return ExhaustedJob{}, false, nil
	}
	if err != nil {
		return ExhaustedJob{}, false, err
	}
	lane, run, ok := ParseJobSubject(raw.Subject)
	if !ok {
		return ExhaustedJob{}, false, nil
	}
	return ExhaustedJob{
		Lane: lane, Run: run,
		MsgID:      raw.Header.Get(jetstream.MsgIDHeader),
		Seq:        adv.StreamSeq,
		Deliveries: adv.Deliveries,
		Data:       raw.Data,
	}, true, nil
}

// ExhaustedJobs lists the jobs that ran out of deliveries and are still queued, found from
// the lane consumers' state rather than from the MAX_DELIVERIES advisory, which is lost when no
// coordinator listens as it is sent. A lane consumer delivers in stream order, so every message
// of the lane at or below its Delivered.Stream was delivered at least once; one that is still in
// the work queue was neither acked nor terminated (both remove it), so it is either pending (with
// a worker, or waiting for redelivery) or exhausted. The server does not say which messages are
// pending, only how many: when none is (NumAckPending 0), every such message is exhausted, and
// one request per message finds them (a get of the next message on the lane's subjects). A lane
// with jobs pending is skipped, and undecided counts them: its exhausted jobs are found by a
// later call, at a moment when its pending jobs have settled (or by the advisory).
func (t *Topology) ExhaustedJobs(ctx context.Context) (out []ExhaustedJob, undecided int, err error) {
	for _, lane := range Lanes() {
		info, err := t.consumer(lane).Info(ctx)
		if err != nil {
			return nil, 0, fmt.Errorf("queue: exhausted jobs of lane %s: %w", lane, err)
		}
		upTo, maxDeliver := info.Delivered.Stream, info.Config.MaxDeliver
		if info.NumAckPending > 0 {
			undecided += info.NumAckPending
			continue
		}
		if upTo == 0 || maxDeliver < 1 {
			continue
		}
		for seq := uint64(1); seq <= upTo; {
			raw, err := t.jobs.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(lane.filter()))
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				break
			}
			if err != nil {
				return nil, 0, fmt.Errorf("queue: exhausted jobs of lane %s: %w", lane, err)
			}
			if raw.Sequence > upTo {
				break
			}
			seq = raw.Sequence + 1
			_, run, ok := ParseJobSubject(raw.Subject)
			if !ok {
				continue
			}
			out = append(out, ExhaustedJob{
				Lane: lane, Run: run, MsgID: raw.Header.Get(jetstream.MsgIDHeader), Seq: raw.Sequence,
				Deliveries: uint64(maxDeliver), Data: raw.Data,
			})
		}
	}
	return out, undecided, nil
}

// DeleteJob removes one job message by its stream sequence. A message that is gone already is
// not an error.
func (t *Topology) DeleteJob(ctx context.Context, seq uint64) error {
	err := t.jobs.DeleteMsg(ctx, seq)
	if err == nil {
		return nil
	}
	// The delete error carries the server's reason only as text; ask whether the message is gone.
	if _, gerr := t.jobs.GetMsg(ctx, seq); errors.Is(gerr, jetstream.ErrMsgNotFound) {
		return nil
	}
	return fmt.Errorf("queue: delete job message %d: %w", seq, err)
}
