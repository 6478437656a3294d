package httpserve

import (
	"net/http"
	"time"
)

// writeChunk is how much of a write goes out under one deadline: a client must take this much
// within the timeout of WriteDeadlines, or be cut off.
const writeChunk = 64 << 10

// WriteDeadlines returns w with a write deadline on every write: each chunk of it must reach
// the client within timeout. A client that stops reading is then cut off within timeout
// (plus what the sockets buffer), and the handler's write fails, so that it returns and lets
// go of what it holds; one that keeps reading is never cut, however long the answer. The
// server's own WriteTimeout, which runs from the request, would cut a long answer to a
// reading client and hold a stalled one until it passed. Handlers that compute long before
// their first write need no deadline meanwhile: it is set before each write.
func WriteDeadlines(w http.ResponseWriter, timeout time.Duration) http.ResponseWriter {
	return &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: timeout}
}

type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		// A writer without deadlines (a test's recorder) just writes.
		_ = d.rc.SetWriteDeadline(time.Now().Add(d.timeout))
		m, err := d.ResponseWriter.Write(p[:min(len(p), writeChunk)])
		n += m
		if err != nil {
			return n, err
		}
		p = p[m:]
	}
	return n, nil
}

// Flush sends what is buffered, under a deadline of its own.
func (d *deadlineWriter) Flush() {
	_ = d.rc.SetWriteDeadline(time.Now().Add(d.timeout))
	_ = d.rc.Flush()
}

// Unwrap lets http.ResponseController reach the server's writer.
func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }
