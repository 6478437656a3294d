package queuebench

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillfleet/skillfleet/queue"
)

// Msgs are messages as a raw baseline publishes them, headers included.
type Msgs = []*nats.Msg

// Dial opens a plain client connection to e, for the raw baselines; close it when done.
func Dial(e *queue.Embedded, name string) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name(name)}
	url := e.ClientURL()
	if url == "" {
		opts = append(opts, nats.InProcessServer(e))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("queuebench: connect: %w", err)
	}
	return nc, nil
}

// Capture records every job message published on the server it was opened on, headers
// included: what a raw baseline moves in skillfleet's stead. The coordinator publishes a run's
// jobs as workers free room for them, so they are caught as they go out rather than read back
// from the stream.
type Capture struct {
	nc  *nats.Conn
	sub *nats.Subscription
	ch  chan *nats.Msg
}

// CaptureJobs starts recording the job messages published on e, holding up to max of them.
func CaptureJobs(e *queue.Embedded, max int) (*Capture, error) {
	nc, err := Dial(e, "bench-jobs")
	if err != nil {
		return nil, err
	}
	c := &Capture{nc: nc, ch: make(chan *nats.Msg, max)}
	c.sub, err = nc.ChanSubscribe(queue.JobsSubjectPrefix+".>", c.ch)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("queuebench: capture jobs: %w", err)
	}
	if err := nc.Flush(); err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

// Wait returns the first n job messages published since the capture started, waiting up to
// wait for them, and ends the capture.
func (c *Capture) Wait(ctx context.Context, n int, wait time.Duration) (Msgs, error) {
	defer c.nc.Close()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	msgs := make(Msgs, 0, n)
	for len(msgs) < n {
		select {
		case m := <-c.ch:
			msgs = append(msgs, &nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data})
		case <-timer.C:
			return nil, fmt.Errorf("queuebench: %d of %d job messages published after %s", len(msgs), n, wait)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return msgs, nil
}
