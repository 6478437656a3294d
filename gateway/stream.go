package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// streamRequest is what parseRequest found out about a streamed request.
type streamRequest struct {
	on bool
	// clientWantsUsage: the CLI asked for the usage chunk itself, so it is passed on.
	clientWantsUsage bool
}

// maxEventLine bounds one line of a streamed answer; a chunk is a few hundred bytes.
const maxEventLine = 1 << 20

// relayStream passes a streamed answer (server-sent events) to the client as it comes, line by
// line with the key redacted, and meters the usage chunk. A stream over MaxResponseBytes is
// cut there (the client sees it end without [DONE]), and one whose client has gone is no
// longer written; either is read on, within twice the cap, for its usage chunk: the tokens
// are spent all the same.
//
// A Chat Completions stream's final "data: [DONE]" is held back until the stream has shown
// its usage: a stream that ends without usage is metered at its reservation and ends with an
// error event instead, so that the CLI does not take an unmetered answer for a complete one.
func (g *Gateway) relayStream(w http.ResponseWriter, resp *http.Response, s *Session, req *preparedRequest, res reservation, start time.Time, log *zap.Logger) {
	g.copyHeaders(w, resp)
	w.WriteHeader(resp.StatusCode)
	flusher, _ := w.(http.Flusher)
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	var (
		usage *tokenUsage
		total int64
		skip  bool // the blank line that ends a dropped event goes too
		cut   bool // over the cap: nothing more reaches the client
		done  bool // the upstream sent [DONE], held back
		ans   = &streamAnswer{responsesAPI: req.responsesAPI}
	)
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
				log.Warn("model gateway: streamed answer over the size cap; cut", zap.Int64("cap", g.cfg.MaxResponseBytes))
				cut = true
			}
			drop := false
			data, isData := bytes.CutPrefix(line, []byte("data:"))
			if isData && string(bytes.TrimSpace(data)) == "[DONE]" {
				done, drop = true, true
			} else if isData {
				ans.add(bytes.TrimSpace(data))
				var chunk struct {
					Usage   *tokenUsage       `json:"usage"`
					Choices []json.RawMessage `json:"choices"`
					// Responses API events: response.completed (or .incomplete, .failed)
					// carries the response with its usage.
					Response *struct {
						Usage *tokenUsage `json:"usage"`
					} `json:"response"`
				}
				if json.Unmarshal(bytes.TrimSpace(data), &chunk) == nil {
					switch {
					case chunk.Usage != nil:
						usage = chunk.Usage
						drop = !req.stream.clientWantsUsage && len(chunk.Choices) == 0
					case chunk.Response != nil && chunk.Response.Usage != nil:
						usage = chunk.Response.Usage
					}
				}
			}
			switch {
			case cut:
			case drop:
				skip = true
			case skip && len(bytes.TrimSpace(line)) == 0:
				skip = false
			default:
				skip = false
				if _, werr := w.Write(g.redactBytes(line)); werr != nil {
					cut = true
				}
				if flusher != nil && len(bytes.TrimSpace(line)) == 0 {
					flusher.Flush()
				}
			}
		}
		if err != nil {
			break
		}
	}
	metered := g.settle(s, resp.StatusCode, usage, res, start, log)
	if metered {
		s.recordAnswer(req, usage, g.redactTurn(ans.turn(cut)))
	}
	switch {
	case cut:
	case !metered:
		_, _ = w.Write(streamError(req.responsesAPI))
	case done:
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}
	if flusher != nil {
		flusher.Flush()
	}
}

// streamError is the event that ends a stream without usage, in the endpoint's error form.
func streamError(responsesAPI bool) []byte {
	const msg = "the model endpoint's stream reported no token usage, so it cannot be metered; it was refused and metered at the request's reservation"
	if responsesAPI {
		b, _ := json.Marshal(map[string]any{"type": "error", "code": "upstream_no_usage", "message": msg, "param": nil})
		return append(append([]byte("event: error\ndata: "), b...), "\n\n"...)
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "gateway_error", "code": "upstream_no_usage", "param": nil}})
	return append(append([]byte("data: "), b...), "\n\n"...)
}
