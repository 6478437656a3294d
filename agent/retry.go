package agent

import (
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

const (
	// maxRetryAfter caps a server's Retry-After: a longer wait would hold the job past any
	// sensible deadline; the retry budget ends the matter if the server keeps refusing.
	maxRetryAfter = 60 * time.Second
	backoffBase   = 500 * time.Millisecond
	backoffMax    = 30 * time.Second
)

// retryable says whether an HTTP status is worth another attempt: request timeout, conflict,
// rate limit and server errors. 400, 401, 403, 404, 422 and the rest are the request's fault
// and would fail the same way again.
func retryable(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= 500
}

// retryAfter reads how long the server asked us to wait: Retry-After-Ms (OpenAI's), then
// Retry-After as delta-seconds or an HTTP date (relative to now). A date in the past means now.
// The result is capped at maxRetryAfter.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if h == nil {
		return 0, false
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return capRetryAfter(time.Duration(ms * float64(time.Millisecond))), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 {
			return 0, false
		}
		if s > maxRetryAfter.Seconds() {
			return maxRetryAfter, true
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return capRetryAfter(max(t.Sub(now), 0)), true
	}
	return 0, false
}

func capRetryAfter(d time.Duration) time.Duration { return min(d, maxRetryAfter) }

// backoff is the wait before retry number n (0-based) when the server named none: exponential
// from backoffBase, capped at backoffMax, with "equal jitter" (between half and all of it) so
// that the workers of a fleet do not retry in lockstep.
func backoff(n int) time.Duration {
	d := backoffMax
	if n < 16 {
		d = min(backoffBase<<n, backoffMax)
	}
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(half)+1))
}

// Error is what Chat returns when the endpoint gave no usable answer.
type Error struct {
	// Endpoint is the endpoint's config name.
	Endpoint string
	// StatusCode is the last attempt's HTTP status; 0 when there was no HTTP answer.
	StatusCode int
	// Attempts is how many attempts were made.
	Attempts int
	// Message is the server's error message, clipped, with the API key redacted.
	Message string
	// Err is the last attempt's error.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("model endpoint ")
	b.WriteString(strconv.Quote(e.Endpoint))
	b.WriteString(": ")
	if e.StatusCode != 0 {
		b.WriteString("HTTP ")
		b.WriteString(strconv.Itoa(e.StatusCode))
		if t := http.StatusText(e.StatusCode); t != "" {
			b.WriteString(" " + t)
		}
		switch {
		case e.Message != "":
			b.WriteString(": " + e.Message)
		case e.StatusCode < 400 && e.Err != nil:
			b.WriteString(": " + e.Err.Error())
		}
	} else if e.Err != nil {
		b.WriteString(e.Err.Error())
	}
	b.WriteString(" (")
	b.WriteString(strconv.Itoa(e.Attempts))
	if e.Attempts == 1 {
		b.WriteString(" attempt)")
	} else {
		b.WriteString(" attempts)")
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// ErrMalformedResponse says the endpoint answered 2xx with something that is not a usable chat
// completion (not JSON, no choices).
var ErrMalformedResponse = errors.New("malformed chat completion response")
