package queue

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Delivery is one delivery of one job to a worker. The worker owns it until it settles it
// exactly once: Ack after publishing the result, Nak or NakWithDelay to hand it back, or
// TermWithReason on the last attempt (see Attempt). InProgress, every
// Config.HeartbeatInterval, keeps it from being redelivered meanwhile.
type Delivery struct {
	msg        deliveredMsg
	lane       Lane
	maxDeliver int
}

// deliveredMsg is what a Delivery needs of a delivered message: a jetstream.Msg, or a
// pulledMsg.
type deliveredMsg interface {
	Data() []byte
	Subject() string
	Reply() string
	Metadata() (*jetstream.MsgMetadata, error)
	Ack() error
	DoubleAck(ctx context.Context) error
	Nak() error
	NakWithDelay(delay time.Duration) error
	TermWithReason(reason string) error
	InProgress() error
}

// Data is the job message's payload.
func (d *Delivery) Data() []byte { return d.msg.Data() }

// Subject is the subject the job was published on, JobSubject(lane, run).
func (d *Delivery) Subject() string { return d.msg.Subject() }

// Lane is the lane the job was delivered from.
func (d *Delivery) Lane() Lane { return d.lane }

// Attempt returns the 1-based delivery attempt of the job and whether it is the last one the
// consumer allows.
//
// On the last attempt the worker must finish the job itself: if it cannot produce a verdict it
// publishes an errored result, then calls TermWithReason (or Ack). The server does not remove a
// job that runs out of deliveries from the WorkQueue stream: it stops delivering it, leaves the
// message in place and sends a MAX_DELIVERIES advisory (see WatchExhausted). A worker must not
// Nak on the last attempt: the job would never be seen again.
func (d *Delivery) Attempt() (attempt int, last bool, err error) {
	n, ok := deliveredOf(d.msg.Reply())
	if !ok {
		md, err := d.msg.Metadata()
		if err != nil {
			return 0, false, fmt.Errorf("queue: job metadata: %w", err)
		}
		n = md.NumDelivered
	}
	attempt = int(n)
	return attempt, d.maxDeliver > 0 && attempt >= d.maxDeliver, nil
}

// deliveredOf reads the delivery count from a JetStream ack subject, the one field of its
// metadata a worker needs for every job: "$JS.ACK.<stream>.<consumer>.<delivered>.<stream
// seq>.<consumer seq>.<time>.<pending>", or from a server with domains
// "$JS.ACK.<domain>.<account>.<stream>.<consumer>.<delivered>...." (12 tokens or more). The
// library's Metadata parses every field into a new struct; false leaves the subject to it.
func deliveredOf(reply string) (uint64, bool) {
	rest, ok := strings.CutPrefix(reply, "$JS.ACK.")
	if !ok {
		return 0, false
	}
	tokens := strings.Count(reply, ".") + 1
	var skip int
	switch {
	case tokens == 9:
		skip = 2
	case tokens >= 12:
		skip = 4
	default:
		return 0, false
	}
	for range skip {
		_, rest, _ = strings.Cut(rest, ".")
	}
	field, _, _ := strings.Cut(rest, ".")
	n, err := strconv.ParseUint(field, 10, 64)
	return n, err == nil && n > 0
}

// Ack settles the job for good: its result is stored.
func (d *Delivery) Ack() error { return d.msg.Ack() }

// AckSync is Ack that waits until the server confirms it, bounded by ctx: for a caller that
// must know the job is gone before it goes on.
func (d *Delivery) AckSync(ctx context.Context) error { return d.msg.DoubleAck(ctx) }

// Nak hands the job back for immediate redelivery.
func (d *Delivery) Nak() error { return d.msg.Nak() }

// NakWithDelay hands the job back, to be redelivered after delay.
func (d *Delivery) NakWithDelay(delay time.Duration) error { return d.msg.NakWithDelay(delay) }

// TermWithReason removes the job from the queue without redelivery; reason shows in the
// server's advisory.
func (d *Delivery) TermWithReason(reason string) error { return d.msg.TermWithReason(reason) }

// InProgress restarts the job's AckWait: the heartbeat of a job still running.
func (d *Delivery) InProgress() error { return d.msg.InProgress() }

// LaneConsumer takes jobs from one lane for a worker's free slots.
type LaneConsumer struct {
	lane Lane
	c    jetstream.Consumer
	cfg  Config
	pull *puller
}

// LaneConsumers returns the topology's lanes in priority order (on-demand before scheduled).
// Their fetches share one inbox subscription a lane, however many workers use the topology.
func (t *Topology) LaneConsumers() []*LaneConsumer {
	out := make([]*LaneConsumer, 0, 2)
	for _, l := range Lanes() {
		out = append(out, &LaneConsumer{lane: l, c: t.consumer(l), cfg: t.Config, pull: t.puller(l)})
	}
	return out
}

// puller returns the lane's puller, made on first use.
func (t *Topology) puller(lane Lane) *puller {
	t.pullMu.Lock()
	defer t.pullMu.Unlock()
	if t.pullers == nil {
		t.pullers = make(map[Lane]*puller)
	}
	p := t.pullers[lane]
	if p == nil {
		p = newPuller(t.conn.nc, JobsStream, lane.consumer())
		t.pullers[lane] = p
	}
	return p
}

// Lane is the lane it takes jobs from.
func (l *LaneConsumer) Lane() Lane { return l.lane }

// MaxDeliver is how many deliveries the server gives a job of the lane: what its consumer
// enforces, which is what another process ensured it with.
func (l *LaneConsumer) MaxDeliver() int {
	if info := l.c.CachedInfo(); info != nil {
		return info.Config.MaxDeliver
	}
	return l.cfg.MaxDeliver
}

// AckWait is how long the server waits for a heartbeat or an ack before it redelivers a job,
// as the lane's consumer enforces it.
func (l *LaneConsumer) AckWait() time.Duration {
	if info := l.c.CachedInfo(); info != nil {
		return info.Config.AckWait
	}
	return l.cfg.AckWait
}

// Fetch takes up to n jobs: those ready now when wait is zero, else waiting up to wait for
// them. It sends one pull request for exactly n (so no job is delivered that a free slot does
// not wait for: each one's AckWait starts at delivery) and reads the server's answer until it
// ends; only an answer that does not come within a second of wait is given up, and a job
// delivered to it later is handed back (see puller). It returns the jobs it got and,
// separately, an error that ended the fetch (a request that could not be made returns none);
// an expired request is no error.
func (l *LaneConsumer) Fetch(n int, wait time.Duration) ([]*Delivery, error) {
	msgs, err := l.pull.fetch(n, wait)
	maxDeliver := l.MaxDeliver()
	out := make([]*Delivery, len(msgs))
	for i, m := range msgs {
		out[i] = &Delivery{msg: &pulledMsg{m: m, nc: l.pull.nc}, lane: l.lane, maxDeliver: maxDeliver}
	}
	if err != nil {
		return out, fmt.Errorf("queue: fetch jobs of lane %s: %w", l.lane, err)
	}
	return out, nil
}

// LaneLoad is what a lane's consumer says of its jobs at one moment.
type LaneLoad struct {
	// Queued is how many of the lane's jobs no worker has been given yet.
	Queued int
	// Running is how many were given to a worker and not yet acked or terminated.
	Running int
	// Waiting is how many workers' pull requests wait for a job: idle slots.
	Waiting int
}

// LaneLoad reads the lane's load from its consumer (one consumer info request): the
// coordinator keeps each lane's queue short with it, so that whoever is fed next starts soon.
func (t *Topology) LaneLoad(ctx context.Context, lane Lane) (LaneLoad, error) {
	c := t.consumer(lane)
	if c == nil {
		return LaneLoad{}, fmt.Errorf("queue: unknown lane %q", lane)
	}
	info, err := c.Info(ctx)
	if err != nil {
		return LaneLoad{}, fmt.Errorf("queue: load of lane %s: %w", lane, err)
	}
	return LaneLoad{Queued: int(info.NumPending), Running: info.NumAckPending, Waiting: info.NumWaiting}, nil
}
