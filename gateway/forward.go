package gateway

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/internal/modelmetrics"
)

// exchange is one forwarded request's bookkeeping.
type exchange struct {
	// seq numbers the request among its session's forwarded ones.
	seq int
	res reservation
	// maxOutput is the max output sent upstream (0: the request's own, unchanged).
	maxOutput int64
	// tools: the request offered tools (see Session.Turns).
	tools bool
	start time.Time
}

// sentMax is the max output the request went with, its own or the gateway's (0: none, the
// upstream's default).
func (x exchange) sentMax() int64 {
	if x.res.bounded {
		return x.res.output
	}
	return 0
}

// forward sends a parsed request upstream and answers the client: a stream relayed event by
// event, or one JSON answer, metered either way before the client sees it whole.
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, p Protocol, rt Route, req Request, s *Session, x exchange, log *zap.Logger) {
	settled := false
	defer func() {
		if !settled {
			s.unreserve(x.res)
		}
	}()
	body, err := req.Build(g.cfg.Model, x.maxOutput)
	if err != nil {
		g.refuse(w, p, http.StatusInternalServerError, "gateway_error", "building the upstream request failed")
		return
	}
	target, h := p.Upstream(g.base, rt, g.cfg.Model, g.cfg.APIKey, r.Header)
	up, err := http.NewRequestWithContext(upstreamContext(r), http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		g.refuse(w, p, http.StatusInternalServerError, "gateway_error", "building the upstream request failed")
		return
	}
	up.Header = h
	if up.Header.Get("Content-Type") == "" {
		up.Header.Set("Content-Type", "application/json")
	}
	x.start = g.now()
	resp, err := g.http.Do(up)
	if err != nil {
		if r.Context().Err() == nil {
			log.Warn("model gateway: upstream request failed", zap.String("error", g.redact(err.Error())))
		}
		if !isDialError(err) {
			// The request may have reached the upstream, which may have spent the tokens.
			settled = true
			s.book(x.res, true)
		}
		g.count("failed", "transport")
		writeError(w, p, http.StatusBadGateway, "upstream_unreachable", "the model endpoint could not be reached")
		return
	}
	defer func() { _ = resp.Body.Close() }()
	settled = true
	// An upstream that answers a stream request with one JSON body is metered like any other.
	if (req.Stream() || rt.Stream) && resp.StatusCode/100 == 2 && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		g.relayStream(w, resp, p, rt, req, s, x, log)
		return
	}
	out, err := io.ReadAll(io.LimitReader(resp.Body, g.cfg.MaxResponseBytes+1))
	if err != nil || int64(len(out)) > g.cfg.MaxResponseBytes {
		log.Warn("model gateway: upstream answer unreadable or too large", zap.Int("status", resp.StatusCode))
		s.book(x.res, resp.StatusCode/100 == 2)
		g.count("failed", "transport")
		writeError(w, p, http.StatusBadGateway, "upstream_bad_response", "the model endpoint's answer could not be read")
		return
	}
	ok := resp.StatusCode/100 == 2
	var (
		u       Tokens
		metered bool
		turn    *Turn
	)
	if ok {
		u, metered, turn = p.Answer(rt, out)
	} else {
		// An error answer is metered at its usage if it has one.
		u, metered, _ = p.Answer(rt, out)
	}
	if !g.settle(s, rt.Kind, resp.StatusCode, u, metered, x, log) {
		writeError(w, p, http.StatusBadGateway, "upstream_no_usage",
			"the model endpoint's answer reported no token usage, so it cannot be metered; it was refused and metered at the request's reservation")
		return
	}
	if ok && rt.Kind == Generate {
		s.recordAnswer(x.seq, x.tools, u, g.redactTurn(turn), x.sentMax())
	}
	g.copyHeaders(w, p, resp)
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(g.redactBytes(out))
}

// settle books one forwarded request: the session's usage, which its budget is checked
// against, and the metrics. A successful answer without usage (or with zero tokens, which no
// real answer has) is metered at its reservation, never at zero, so that an upstream that
// does not report cannot make the budget leak; settle then reports false and the answer
// must not be passed on as a success. An error answer is metered at its usage if it has
// one, else at zero: providers do not bill refused requests. A token count is billed by no
// provider and needs no usage; an aside (a compaction) without usage is metered at its
// reservation and passed on.
func (g *Gateway) settle(s *Session, kind Kind, status int, u Tokens, reported bool, x exchange, log *zap.Logger) bool {
	g.m.Latency.WithLabelValues(g.cfg.Name, g.cfg.Model).Observe(g.now().Sub(x.start).Seconds())
	ok := status/100 == 2
	if kind == Count {
		s.mu.Lock()
		s.requests++
		s.mu.Unlock()
		outcome := "failed"
		if ok {
			outcome = "ok"
		}
		g.count(outcome, modelmetrics.StatusClass(status))
		return true
	}
	if !reported {
		u = Tokens{}
	}
	u = u.bounded()
	metered := u.Total() > 0
	if ok && !metered {
		u = Tokens{Prompt: x.res.prompt, Completion: x.res.output}
		if kind == Aside {
			// A compaction's answer may carry no usage, and Codex stops its turn when
			// compaction fails: it is passed on, metered at its reservation, never at zero.
			log.Info("model gateway: an aside answer without usage, metered at its reservation", zap.Int64("tokens", u.Total()))
			metered = true
		}
	}
	s.mu.Lock()
	s.reserved -= x.res.total()
	s.requests++
	s.usage = s.usage.plus(u)
	if ok && metered && kind == Generate {
		s.answered++
		if x.tools {
			s.answeredTools++
		}
	}
	s.mu.Unlock()
	if !ok {
		g.count("failed", modelmetrics.StatusClass(status))
		return true
	}
	if metered {
		g.count("ok", "2xx")
		if x.res.bounded && u.Completion > x.res.output {
			// The budget still holds the real figure, but reservations no longer bound what
			// requests in flight together can spend: the upstream ignores the max output field.
			log.Warn("model gateway: the answer's output exceeds the max output asked for; does the upstream ignore the field? (see MaxTokensField)",
				zap.Int64("completion_tokens", u.Completion), zap.Int64("max_output", x.res.output))
		}
	} else {
		log.Warn("model gateway: upstream answer without usage; refused and metered at its reservation", zap.Int64("tokens", u.Total()))
		g.count("failed", "no_usage")
	}
	g.m.Tokens.WithLabelValues(g.cfg.Name, g.cfg.Model, "prompt").Add(float64(u.Prompt))
	g.m.Tokens.WithLabelValues(g.cfg.Name, g.cfg.Model, "completion").Add(float64(u.Completion))
	if u.CacheRead > 0 {
		g.m.Tokens.WithLabelValues(g.cfg.Name, g.cfg.Model, "cache_read").Add(float64(u.CacheRead))
	}
	if u.CacheWrite > 0 {
		g.m.Tokens.WithLabelValues(g.cfg.Name, g.cfg.Model, "cache_write").Add(float64(u.CacheWrite))
	}
	g.m.Cost.WithLabelValues(g.cfg.Name, g.cfg.Model).Add(g.usage(u).Cost)
	return metered
}

// bounded clamps a reported usage to sane figures: an upstream (or a hostile one) cannot make
// a sum overflow or a count negative.
func (t Tokens) bounded() Tokens {
	c := func(n int64) int64 { return min(max(n, 0), maxReservable) }
	t = Tokens{Prompt: c(t.Prompt), Completion: c(t.Completion), CacheRead: c(t.CacheRead), CacheWrite: c(t.CacheWrite)}
	// The cache's parts are within the prompt, whatever a protocol reported.
	t.Prompt = max(t.Prompt, t.CacheRead+t.CacheWrite)
	return t
}

func (t Tokens) plus(o Tokens) Tokens {
	return Tokens{Prompt: t.Prompt + o.Prompt, Completion: t.Completion + o.Completion,
		CacheRead: t.CacheRead + o.CacheRead, CacheWrite: t.CacheWrite + o.CacheWrite}
}
