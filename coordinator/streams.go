package coordinator

import (
	"fmt"
	"net/http"
	"sync"
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
	max, perPrincipal int
	// what names the requests in refusals ("event streams").
	what string

	mu    sync.Mutex
	total int
	by    map[string]int
}

func newStreamLimiter(max, perPrincipal int, what string) *streamLimiter {
	return &streamLimiter{max: max, perPrincipal: perPrincipal, what: what, by: map[string]int{}}
}

// acquire takes a slot for p, or says which cap is full; release gives it back.
func (l *streamLimiter) acquire(p tenant.Principal) (release func(), err error) {
	// Names are unique among tokens, not between a token and a proxy's user of another team.
	key := tenant.Team(p.Team) + "/" + p.Name
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total >= l.max {
		return nil, fmt.Errorf("too many %s open (%d, the coordinator's cap): retry later", l.what, l.total)
	}
	if l.by[key] >= l.perPrincipal {
		return nil, fmt.Errorf("too many %s open for this caller (%d, the cap per token): close one or retry later", l.what, l.by[key])
	}
	l.total++
	l.by[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.total--
			if l.by[key]--; l.by[key] == 0 {
				delete(l.by, key)
			}
		})
	}, nil
}

// Default caps of the reads of documents (APIConfig.MaxDocumentReads): a trajectory may be
// 64 MiB decoded, and a read holds it while its client takes it.
const (
	DefaultMaxDocumentReads          = 8
	DefaultMaxDocumentReadsPerCaller = 2
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
