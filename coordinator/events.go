package coordinator

import (
	"context"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// broadcaster fans a run's events out to live subscribers (SSE clients, the local CLI).
// Publishing never blocks the run: a subscriber that falls a whole buffer behind is dropped
// (its channel closed), and reconnecting gives it the current status again.
type broadcaster struct {
	mu     sync.Mutex
	seq    uint64
	subs   map[chan *pb.Event]struct{}
	closed bool
	last   *pb.RunStatus
}

func newBroadcaster() *broadcaster {
	return &broadcaster{subs: make(map[chan *pb.Event]struct{})}
}

func (b *broadcaster) status(st *pb.RunStatus, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.last = st
	b.sendLocked(&pb.Event{RunId: st.GetId(), At: timestamppb.New(now), Payload: &pb.Event_Status{Status: st}})
}

func (b *broadcaster) result(r *pb.Result, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sendLocked(&pb.Event{RunId: r.GetRunId(), At: timestamppb.New(now), Payload: &pb.Event_Result{Result: r}})
}

func (b *broadcaster) sendLocked(ev *pb.Event) {
	if b.closed {
		return
	}
	b.seq++
	ev.Seq = b.seq
	for ch := range b.subs {
		select {
		case ch <- ev:
		default:
			delete(b.subs, ch)
			close(ch)
		}
	}
}

// subscribe returns a channel that first carries the latest status (if any) and then every new
// event, until cancel is called, the subscriber falls behind, or the run ends.
func (b *broadcaster) subscribe(buf int) (<-chan *pb.Event, func()) {
	ch := make(chan *pb.Event, buf)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last != nil {
		ch <- &pb.Event{RunId: b.last.GetId(), Seq: b.seq, At: b.last.GetUpdatedAt(), Payload: &pb.Event_Status{Status: b.last}}
	}
	if b.closed {
		close(ch)
		return ch, func() {}
	}
	b.subs[ch] = struct{}{}
	return ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.subs[ch]; ok {
			delete(b.subs, ch)
			close(ch)
		}
	}
}

// close ends every subscription; later subscribers get the final status and a closed channel.
func (b *broadcaster) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for ch := range b.subs {
		delete(b.subs, ch)
		close(ch)
	}
}

// Events calls fn for each live event of a run until its stream closes (the run ended, or this
// subscriber fell a whole buffer behind and was dropped), fn returns an error, or ctx ends. It
// keeps Client.Events' contract, so one loop follows a run in process and over HTTP alike.
func (c *Coordinator) Events(ctx context.Context, id string, fn func(*pb.Event) error) error {
	ch, cancel, err := c.Subscribe(ctx, id)
	if err != nil {
		return err
	}
	defer cancel()
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return nil
			}
			if err := fn(ev); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
