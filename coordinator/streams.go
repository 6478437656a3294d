package coordinator

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/skillfleet/skillfleet/internal/httpserve"
	"github.com/skillfleet/skillfleet/internal/tenant"
)

// streamLimiter caps concurrent requests of one kind, in total and per principal: an event
// stream holds a goroutine, a subscription and a connection for as long as a run lasts, and a
// read of documents (a run's results, a trajectory) holds them decoded in memory until its
// client has taken them, so without a cap a few callers could hold the coordinator's
// connections, or its memory, with these alone.
type streamLimiter struct {
	slots *httpserve.Slots
	// what names the requests in refusals ("event streams").
	what string
}

func newStreamLimiter(max, perPrincipal int, what string) *streamLimiter {
	return &streamLimiter{slots: httpserve.NewSlots(max, perPrincipal), what: what}
}

// acquire takes a slot for p, or says which cap is full; release gives it back.
func (l *streamLimiter) acquire(p tenant.Principal) (release func(), err error) {
	release, err = l.slots.Acquire(p.Share())
	var full *httpserve.FullError
	switch {
	case !errors.As(err, &full):
		return release, err
	case full.PerKey:
		return nil, fmt.Errorf("too many %s open for this caller (%d, the cap per token): close one or retry later", l.what, full.Held)
	}
	return nil, fmt.Errorf("too many %s open (%d, the coordinator's cap): retry later", l.what, full.Held)
}

// Default caps of the reads of documents (APIConfig.MaxDocumentReads): a trajectory may be
// 64 MiB decoded, and a read holds it while its client takes it.
const (
	DefaultMaxDocumentReads          = 8
	DefaultMaxDocumentReadsPerCaller = 2
)

// Caps of the listings of runs (GET /v1/runs): a listing holds every stored run's status,
// about 4 KB each, while its client takes it: 400 MB at 100,000 runs kept.
const (
	MaxRunListings          = 4
	MaxRunListingsPerCaller = 2
)

// retryAfterSeconds is the Retry-After of a request refused for a full cap.
const retryAfterSeconds = "5"

// bounded serves h, a route that reads documents back, within a slot of l: over a cap it
// answers 429 with Retry-After at once. Every write of h has a deadline (WriteTimeout), so a
// client that stops reading is cut off and h returns, giving its memory and its slot back; and
// no read deadline cuts a long answer to a client that does read.
func (a *api) bounded(l *streamLimiter, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		release, err := l.acquire(tenant.Of(r.Context()))
		if err != nil {
			w.Header().Set("Retry-After", retryAfterSeconds)
			writeError(w, http.StatusTooManyRequests, err, nil)
			return
		}
		defer release()
		rc := http.NewResponseController(w)
		// The server's read deadline would cancel the request's context (its background read
		// fails) in the middle of a long export.
		_ = rc.SetReadDeadline(time.Time{})
		h(httpserve.WriteDeadlines(w, a.cfg.WriteTimeout), r)
		// What h left buffered goes out after it returns, under a deadline of its own.
		_ = rc.SetWriteDeadline(time.Now().Add(a.cfg.WriteTimeout))
	}
}
