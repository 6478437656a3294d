package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/bundle"
	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/internal/authlimit"
	"github.com/skillfleet/skillfleet/internal/httpserve"
	"github.com/skillfleet/skillfleet/internal/tenant"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
	"github.com/skillfleet/skillfleet/suite"
)

// APIConfig configures the HTTP API.
type APIConfig struct {
	// Token, when set, must be presented as "Authorization: Bearer <token>" on /v1/ routes; its
	// holder is named "default".
	Token string
	// Tokens are further accepted tokens, each with its holder's name (see ParseTokens). With
	// neither Token nor Tokens the API serves only loopback, non-browser callers.
	Tokens []Token
	// Gatherer serves /metrics; nil serves none.
	Gatherer prometheus.Gatherer
	// MetricsToken, when set, must be presented as "Authorization: Bearer <token>" on
	// /metrics; empty leaves /metrics open.
	MetricsToken string
	// Ready reports whether the coordinator can serve (NATS connected); nil means always.
	Ready func(ctx context.Context) error
	// SSEKeepAlive is the interval of comment lines that keep idle event streams open.
	SSEKeepAlive time.Duration
	// MaxStreams caps concurrent event streams (0 = 256); MaxStreamsPerCaller caps them per
	// token (0 = 16). Over a cap a stream request gets 429 with Retry-After.
	MaxStreams, MaxStreamsPerCaller int
	// MaxDocumentReads caps the requests that read documents back at once (a run's results,
	// a trajectory), each of which holds them decoded in memory until its client takes them
	// (0 = 8); MaxDocumentReadsPerCaller caps them per principal (0 = 2). Over a cap: 429 with
	// Retry-After.
	MaxDocumentReads, MaxDocumentReadsPerCaller int
	// WriteTimeout bounds each write of an event stream or of a read of documents, which have
	// no overall write deadline (a client that stops reading is cut off this long after), and
	// the answer to an upload, which may take longer than the server's (0 = 1 minute).
	WriteTimeout time.Duration
	// MinUploadRate fails (408) an upload slower than this many bytes/s averaged over
	// UploadRateWindow (0 = 64 KiB/s over 10 s; negative: no minimum).
	MinUploadRate int64
	// UploadRateWindow is the window MinUploadRate is averaged over, and the longest an upload
	// may send nothing.
	UploadRateWindow time.Duration
	// Now is the clock of the upload rate (nil: time.Now).
	Now func() time.Time
	// Proxy, when enabled, takes the caller from an authenticating proxy's headers (single
	// sign-on); a request without them still needs a token.
	Proxy *tenant.Proxy
	// Guesses limits failed authentications per client address (nil: authlimit's defaults).
	// Share one with the web viewer's login, so that guesses split between the two draw on one
	// budget.
	Guesses *authlimit.Limiter
}

// Default limits of the API.
const (
	DefaultMaxStreams          = 256
	DefaultMaxStreamsPerCaller = 16
	DefaultMinUploadRate       = 64 << 10
	DefaultUploadRateWindow    = 10 * time.Second
)

var jsonOpts = protojson.MarshalOptions{UseProtoNames: true}

// Handler returns the coordinator's HTTP API.
func (c *Coordinator) Handler(cfg APIConfig) http.Handler {
	if cfg.SSEKeepAlive <= 0 {
		cfg.SSEKeepAlive = 15 * time.Second
	}
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = DefaultMaxStreams
	}
	if cfg.MaxStreamsPerCaller <= 0 {
		cfg.MaxStreamsPerCaller = DefaultMaxStreamsPerCaller
	}
	if cfg.MaxDocumentReads <= 0 {
		cfg.MaxDocumentReads = DefaultMaxDocumentReads
	}
	if cfg.MaxDocumentReadsPerCaller <= 0 {
		cfg.MaxDocumentReadsPerCaller = DefaultMaxDocumentReadsPerCaller
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = time.Minute
	}
	if cfg.MinUploadRate == 0 {
		cfg.MinUploadRate = DefaultMinUploadRate
	}
	if cfg.UploadRateWindow <= 0 {
		cfg.UploadRateWindow = DefaultUploadRateWindow
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Guesses == nil {
		cfg.Guesses, _ = authlimit.New(authlimit.DefaultConfig(), cfg.Now, nil) // unregistered: cannot fail
	}
	a := &api{c: c, cfg: cfg, probe: &storeProbe{c: c},
		streams:   newStreamLimiter(cfg.MaxStreams, cfg.MaxStreamsPerCaller, "event streams"),
		documents: newStreamLimiter(cfg.MaxDocumentReads, cfg.MaxDocumentReadsPerCaller, "reads of documents"),
		listings:  newStreamLimiter(MaxRunListings, MaxRunListingsPerCaller, "listings of runs"),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/runs", a.auth(a.submit))
	mux.HandleFunc("GET /v1/runs", a.auth(a.bounded(a.listings, a.list)))
	mux.HandleFunc("GET /v1/runs/{id}", a.auth(a.status))
	mux.HandleFunc("DELETE /v1/runs/{id}", a.auth(a.cancel))
	mux.HandleFunc("GET /v1/runs/{id}/events", a.auth(a.events))
	mux.HandleFunc("GET /v1/runs/{id}/report", a.auth(a.report))
	mux.HandleFunc("GET /v1/runs/{id}/trajectory", a.auth(a.bounded(a.documents, a.trajectory)))
	mux.HandleFunc("GET /v1/runs/{id}/results", a.auth(a.bounded(a.documents, a.results)))
	mux.HandleFunc("GET /v1/runs/{id}/records", a.auth(a.bounded(a.documents, a.records)))
	mux.HandleFunc("PUT /v1/suites/{name}", a.auth(a.pushSuite))
	mux.HandleFunc("GET /v1/suites", a.auth(a.listSuites))
	mux.HandleFunc("GET /v1/schedules", a.auth(a.listSchedules))
	mux.HandleFunc("PUT /v1/schedules/{name}", a.auth(a.addSchedule))
	mux.HandleFunc("DELETE /v1/schedules/{name}", a.auth(a.removeSchedule))
	mux.HandleFunc("GET /v1/flaky", a.auth(a.flakyCells))
	mux.HandleFunc("GET /v1/audit", a.auth(a.auditRecords))
	mux.HandleFunc("GET /v1/usage", a.auth(a.usage))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", a.ready)
	if cfg.Gatherer != nil {
		mux.Handle("GET /metrics", httpserve.RequireBearer(cfg.MetricsToken, promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{})))
	}
	return mux
}

type api struct {
	c       *Coordinator
	cfg     APIConfig
	streams *streamLimiter
	probe   *storeProbe

	// documents bounds the reads of documents, listings the listings of runs (bounded).
	documents, listings *streamLimiter
}

// submit accepts a suite bundle (a tar, as `skillfleet submit` writes it) with the run's
// options in the query: name, skill and case globs (repeatable), agent (repeatable),
// priority (on-demand or scheduled), deadline (a Go duration), and changed_only=true with an
// optional reuse_within (a Go duration) for a changed-only run.
func (a *api) submit(w http.ResponseWriter, r *http.Request) {
	// A viewer's upload is refused before it is read (admission refuses it again).
	if p := tenant.Of(r.Context()); !p.CanChange(p.Team) {
		a.c.audit(p, "", "submit", "suite/"+r.URL.Query().Get("name"), outcomeDenied, "role "+p.Role.String())
		writeError(w, http.StatusForbidden, fmt.Errorf("submit: %w (%s)", ErrForbidden, p.Role), nil)
		return
	}
	q := r.URL.Query()
	spec := &pb.RunSpec{Name: q.Get("name"), SkillGlobs: q["skill"], CaseGlobs: q["case"], CaseKinds: q["kind"], Agents: q["agent"]}
	switch q.Get("priority") {
	case "", "on-demand", "ondemand":
		spec.Priority = pb.Priority_PRIORITY_ON_DEMAND
	case "scheduled":
		spec.Priority = pb.Priority_PRIORITY_SCHEDULED
	default:
		writeError(w, http.StatusBadRequest, fmt.Errorf("priority must be on-demand or scheduled, got %q", q.Get("priority")), nil)
		return
	}
	if d := q.Get("deadline"); d != "" {
		dur, err := time.ParseDuration(d)
		if err != nil || dur <= 0 {
			writeError(w, http.StatusBadRequest, fmt.Errorf("deadline must be a positive duration such as 2h, got %q", d), nil)
			return
		}
		spec.DeadlineMs = dur.Milliseconds()
	}
	limits := &pb.Limits{}
	for _, f := range []struct {
		name string
		dst  *int64
	}{{"memory", &limits.MemoryBytes}, {"nano_cpus", &limits.NanoCpus}, {"pids", &limits.Pids}, {"file_size", &limits.FileSizeBytes}, {"output", &limits.OutputBytes}} {
		if v := q.Get(f.name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				writeError(w, http.StatusBadRequest, fmt.Errorf("%s must be a positive integer, got %q", f.name, v), nil)
				return
			}
			*f.dst = n
		}
	}
	if v := q.Get("baseline"); v != "" {
		if _, err := suite.ParseArm(v); err != nil {
			writeError(w, http.StatusBadRequest, err, nil)
			return
		}
		spec.Baseline = v
	}
	switch v := q.Get("changed_only"); v {
	case "", "false":
	case "true":
		spec.ChangedOnly = true
	default:
		writeError(w, http.StatusBadRequest, fmt.Errorf("changed_only must be true or false, got %q", v), nil)
		return
	}
	if v := q.Get("reuse_within"); v != "" {
		dur, err := time.ParseDuration(v)
		if err != nil || dur <= 0 || !spec.ChangedOnly {
			writeError(w, http.StatusBadRequest, fmt.Errorf("reuse_within must be a positive duration such as 168h, with changed_only=true; got %q", v), nil)
			return
		}
		spec.ReuseWithinMs = dur.Milliseconds()
	}
	if v := q.Get("max_tokens"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			writeError(w, http.StatusBadRequest, fmt.Errorf("max_tokens must be a positive integer, got %q", v), nil)
			return
		}
		spec.MaxTokens = n
	}
	if v := q.Get("max_cost"); v != "" {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || !(x > 0) || math.IsInf(x, 0) {
			writeError(w, http.StatusBadRequest, fmt.Errorf("max_cost must be a positive number of US dollars, got %q", v), nil)
			return
		}
		spec.MaxCost = x
	}
	if proto.Size(limits) > 0 {
		spec.Limits = limits // workers clamp them to their operator's maxima
	}
	if err := (suite.Filter{Skills: spec.SkillGlobs, Cases: spec.CaseGlobs, Kinds: suite.Kinds(spec.CaseKinds)}).Validate(); err != nil {
		writeError(w, http.StatusBadRequest, err, nil)
		return
	}
	var st *pb.RunStatus
	answered, err := a.upload(w, r, func(body io.Reader) (err error) {
		st, err = a.c.Submit(r.Context(), body, spec)
		return err
	})
	if answered {
		return
	}
	if err != nil {
		a.c.log.Error("submit failed", zap.Error(err))
		writeError(w, http.StatusInternalServerError, err, nil)
		return
	}
	w.Header().Set("Location", "/v1/runs/"+st.GetId())
	writeProto(w, http.StatusCreated, st)
}

// upload hands the request's body to store as every upload is read, bounded in size and rate,
// and answers the failures all uploads share: too slow (408), a suite that does not plan
// (422, with its diagnostics), too large (413). It reports whether it answered; any other
// error of store's is the caller's to answer.
func (a *api) upload(w http.ResponseWriter, r *http.Request, store func(io.Reader) error) (answered bool, err error) {
	// The server's read timeout would cut a large upload: the rate reader keeps the
	// connection's read deadline a window ahead instead, and fails a trickle.
	rc := http.NewResponseController(w)
	var rate *rateReader
	in := io.Reader(r.Body)
	if a.cfg.MinUploadRate > 0 {
		rate = newRateReader(r.Body, a.cfg.MinUploadRate, a.cfg.UploadRateWindow, a.cfg.Now, rc.SetReadDeadline)
		in = rate
	} else {
		_ = rc.SetReadDeadline(time.Time{})
	}
	err = store(http.MaxBytesReader(w, io.NopCloser(in), bundle.MaxBundleBytes+64<<20))
	// The server's write deadline ran from the request's headers, through the whole upload:
	// the answer gets its own.
	_ = rc.SetWriteDeadline(time.Now().Add(a.cfg.WriteTimeout))
	var pe *PlanError
	var tooBig *http.MaxBytesError
	var full *CapacityError
	var quota *QuotaError
	switch {
	case rate != nil && rate.err != nil:
		// Whatever store made of the failed read, the client was too slow.
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusRequestTimeout, rate.err, nil)
	case errors.As(err, &pe):
		var diags any
		if len(pe.Diagnostics) > 0 {
			diags = pe.Diagnostics // a nil slice in an interface would defeat omitempty
		}
		writeError(w, http.StatusUnprocessableEntity, err, diags)
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, err, nil)
	case errors.As(err, &full):
		writeError(w, http.StatusInsufficientStorage, err, nil)
	case errors.As(err, &quota):
		w.Header().Set("Retry-After", "60")
		writeError(w, http.StatusTooManyRequests, err, nil)
	case errors.Is(err, ErrForbidden):
		writeError(w, http.StatusForbidden, err, nil)
	default:
		return false, err
	}
	return true, err
}

func (a *api) list(w http.ResponseWriter, r *http.Request) {
	runs, err := a.c.List(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, err, nil)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(`{"runs":[`))
	for i, st := range runs {
		if i > 0 {
			_, _ = w.Write([]byte(","))
		}
		b, _ := jsonOpts.Marshal(st)
		_, _ = w.Write(b)
	}
	_, _ = w.Write([]byte("]}\n"))
}

func (a *api) status(w http.ResponseWriter, r *http.Request) {
	st, err := a.c.Status(r.Context(), r.PathValue("id"))
	if err != nil {
		writeLookupError(w, err)
		return
	}
	writeProto(w, http.StatusOK, st)
}

func (a *api) cancel(w http.ResponseWriter, r *http.Request) {
	st, err := a.c.Cancel(r.Context(), r.PathValue("id"))
	if err != nil {
		writeLookupError(w, err)
		return
	}
	writeProto(w, http.StatusOK, st)
}

func (a *api) report(w http.ResponseWriter, r *http.Request) {
	rep, err := a.c.Report(r.Context(), r.PathValue("id"))
	if err != nil {
		writeLookupError(w, err)
		return
	}
	switch f := r.URL.Query().Get("format"); f {
	case "", "json":
		w.Header().Set("Content-Type", "application/json")
		err = report.WriteJSON(w, rep)
	case "junit":
		w.Header().Set("Content-Type", "application/xml")
		err = report.WriteJUnit(w, rep)
	case "text":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		err = report.WriteText(w, rep, report.TextOptions{})
	default:
		writeError(w, http.StatusBadRequest, fmt.Errorf("format must be json, junit or text, got %q", f), nil)
		return
	}
	if err != nil {
		a.c.log.Warn("writing report failed", zap.Error(err))
	}
}

// FlakyList is the answer of GET /v1/flaky: the flaky cells of a suite with their evidence.
type FlakyList struct {
	Team  string             `json:"team"`
	Suite string             `json:"suite"`
	Lane  string             `json:"lane,omitempty"`
	Cells []report.FlakyCell `json:"cells"`
}

// flakyCells serves GET /v1/flaky?suite=S&lane=L (lane "ondemand" or "scheduled", empty for
// both) from the coordinator's history.
func (a *api) flakyCells(w http.ResponseWriter, r *http.Request) {
	if a.c.flaky == nil {
		writeError(w, http.StatusNotFound, errors.New("this coordinator keeps no history (--history off)"), nil)
		return
	}
	q := r.URL.Query()
	suite, lane := q.Get("suite"), q.Get("lane")
	team, ok := teamOf(r)
	if !ok {
		// Another team's suite has no flaky cells the caller may know of.
		writeError(w, http.StatusNotFound, fmt.Errorf("no suite %q in your team", suite), nil)
		return
	}
	if suite == "" {
		writeError(w, http.StatusBadRequest, errors.New("suite is required"), nil)
		return
	}
	switch lane {
	case "", "ondemand", "scheduled":
	case "on-demand":
		lane = "ondemand"
	default:
		writeError(w, http.StatusBadRequest, fmt.Errorf("lane must be ondemand or scheduled, got %q", lane), nil)
		return
	}
	cells, err := a.c.flaky.FlakyCells(r.Context(), team, suite, lane)
	if err != nil {
		a.c.log.Warn("flaky list failed", zap.String("suite", suite), zap.Error(err))
		writeError(w, http.StatusInternalServerError, errors.New("the history could not be read"), nil)
		return
	}
	if cells == nil {
		cells = []report.FlakyCell{}
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(FlakyList{Team: team, Suite: suite, Lane: lane, Cells: cells}); err != nil {
		a.c.log.Warn("writing the flaky list failed", zap.Error(err))
	}
}

// trajectory serves one job's ATIF trajectory: ?skill=&case= (required), &agent=, &epoch=.
func (a *api) trajectory(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q := TrajectoryQuery{Skill: v.Get("skill"), Case: v.Get("case"), Agent: v.Get("agent")}
	if q.Skill == "" || q.Case == "" {
		writeError(w, http.StatusBadRequest, errors.New("skill and case are required"), nil)
		return
	}
	if e := v.Get("epoch"); e != "" {
		n, err := strconv.Atoi(e)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, fmt.Errorf("epoch must be a positive integer, got %q", e), nil)
			return
		}
		q.Epoch = n
	}
	doc, err := a.c.Trajectory(r.Context(), r.PathValue("id"), q)
	if err != nil {
		writeLookupError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(doc)
}

// results streams the results a run's report counts, one JSON document per line, with their
// documents (trajectory, output files) brought inline: what skillfleet runs export writes a
// workspace from. ?case=SKILL/CASE gives one case's (every agent and arm of it), read at the
// case's cost whatever the run's size; ?documents=false leaves the documents as stored (a
// reference or inline bytes), for a reader that needs verdicts only (compare).
func (a *api) results(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	documents := true
	switch v := q.Get("documents"); v {
	case "", "true":
	case "false":
		documents = false
	default:
		writeError(w, http.StatusBadRequest, fmt.Errorf("documents must be true or false, got %q", v), nil)
		return
	}
	each := func(fn func(*pb.Result) error) error { return a.c.AcceptedResults(ctx, r.PathValue("id"), fn) }
	if v, ok := q["case"]; ok {
		skill, caseName, found := strings.Cut(v[0], "/")
		if len(v) != 1 || !found || skill == "" || caseName == "" {
			writeError(w, http.StatusBadRequest, errors.New("case must be given once, as SKILL/CASE"), nil)
			return
		}
		each = func(fn func(*pb.Result) error) error {
			return a.c.CaseResults(ctx, r.PathValue("id"), skill, caseName, fn)
		}
	}
	started := false
	err := each(func(res *pb.Result) error {
		if documents {
			a.c.ResolveDocuments(ctx, res)
		}
		b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(res)
		if err != nil {
			return err
		}
		if !started {
			w.Header().Set("Content-Type", "application/x-ndjson")
			started = true
		}
		_, err = w.Write(append(b, '\n'))
		return err
	})
	if err != nil && !started {
		writeLookupError(w, err)
		return
	}
	if err != nil {
		a.c.log.Warn("streaming results failed", zap.Error(err))
		return
	}
	if !started {
		w.Header().Set("Content-Type", "application/x-ndjson")
	}
}

// RecordsContentType is the media type of a run's records (package comparison's encoding).
const RecordsContentType = "application/vnd.skillfleet.records"

// records streams a finished run's stored records, as stored: what a comparison reads of each
// result the run's report counts (see Coordinator.Records). A run still going answers 409, one
// without stored records 404, each saying so: a comparison then reads the run's results.
func (a *api) records(w http.ResponseWriter, r *http.Request) {
	rc, size, err := a.c.Records(r.Context(), r.PathValue("id"))
	if err != nil {
		writeLookupError(w, err)
		return
	}
	defer rc.Close()
	w.Header().Set("Content-Type", RecordsContentType)
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	if _, err := io.Copy(w, rc); err != nil {
		a.c.log.Warn("streaming records failed", zap.String("run", r.PathValue("id")), zap.Error(err))
	}
}

// events streams a run's events as server-sent events: "status" and "result" events whose data
// is the JSON of the RunStatus or Result. The stream ends after the run's final status.
func (a *api) events(w http.ResponseWriter, r *http.Request) {
	release, err := a.streams.acquire(tenant.Of(r.Context()))
	if err != nil {
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusTooManyRequests, err, nil)
		return
	}
	defer release()
	ch, cancel, err := a.c.Subscribe(r.Context(), r.PathValue("id"))
	if err != nil {
		writeLookupError(w, err)
		return
	}
	defer cancel()
	// A stream lasts as long as its run: the server's read deadline would cancel it (the
	// connection's background read fails) and its write deadline would cut it, so neither
	// applies; each write gets its own deadline, which a gone client misses.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	writeBy := func() { _ = rc.SetWriteDeadline(time.Now().Add(a.cfg.WriteTimeout)) }
	writeBy()
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		// Open the stream now: a client waiting for headers must not wait for the first event.
		flusher.Flush()
	}
	keep := time.NewTicker(a.cfg.SSEKeepAlive)
	defer keep.Stop()
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return
			}
			var kind string
			var msg proto.Message
			switch p := ev.GetPayload().(type) {
			case *pb.Event_Status:
				kind, msg = "status", p.Status
			case *pb.Event_Result:
				kind, msg = "result", p.Result
			default:
				continue
			}
			b, err := jsonOpts.Marshal(msg)
			if err != nil {
				continue
			}
			writeBy()
			if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.GetSeq(), kind, b); err != nil {
				return
			}
		case <-keep.C:
			writeBy()
			if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil {
				return
			}
		case <-r.Context().Done():
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}

func (a *api) ready(w http.ResponseWriter, r *http.Request) {
	if a.cfg.Ready != nil {
		if err := a.cfg.Ready(r.Context()); err != nil {
			writeError(w, http.StatusServiceUnavailable, err, nil)
			return
		}
	}
	if err := a.probe.check(r.Context()); err != nil {
		writeError(w, http.StatusServiceUnavailable, err, nil)
		return
	}
	_, _ = w.Write([]byte("ready\n"))
}

func writeProto(w http.ResponseWriter, code int, m proto.Message) {
	b, err := jsonOpts.Marshal(m)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err, nil)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

// apiError is the body of every error response.
type apiError struct {
	Error       string `json:"error"`
	Diagnostics any    `json:"diagnostics,omitempty"`
}

// writeError answers err; its text and diagnostics lose any server path (see hidePaths).
func writeError(w http.ResponseWriter, code int, err error, diags any) {
	if d, ok := diags.(diag.Diagnostics); ok {
		clean := make(diag.Diagnostics, len(d))
		for i, x := range d {
			x.File, x.Message = hidePaths(x.File), hidePaths(x.Message)
			clean[i] = x
		}
		diags = clean
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(apiError{Error: hidePaths(strings.TrimSpace(err.Error())), Diagnostics: diags})
}

func writeLookupError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var pe *PlanError
	switch {
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrNoResult), errors.Is(err, ErrNoTrajectory), errors.Is(err, ErrNoRecords):
		code = http.StatusNotFound
	case errors.Is(err, ErrNotFinished):
		code = http.StatusConflict
	case errors.Is(err, ErrEvicted):
		code = http.StatusGone
	case errors.Is(err, ErrForbidden):
		code = http.StatusForbidden
	case errors.Is(err, ErrAmbiguous):
		code = http.StatusBadRequest
	case errors.As(err, &pe):
		code = http.StatusConflict
	case errors.Is(err, context.Canceled):
		code = 499
	}
	writeError(w, code, err, nil)
}
