package sandbox

import "fmt"

// cappedBuffer keeps the first limit bytes written to it and counts, but drops, the rest: a
// command's output cannot grow the worker's memory, and the stream is still drained so the
// command never blocks on a full pipe.
type cappedBuffer struct {
	limit     int64
	buf       []byte
	total     int64
	truncated bool
}

func newCappedBuffer(limit int64) *cappedBuffer {
	return &cappedBuffer{limit: limit}
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.total += int64(len(p))
	room := b.limit - int64(len(b.buf))
	if room <= 0 {
		if len(p) > 0 {
			b.truncated = true
		}
		return len(p), nil
	}
	if int64(len(p)) > room {
		b.buf = append(b.buf, p[:room]...)
		b.truncated = true
		return len(p), nil
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// TruncationMarker is the line appended to a stream cut at limit bytes.
func TruncationMarker(limit int64) string {
	return fmt.Sprintf("[skillfleet: output truncated at %d bytes]\n", limit)
}

// bytes returns the kept output, with the marker on a line of its own when it was cut.
func (b *cappedBuffer) bytes() ([]byte, bool) {
	if !b.truncated {
		return b.buf, false
	}
	out := b.buf
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	return append(out, TruncationMarker(b.limit)...), true
}
