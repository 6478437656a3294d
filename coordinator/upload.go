package coordinator

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// errUploadTooSlow fails an upload that falls below the minimum rate.
var errUploadTooSlow = errors.New("upload too slow")

// rateReader fails a body that arrives slower than min bytes/s, averaged over window: a client
// trickling a bundle would otherwise hold a connection, a goroutine and a spool file for as
// long as it likes. A read that blocks outright is cut by the connection's read deadline,
// which each read pushes one window ahead (deadline); the rate is taken on the injected clock.
type rateReader struct {
	r        io.Reader
	min      int64
	window   time.Duration
	now      func() time.Time
	deadline func(time.Time) error // the connection's read deadline; wall clock

	start time.Time
	n     int64
	err   error // why the upload was failed, once it was
}

func newRateReader(r io.Reader, min int64, window time.Duration, now func() time.Time, deadline func(time.Time) error) *rateReader {
	return &rateReader{r: r, min: min, window: window, now: now, deadline: deadline, start: now()}
}

func (rr *rateReader) Read(p []byte) (int, error) {
	if rr.err != nil {
		return 0, rr.err
	}
	if rr.deadline != nil {
		_ = rr.deadline(time.Now().Add(rr.window))
	}
	n, err := rr.r.Read(p)
	rr.n += int64(n)
	if err != nil && !errors.Is(err, io.EOF) && isTimeout(err) {
		rr.err = fmt.Errorf("%w: no data for %s (minimum %d bytes/s)", errUploadTooSlow, rr.window, rr.min)
		return n, rr.err
	}
	if err == nil {
		if el := rr.now().Sub(rr.start); el >= rr.window {
			if want := int64(float64(rr.min) * el.Seconds()); rr.n < want {
				rr.err = fmt.Errorf("%w: %d bytes in %s, under the minimum of %d bytes/s", errUploadTooSlow, rr.n, el.Round(time.Millisecond), rr.min)
				return n, rr.err
			}
			// A new window: a fast start does not buy a stall later.
			rr.start, rr.n = rr.now(), 0
		}
	}
	return n, err
}

// isTimeout reports a deadline's error, as a connection read returns it.
func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
