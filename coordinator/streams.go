package coordinator

import (
	"fmt"
	"sync"
)

// streamLimiter caps concurrent event streams, in total and per principal: each holds a
// goroutine, a subscription and a connection for as long as a run lasts, so without a cap a
// few callers could hold the coordinator's connections with streams alone.
type streamLimiter struct {
	max, perPrincipal int

	mu    sync.Mutex
	total int
	by    map[string]int
}

func newStreamLimiter(max, perPrincipal int) *streamLimiter {
	return &streamLimiter{max: max, perPrincipal: perPrincipal, by: map[string]int{}}
}

// acquire takes a slot for principal, or says which cap is full; release gives it back.
func (l *streamLimiter) acquire(principal string) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total >= l.max {
		return nil, fmt.Errorf("too many event streams open (%d, the coordinator's cap): retry later", l.total)
	}
	if l.by[principal] >= l.perPrincipal {
		return nil, fmt.Errorf("too many event streams open for this caller (%d, the cap per token): close one or retry later", l.by[principal])
	}
	l.total++
	l.by[principal]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.total--
			if l.by[principal]--; l.by[principal] == 0 {
				delete(l.by, principal)
			}
		})
	}, nil
}
