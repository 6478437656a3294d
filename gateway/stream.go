package gateway

import (
	"bufio"
	"bytes"
	"errors"
	"net/http"

	"go.uber.org/zap"
)

// maxEventLine bounds one line of a streamed answer; a chunk is a few hundred bytes.
const maxEventLine = 1 << 20

// relayBatch is how much of a burst of events the relay gathers before it writes to the
// client: a write per line cost a system call or more per event (issue 31), and a plain
// reverse proxy copies in 32 KiB pieces too.
const relayBatch = 32 << 10

// relayStream passes a streamed answer (server-sent events) to the client as it comes, line by
// line with the key redacted, and meters it from the usage its protocol's events carry (see
// StreamReader). A stream over MaxResponseBytes is cut there (the client sees it end early),
// and one whose client has gone is no longer written; either is read on, within twice the
// cap, for its usage: the tokens are spent all the same.
//
// What a protocol holds back until the usage was seen (OpenAI's final [DONE]) is written only
// once the stream is metered: a stream that ends without usage is metered at its reservation
// and ends with an error event instead, so that the CLI does not take an unmetered answer for
// a complete one.
func (g *Gateway) relayStream(w http.ResponseWriter, resp *http.Response, p Protocol, rt Route, req Request, s *Session, x exchange, log *zap.Logger) {
	g.copyHeaders(w, p, resp)
	w.WriteHeader(resp.StatusCode)
	flusher, _ := w.(http.Flusher)
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	sr := p.Stream(rt, req)
	var (
		total int64
		event string // the current event's name, from its "event:" line
		// last is the last event name read: a stream names the same few events again and
		// again, and making a string of each name was an allocation an event.
		last string
		skip bool   // the lines of a dropped event, up to its blank line, go too
		cut  bool   // over the cap: nothing more reaches the client
		held []byte // an event line waiting for its data line; copied, as ReadSlice reuses its buffer
		out  = make([]byte, 0, relayBatch+4<<10)
	)
	// send writes what was gathered for the client, redacted. It is whole lines, and a key
	// holds no line break (net/http sends no header value with one): redacting them
	// together redacts what redacting each would, with one search of a batch where there
	// were two or three an event (issue 31).
	send := func() {
		if len(out) > 0 {
			if _, werr := w.Write(g.redactBytes(out)); werr != nil {
				cut = true
			}
		}
		out = out[:0]
	}
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A longer line than any chunk: read the rest of it, within the cap.
			rest := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) && len(rest) < maxEventLine {
				line, err = br.ReadSlice('\n')
				rest = append(rest, line...)
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				// Passing it on in pieces could split the key past redaction: cut the stream.
				log.Warn("model gateway: streamed line over the cap; cut", zap.Int("cap", maxEventLine))
				break
			}
			line = rest
		}
		if len(line) > 0 {
			total += int64(len(line))
			if total > 2*g.cfg.MaxResponseBytes {
				break
			}
			if !cut && total > g.cfg.MaxResponseBytes {
				send() // what came within the cap is the client's, now
				log.Warn("model gateway: streamed answer over the size cap; cut", zap.Int64("cap", g.cfg.MaxResponseBytes))
				cut = true
			}
			blank := len(bytes.TrimSpace(line)) == 0
			drop := false
			if name, ok := bytes.CutPrefix(line, []byte("event:")); ok {
				if name = bytes.TrimSpace(name); string(name) != last {
					last = string(name)
				}
				event = last
				// An event line is held until its data says whether the event is dropped. It is
				// copied: ReadSlice's line is the reader's buffer, which the next read reuses.
				held = append(held[:0], line...)
				continue
			}
			if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				drop = sr.Event(event, bytes.TrimSpace(data))
			}
			if blank {
				event = ""
			}
			switch {
			case cut:
			case drop:
				skip, held = true, held[:0]
			case skip && blank:
				skip = false
			case skip:
			default:
				if len(held) > 0 {
					out = append(out, held...)
					held = held[:0]
				}
				out = append(out, line...)
				if len(out) >= relayBatch {
					send()
				}
			}
			// Written and flushed at an event's end when the upstream has sent nothing more
			// yet: the client never waits on an event the gateway holds, and a burst goes out
			// in few writes rather than one per event.
			if blank && len(out) > 0 && br.Buffered() == 0 {
				send()
				if flusher != nil {
					flusher.Flush()
				}
			}
		}
		if err != nil {
			break
		}
	}
	send()
	u, reported := sr.Usage()
	metered := g.settle(s, rt.Kind, resp.StatusCode, u, reported, x, log)
	if metered && rt.Kind == Generate {
		s.recordAnswer(x.seq, x.tools, u, g.redactTurn(sr.Turn(cut)), x.sentMax())
	}
	switch {
	case cut:
	case !metered:
		_, _ = w.Write(p.StreamError("upstream_no_usage",
			"the model endpoint's stream reported no token usage, so it cannot be metered; it was refused and metered at the request's reservation"))
	default:
		_, _ = w.Write(sr.End())
	}
	if flusher != nil {
		flusher.Flush()
	}
}
