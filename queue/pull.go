package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// puller takes jobs from one lane's consumer for the fetches of every worker of the topology.
// A fetch sends one pull request ($JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>,
// {"batch":n,...}) with the inbox of a subscription it has to itself while the request is
// open, and reads what comes back there until it has n jobs or the server ends the request
// with a status (404 no messages, 408 expired; 409 and others as errors). Deliveries carry
// their job's subject, not the inbox, so a request needs an inbox of its own; but the
// subscription outlives it: it goes back to a pool for the next fetch once its request is
// over, where the client library's Fetch subscribes, arms timers and unsubscribes for every
// request.
//
// A request whose answer does not come within pullSlack of its expiry is given up, and its
// subscription with it: a job that still arrives there is handed back at once with a Nak
// rather than left to wait out AckWait.
type puller struct {
	nc   *nats.Conn
	next string // the consumer's pull request subject

	mu   sync.Mutex
	idle []*pullInbox
}

// pullInbox is a subscription a pull request's answer comes back on.
type pullInbox struct {
	subject string
	sub     *nats.Subscription
	ch      chan *nats.Msg
}

func newPuller(nc *nats.Conn, stream, consumer string) *puller {
	return &puller{nc: nc, next: "$JS.API.CONSUMER.MSG.NEXT." + stream + "." + consumer}
}

const (
	// pullSlack bounds how long a fetch waits past its request's expiry for the server's
	// answer (a lost request, a broken connection) before it gives the request up.
	pullSlack = time.Second
	// pullInboxRoom is the least room of an inbox's channel: a request of n jobs needs n+1
	// (the jobs and the status that may end it), so that the connection never waits on it.
	pullInboxRoom = 64
)

// inbox takes an idle subscription with room for n messages and a status, or makes one.
func (p *puller) inbox(n int) (*pullInbox, error) {
	p.mu.Lock()
	if k := len(p.idle); k > 0 && cap(p.idle[k-1].ch) > n {
		in := p.idle[k-1]
		p.idle = p.idle[:k-1]
		p.mu.Unlock()
		return in, nil
	}
	p.mu.Unlock()
	in := &pullInbox{subject: p.nc.NewInbox(), ch: make(chan *nats.Msg, max(n+1, pullInboxRoom))}
	sub, err := p.nc.ChanSubscribe(in.subject, in.ch)
	if err != nil {
		return nil, err
	}
	in.sub = sub
	return in, nil
}

// fetch sends one pull request for up to n messages, answered at once when wait is zero, else
// within wait, and returns what it brings; the error is one that ended the request.
func (p *puller) fetch(n int, wait time.Duration) ([]*nats.Msg, error) {
	if n < 1 {
		return nil, fmt.Errorf("queue: pull request for %d messages", n)
	}
	in, err := p.inbox(n)
	if err != nil {
		return nil, err
	}
	var req []byte
	req = append(req, `{"batch":`...)
	req = strconv.AppendInt(req, int64(n), 10)
	if wait > 0 {
		req = append(req, `,"expires":`...)
		req = strconv.AppendInt(req, wait.Nanoseconds(), 10)
	} else {
		req = append(req, `,"no_wait":true`...)
	}
	req = append(req, '}')
	if err := p.nc.PublishRequest(p.next, in.subject, req); err != nil {
		p.release(in)
		return nil, err
	}
	bound := time.NewTimer(max(wait, 0) + pullSlack)
	defer bound.Stop()
	var out []*nats.Msg
	for len(out) < n {
		select {
		case m := <-in.ch:
			done, err := pullStatus(m)
			if done {
				p.release(in)
				return out, err
			}
			if err == nil {
				out = append(out, m)
			}
		case <-bound.C:
			go p.abandon(in, max(wait, 0)+pullSlack)
			return out, nil
		}
	}
	// Fulfilled: the server sends nothing more for it.
	p.release(in)
	return out, nil
}

// release puts the inbox of a request that is over back in the pool.
func (p *puller) release(in *pullInbox) {
	p.mu.Lock()
	p.idle = append(p.idle, in)
	p.mu.Unlock()
}

// abandon hands back what still arrives for a request given up, for as long again as the
// request was waited for, then drops its subscription.
func (p *puller) abandon(in *pullInbox, linger time.Duration) {
	t := time.NewTimer(linger)
	defer t.Stop()
	for {
		select {
		case m := <-in.ch:
			p.nakAbandoned(m)
		case <-t.C:
			_ = in.sub.Unsubscribe()
			for {
				select {
				case m := <-in.ch:
					p.nakAbandoned(m)
				default:
					return
				}
			}
		}
	}
}

// nakAbandoned hands a job no fetch takes back for redelivery now (which counts as a delivery
// attempt, like the AckWait it would otherwise wait out).
func (p *puller) nakAbandoned(m *nats.Msg) {
	if strings.HasPrefix(m.Reply, "$JS.ACK.") {
		_ = p.nc.Publish(m.Reply, []byte("-NAK"))
	}
}

// pullStatus reads a message on a pull request's inbox: a job (false, nil), a status that ends
// the request (true, and an error unless it only says no more messages came), or one to skip
// (false, errSkip).
func pullStatus(m *nats.Msg) (done bool, err error) {
	if len(m.Data) > 0 || len(m.Header) == 0 {
		return false, nil
	}
	switch status := m.Header.Get("Status"); status {
	case "":
		return false, nil
	case "100": // a heartbeat or flow control
		return false, errSkip
	case "404", "408": // no messages; the request expired
		return true, nil
	case "503":
		return true, nats.ErrNoResponders
	default:
		return true, fmt.Errorf("pull request ended: %s %s", status, m.Header.Get("Description"))
	}
}

var errSkip = errors.New("skip")

// pulledMsg is a job delivered to a puller's request. It settles through the message's ack
// subject as the client library's messages do, at most once.
type pulledMsg struct {
	m    *nats.Msg
	nc   *nats.Conn
	mu   sync.Mutex
	ackd bool
}

func (j *pulledMsg) Data() []byte    { return j.m.Data }
func (j *pulledMsg) Subject() string { return j.m.Subject }
func (j *pulledMsg) Reply() string   { return j.m.Reply }

// Metadata is only asked for when deliveredOf could not read the ack subject, which the
// server always writes in a form it reads.
func (j *pulledMsg) Metadata() (*jetstream.MsgMetadata, error) {
	return nil, fmt.Errorf("queue: unexpected ack subject %q", j.m.Reply)
}

func (j *pulledMsg) Ack() error { return j.settle(context.Background(), []byte("+ACK"), true, false) }
func (j *pulledMsg) Nak() error { return j.settle(context.Background(), []byte("-NAK"), true, false) }
func (j *pulledMsg) InProgress() error {
	return j.settle(context.Background(), []byte("+WPI"), false, false)
}

func (j *pulledMsg) DoubleAck(ctx context.Context) error {
	return j.settle(ctx, []byte("+ACK"), true, true)
}

func (j *pulledMsg) NakWithDelay(delay time.Duration) error {
	if delay <= 0 {
		return j.Nak()
	}
	body := strconv.AppendInt([]byte(`-NAK {"delay": `), delay.Nanoseconds(), 10)
	return j.settle(context.Background(), append(body, '}'), true, false)
}

func (j *pulledMsg) TermWithReason(reason string) error {
	body := []byte("+TERM")
	if reason != "" {
		body = append(append(body, ' '), reason...)
	}
	return j.settle(context.Background(), body, true, false)
}

// settle sends body to the server on the message's ack subject; final marks the message
// settled, after which nothing more is sent. sync waits for the server's confirmation.
func (j *pulledMsg) settle(ctx context.Context, body []byte, final, sync bool) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.ackd {
		return jetstream.ErrMsgAlreadyAckd
	}
	if j.m.Reply == "" {
		return jetstream.ErrMsgNoReply
	}
	var err error
	if sync {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
		}
		_, err = j.nc.RequestWithContext(ctx, j.m.Reply, body)
	} else {
		err = j.nc.Publish(j.m.Reply, body)
	}
	if err == nil && final {
		j.ackd = true
	}
	return err
}
