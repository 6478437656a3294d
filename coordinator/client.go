package coordinator

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/comparison"
	"github.com/skillfleet/skillfleet/diag"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// lenient reads what a newer coordinator writes: fields this client does not know are skipped
// (the wire contract only ever grows).
var lenient = protojson.UnmarshalOptions{DiscardUnknown: true}

// Client talks to a coordinator's HTTP API.
type Client struct {
	base  string
	token string
	http  *http.Client
	// Team, when set, is the team an admin acts in on the routes that take ?team= (suites,
	// schedules, flaky, audit); for anyone else the coordinator answers another team's 404.
	Team string
}

// withTeam adds c.Team to path as ?team= (or &team=).
func (c *Client) withTeam(path string) string {
	if c.Team == "" {
		return path
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return path + sep + "team=" + url.QueryEscape(c.Team)
}

// NewClient returns a client for the coordinator at base (e.g. http://127.0.0.1:8080). A nil
// hc uses a client without an overall timeout, since event streams last as long as runs.
func NewClient(base, token string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{}
	}
	return &Client{base: strings.TrimRight(base, "/"), token: token, http: hc}
}

// APIError is an error response of the API.
type APIError struct {
	Status      int
	Message     string
	Diagnostics diag.Diagnostics
}

func (e *APIError) Error() string {
	return fmt.Sprintf("coordinator answered %d: %s", e.Status, e.Message)
}

// SubmitOptions are a run's options.
type SubmitOptions struct {
	Name   string
	Skills []string
	Cases  []string
	// Kinds keeps only cases of these kinds ("prompt", "command"); empty keeps all.
	Kinds     []string
	Agents    []string
	Scheduled bool
	Deadline  time.Duration
	// Limits are the sandbox limits the suite asks for (skillfleet.yaml).
	Limits *pb.Limits
	// MaxTokens is the run's token budget (both arms of a run with a baseline); 0 means none.
	MaxTokens int64
	// MaxCost is the run's cost cap in US dollars (agents and judge, priced); 0 means none.
	MaxCost float64
	// Baseline is the run's baseline arm ("without_skill", "old_skill"); "" runs with_skill
	// only. An old_skill run's bundle must hold the old versions (suite.WriteBundleWith).
	Baseline string
	// ChangedOnly reuses the passing verdicts of unchanged cells from a run of the suite within
	// ReuseWithin (0: DefaultReuseWithin) and runs the rest.
	ChangedOnly bool
	ReuseWithin time.Duration
}

// Submit uploads a bundle and starts a run.
func (c *Client) Submit(ctx context.Context, bundle io.Reader, o SubmitOptions) (*pb.RunStatus, error) {
	q := url.Values{}
	if o.Name != "" {
		q.Set("name", o.Name)
	}
	q["skill"], q["case"], q["kind"], q["agent"] = o.Skills, o.Cases, o.Kinds, o.Agents
	if o.Scheduled {
		q.Set("priority", "scheduled")
	}
	if o.Deadline > 0 {
		q.Set("deadline", o.Deadline.String())
	}
	if o.Baseline != "" {
		q.Set("baseline", o.Baseline)
	}
	if o.ChangedOnly {
		q.Set("changed_only", "true")
		if o.ReuseWithin > 0 {
			q.Set("reuse_within", o.ReuseWithin.String())
		}
	}
	if o.MaxTokens > 0 {
		q.Set("max_tokens", strconv.FormatInt(o.MaxTokens, 10))
	}
	if o.MaxCost > 0 {
		q.Set("max_cost", strconv.FormatFloat(o.MaxCost, 'f', -1, 64))
	}
	if l := o.Limits; l != nil {
		for k, v := range map[string]int64{"memory": l.GetMemoryBytes(), "nano_cpus": l.GetNanoCpus(), "pids": l.GetPids(), "file_size": l.GetFileSizeBytes(), "output": l.GetOutputBytes()} {
			if v > 0 {
				q.Set(k, strconv.FormatInt(v, 10))
			}
		}
	}
	st := &pb.RunStatus{}
	return st, c.do(ctx, http.MethodPost, "/v1/runs?"+q.Encode(), bundle, "application/x-tar", st)
}

// Status returns a run's state.
func (c *Client) Status(ctx context.Context, id string) (*pb.RunStatus, error) {
	st := &pb.RunStatus{}
	return st, c.do(ctx, http.MethodGet, "/v1/runs/"+url.PathEscape(id), nil, "", st)
}

// Cancel cancels a run.
func (c *Client) Cancel(ctx context.Context, id string) (*pb.RunStatus, error) {
	st := &pb.RunStatus{}
	return st, c.do(ctx, http.MethodDelete, "/v1/runs/"+url.PathEscape(id), nil, "", st)
}

// List returns the coordinator's runs, newest first.
func (c *Client) List(ctx context.Context) ([]*pb.RunStatus, error) {
	resp, err := c.send(ctx, http.MethodGet, "/v1/runs", nil, "")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Runs []json.RawMessage `json:"runs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("decode run list: %w", err)
	}
	out := make([]*pb.RunStatus, 0, len(body.Runs))
	for _, raw := range body.Runs {
		st := &pb.RunStatus{}
		if err := lenient.Unmarshal(raw, st); err != nil {
			return nil, fmt.Errorf("decode run: %w", err)
		}
		out = append(out, st)
	}
	return out, nil
}

// Report copies a run's report in format (json, junit or text) to w.
func (c *Client) Report(ctx context.Context, id, format string, w io.Writer) error {
	resp, err := c.send(ctx, http.MethodGet, "/v1/runs/"+url.PathEscape(id)+"/report?format="+url.QueryEscape(format), nil, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	return err
}

// Flaky lists a suite's flaky cells in a lane ("" for both) from the coordinator's history.
func (c *Client) Flaky(ctx context.Context, suite, lane string) (FlakyList, error) {
	resp, err := c.send(ctx, http.MethodGet, c.withTeam("/v1/flaky?suite="+url.QueryEscape(suite)+"&lane="+url.QueryEscape(lane)), nil, "")
	if err != nil {
		return FlakyList{}, err
	}
	defer resp.Body.Close()
	var out FlakyList
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&out); err != nil {
		return FlakyList{}, fmt.Errorf("flaky list: %w", err)
	}
	return out, nil
}

// Trajectory copies one job's ATIF trajectory (JSON) to w.
func (c *Client) Trajectory(ctx context.Context, id string, q TrajectoryQuery, w io.Writer) error {
	v := url.Values{"skill": {q.Skill}, "case": {q.Case}}
	if q.Agent != "" {
		v.Set("agent", q.Agent)
	}
	if q.Epoch > 0 {
		v.Set("epoch", strconv.Itoa(q.Epoch))
	}
	resp, err := c.send(ctx, http.MethodGet, "/v1/runs/"+url.PathEscape(id)+"/trajectory?"+v.Encode(), nil, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, io.LimitReader(resp.Body, maxTrajectoryBytes))
	return err
}

// Results calls fn with each result a run's report counts, its documents inline (see
// Coordinator.ResolveDocuments), in stored order.
func (c *Client) Results(ctx context.Context, id string, fn func(*pb.Result) error) error {
	return c.ResultsOf(ctx, id, ResultsQuery{Documents: true}, fn)
}

// ResultsQuery narrows GET /v1/runs/{id}/results.
type ResultsQuery struct {
	// Skill and Case, both set, read one case's results (at the case's cost).
	Skill, Case string
	// Documents brings each result's trajectory and output files inline; without it they
	// stay as stored (a reference, or inline bytes), for readers of verdicts only.
	Documents bool
}

// ResultsOf is Results narrowed by q.
func (c *Client) ResultsOf(ctx context.Context, id string, q ResultsQuery, fn func(*pb.Result) error) error {
	v := url.Values{}
	if q.Skill != "" || q.Case != "" {
		v.Set("case", q.Skill+"/"+q.Case)
	}
	if !q.Documents {
		v.Set("documents", "false")
	}
	path := "/v1/runs/" + url.PathEscape(id) + "/results"
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	resp, err := c.send(ctx, http.MethodGet, path, nil, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	// A line is one result with its documents: up to a trajectory and the outputs' caps.
	sc.Buffer(make([]byte, 0, 64<<10), 2*maxTrajectoryBytes)
	for sc.Scan() {
		res := &pb.Result{}
		if err := lenient.Unmarshal(sc.Bytes(), res); err != nil {
			return fmt.Errorf("decode result: %w", err)
		}
		if err := fn(res); err != nil {
			return err
		}
	}
	return sc.Err()
}

// Records reads the stored records of finished run id (GET /v1/runs/{id}/records) and
// returns those of arm, read within lim (see comparison.ReadRecords; the answer's length
// bounds what its header may announce). A run without stored records, or not finished, is an
// *APIError of status 404 or 409: its results are then read instead.
func (c *Client) Records(ctx context.Context, id, arm string, lim comparison.ReadLimits) ([]comparison.Record, error) {
	resp, err := c.send(ctx, http.MethodGet, "/v1/runs/"+url.PathEscape(id)+"/records", nil, "")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != RecordsContentType {
		return nil, fmt.Errorf("the records of run %s: the coordinator answered %q, not %s", id, ct, RecordsContentType)
	}
	if resp.ContentLength > 0 {
		lim.Size = resp.ContentLength
	}
	out, err := comparison.ReadRecords(resp.Body, arm, lim)
	if err != nil {
		return nil, fmt.Errorf("the records of run %s: %w", id, err)
	}
	return out, nil
}

// Events calls fn for each event of a run until the run ends (the server closes the stream),
// fn returns an error, or ctx ends.
func (c *Client) Events(ctx context.Context, id string, fn func(*pb.Event) error) error {
	resp, err := c.send(ctx, http.MethodGet, "/v1/runs/"+url.PathEscape(id)+"/events", nil, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var kind string
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data.Len() > 0 {
				ev, err := decodeEvent(id, kind, data.Bytes())
				if err != nil {
					return err
				}
				if ev != nil {
					if err := fn(ev); err != nil {
						return err
					}
				}
			}
			kind = ""
			data.Reset()
		case strings.HasPrefix(line, "event:"):
			kind = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("event stream: %w", err)
	}
	return ctx.Err()
}

func decodeEvent(run, kind string, data []byte) (*pb.Event, error) {
	switch kind {
	case "status":
		st := &pb.RunStatus{}
		if err := lenient.Unmarshal(data, st); err != nil {
			return nil, fmt.Errorf("decode status event: %w", err)
		}
		return &pb.Event{RunId: run, Payload: &pb.Event_Status{Status: st}}, nil
	case "result":
		r := &pb.Result{}
		if err := lenient.Unmarshal(data, r); err != nil {
			return nil, fmt.Errorf("decode result event: %w", err)
		}
		return &pb.Event{RunId: run, Payload: &pb.Event_Result{Result: r}}, nil
	}
	return nil, nil // an event kind this client does not know: skip it
}

func (c *Client) do(ctx context.Context, method, path string, body io.Reader, ctype string, out proto.Message) error {
	resp, err := c.send(ctx, method, path, body, ctype)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	return lenient.Unmarshal(b, out)
}

func (c *Client) send(ctx context.Context, method, path string, body io.Reader, ctype string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		var e struct {
			Error       string           `json:"error"`
			Diagnostics diag.Diagnostics `json:"diagnostics"`
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(b))
		}
		return nil, &APIError{Status: resp.StatusCode, Message: e.Error, Diagnostics: e.Diagnostics}
	}
	return resp, nil
}

// PushSuite uploads a bundle as the latest of the suite name.
func (c *Client) PushSuite(ctx context.Context, name string, bundle io.Reader) (*PushedSuite, error) {
	out := &PushedSuite{}
	return out, c.doJSON(ctx, http.MethodPut, c.withTeam("/v1/suites/"+url.PathEscape(name)), bundle, "application/x-tar", out)
}

// Suites returns the pushed suites.
func (c *Client) Suites(ctx context.Context) ([]*PushedSuite, error) {
	var out struct {
		Suites []*PushedSuite `json:"suites"`
	}
	return out.Suites, c.doJSON(ctx, http.MethodGet, "/v1/suites", nil, "", &out)
}

// AddSchedule adds the schedule name; a name in use is refused (409).
func (c *Client) AddSchedule(ctx context.Context, name string, req ScheduleRequest) (*Schedule, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	out := &Schedule{}
	return out, c.doJSON(ctx, http.MethodPut, c.withTeam("/v1/schedules/"+url.PathEscape(name)), bytes.NewReader(b), "application/json", out)
}

// Schedules returns the coordinator's schedules.
func (c *Client) Schedules(ctx context.Context) ([]*Schedule, error) {
	var out struct {
		Schedules []*Schedule `json:"schedules"`
	}
	return out.Schedules, c.doJSON(ctx, http.MethodGet, "/v1/schedules", nil, "", &out)
}

// RemoveSchedule deletes the schedule name.
func (c *Client) RemoveSchedule(ctx context.Context, name string) error {
	return c.doJSON(ctx, http.MethodDelete, c.withTeam("/v1/schedules/"+url.PathEscape(name)), nil, "", nil)
}

// Audit returns a page of the audit log, newest first: records before id before (0: the
// newest), at most limit (0: the coordinator's default). Its Next names the next page.
func (c *Client) Audit(ctx context.Context, before int64, limit int) (AuditList, error) {
	q := url.Values{}
	if before > 0 {
		q.Set("before", strconv.FormatInt(before, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if c.Team != "" {
		q.Set("team", c.Team)
	}
	path := "/v1/audit"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out AuditList
	return out, c.doJSON(ctx, http.MethodGet, path, nil, "", &out)
}

// doJSON is do for the API's plain JSON answers; a nil out reads nothing.
func (c *Client) doJSON(ctx context.Context, method, path string, body io.Reader, ctype string, out any) error {
	resp, err := c.send(ctx, method, path, body, ctype)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		return nil
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(out)
}

// Usage returns the usage of the caller's team, or for an admin every team's (the client's
// Team, when set, names one).
func (c *Client) Usage(ctx context.Context) (UsageList, error) {
	var out UsageList
	return out, c.doJSON(ctx, http.MethodGet, c.withTeam("/v1/usage"), nil, "", &out)
}
