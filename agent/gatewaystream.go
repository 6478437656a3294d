package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// streamRequest is what meteredBody found out about a request.
type streamRequest struct {
	on bool
	// clientWantsUsage: the CLI asked for the usage chunk itself, so it is passed on.
	clientWantsUsage bool
}

// meteredBody checks a request and, for a streamed Chat Completion, makes the upstream end the
// stream with a usage chunk: without it a streamed answer could not be metered and the job's
// token budget would not hold. (A Responses API stream always ends with its usage, in
// response.completed.) Other fields pass through unchanged.
func meteredBody(body []byte, responsesAPI bool) ([]byte, streamRequest, error) {
	var params map[string]json.RawMessage
	if err := json.Unmarshal(body, &params); err != nil || params == nil {
		return nil, streamRequest{}, errors.New("the request body is not a JSON object")
	}
	var sr streamRequest
	if raw, ok := params["stream"]; ok && json.Unmarshal(raw, &sr.on) != nil {
		return nil, streamRequest{}, errors.New(`"stream" must be a boolean`)
	}
	if !sr.on || responsesAPI {
		return body, sr, nil
	}
	opts := map[string]json.RawMessage{}
	if raw, ok := params["stream_options"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &opts); err != nil {
			return nil, streamRequest{}, errors.New(`"stream_options" must be an object`)
		}
		if iu, ok := opts["include_usage"]; ok && json.Unmarshal(iu, &sr.clientWantsUsage) != nil {
			return nil, streamRequest{}, errors.New(`"stream_options.include_usage" must be a boolean`)
		}
	}
	opts["include_usage"] = json.RawMessage("true")
	var err error
	if params["stream_options"], err = json.Marshal(opts); err != nil {
		return nil, streamRequest{}, err
	}
	body, err = json.Marshal(params)
	return body, sr, err
}

// maxEventLine bounds one line of a streamed answer; a chunk is a few hundred bytes.
const maxEventLine = 1 << 20

// relayStream passes a streamed answer (server-sent events) to the client as it comes, line by
// line with the key redacted, and meters the usage chunk. A stream over MaxResponseBytes is
// cut there (the client sees it end without [DONE]), and one whose client has gone is no
// longer written; either is read on, within twice the cap, for its usage chunk: the tokens
// are spent all the same.
func (g *Gateway) relayStream(w http.ResponseWriter, resp *http.Response, s *Session, clientWantsUsage bool, start time.Time, log *zap.Logger) {
	g.copyHeaders(w, resp)
	w.WriteHeader(resp.StatusCode)
	flusher, _ := w.(http.Flusher)
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	var (
		usage *tokenUsage
		total int64
		skip  bool // the blank line that ends a dropped event goes too
		cut   bool // over the cap: nothing more reaches the client
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
			if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
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
						drop = !clientWantsUsage && len(chunk.Choices) == 0
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
	if flusher != nil {
		flusher.Flush()
	}
	g.settle(s, resp.StatusCode, usage, start, log)
}
