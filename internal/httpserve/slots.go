package httpserve

import "sync"

// Slots bounds the requests of one kind served at once, in total and per key (a principal),
// so that one caller holds at most its share and every caller together at most the total.
// It never queues: over a cap the request is refused at once (a 429 or 503 with Retry-After),
// since a queued request holds its connection and its client waits without an answer.
type Slots struct {
	max, perKey int

	mu    sync.Mutex
	total int
	by    map[string]int
}

// NewSlots returns the slots of a total cap total and a cap per key perKey (each at least 1).
func NewSlots(total, perKey int) *Slots {
	return &Slots{max: max(total, 1), perKey: max(perKey, 1), by: map[string]int{}}
}

// FullError is Acquire's refusal: which cap is full, and how many slots it has taken.
type FullError struct {
	// PerKey: the key's own share is taken; else the total.
	PerKey bool
	// Held is how many slots the full cap counts now.
	Held int
}

// Error says which cap is full, without the key (a principal's name is for the caller to add).
func (e *FullError) Error() string {
	if e.PerKey {
		return "every slot of this caller's share is taken"
	}
	return "every slot is taken"
}

// Acquire takes a slot for key, or returns a *FullError; release gives it back (once,
// however often it is called).
func (s *Slots) Acquire(key string) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.total >= s.max {
		return nil, &FullError{Held: s.total}
	}
	if s.by[key] >= s.perKey {
		return nil, &FullError{PerKey: true, Held: s.by[key]}
	}
	s.total++
	s.by[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.total--
			if s.by[key]--; s.by[key] <= 0 {
				delete(s.by, key)
			}
		})
	}, nil
}
