package worker

import "time"

// Delivery is one delivered job, which the worker settles exactly once (queue.Delivery).
type Delivery interface {
	Data() []byte
	Subject() string
	// Attempt is the 1-based delivery attempt.
	Attempt() (attempt int, last bool, err error)
	Ack() error
	Nak() error
	NakWithDelay(delay time.Duration) error
	TermWithReason(reason string) error
	// InProgress is the heartbeat of a job still running.
	InProgress() error
}

// Lane is one source of jobs (queue.LaneConsumer). Fetch takes up to n jobs: those ready now
// when wait is zero, else waiting up to wait for the first; it returns what it got and,
// separately, an error that ended the fetch.
type Lane interface {
	Fetch(n int, wait time.Duration) ([]Delivery, error)
}
