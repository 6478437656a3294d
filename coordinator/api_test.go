package coordinator_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/fleet/fleettest"

	"github.com/skillfleet/skillfleet/diag"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/fleet"
	"github.com/skillfleet/skillfleet/internal/authlimit"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
	"github.com/skillfleet/skillfleet/worker"
)

// These tests live in an external package so that they can build a whole fleet with package fleet,
// which imports coordinator.

const (
	examples = "../examples/skills"
	token    = "s3cret"
	// failing is the one example case the scripted executor fails.
	failing = "usage-error"
)

// The example suite: 17 cases in 3 skills, 21 jobs (default_is_dev has 5 epochs).
const (
	exampleCases  = 17
	exampleJobs   = 21
	exampleSkills = 3
)

// apiFleet is an in-process fleet with the coordinator's API on an httptest server.
type apiFleet struct {
	fleet *fleet.InProcess
	exec  *fleettest.Executor
	reg   *prometheus.Registry
	srv   *httptest.Server
	// dataDir holds the fleet's JetStream store and the coordinator's bundle cache.
	dataDir string
}

func startAPI(t *testing.T, mutate func(*fleet.InProcessConfig, *coordinator.APIConfig)) *apiFleet {
	t.Helper()
	a := &apiFleet{exec: &fleettest.Executor{Failing: failing}, reg: prometheus.NewRegistry(), dataDir: t.TempDir()}
	cfg := fleet.InProcessConfig{
		DataDir: a.dataDir, Workers: 3, Slots: 2, Queue: queue.DefaultConfig(), Executor: a.exec,
		Worker:   worker.Config{RetryDelay: 50 * time.Millisecond, FetchWait: 100 * time.Millisecond, DrainGrace: time.Second},
		Log:      zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)),
		Registry: a.reg,
	}
	api := coordinator.APIConfig{Token: token, Gatherer: a.reg}
	if mutate != nil {
		mutate(&cfg, &api)
	}
	f, err := fleet.StartInProcess(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close(context.Background()) })
	// Cleanups run last-registered first: held jobs are released before the fleet drains.
	t.Cleanup(a.exec.ReleaseAll)
	a.fleet = f
	a.srv = httptest.NewServer(f.Coordinator.Handler(api))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *apiFleet) client() *coordinator.Client { return coordinator.NewClient(a.srv.URL, token, nil) }

// do sends one request with the test token (tok "" sends no Authorization header) and returns
// the response with its body read.
func (a *apiFleet) do(t *testing.T, method, path, tok string, body []byte) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, a.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// submit posts a bundle with the query and wants 201.
func (a *apiFleet) submit(t *testing.T, query string, bundle []byte) *pb.RunStatus {
	t.Helper()
	return a.submitAs(t, token, query, bundle)
}

// submitAs posts a bundle with the query as the holder of tok and wants 201.
func (a *apiFleet) submitAs(t *testing.T, tok, query string, bundle []byte) *pb.RunStatus {
	t.Helper()
	resp, body := a.do(t, http.MethodPost, "/v1/runs?"+query, tok, bundle)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /v1/runs?%s: %d %s", query, resp.StatusCode, body)
	}
	st := &pb.RunStatus{}
	if err := protojson.Unmarshal(body, st); err != nil {
		t.Fatalf("status body: %v\n%s", err, body)
	}
	if loc := resp.Header.Get("Location"); loc != "/v1/runs/"+st.GetId() || st.GetId() == "" {
		t.Fatalf("Location %q for run %q", loc, st.GetId())
	}
	return st
}

// wait follows the run's event stream (through the client) until the run is final.
func (a *apiFleet) wait(t *testing.T, id string) *pb.RunStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := a.client()
	for {
		if err := c.Events(ctx, id, func(*pb.Event) error { return nil }); err != nil {
			t.Fatalf("events of %s: %v", id, err)
		}
		st, err := c.Status(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if final(st.GetState()) {
			return st
		}
		// The stream ended early (dropped as a slow subscriber): follow it again.
	}
}

func final(s pb.RunState) bool {
	switch s {
	case pb.RunState_RUN_STATE_COMPLETED, pb.RunState_RUN_STATE_CANCELLED,
		pb.RunState_RUN_STATE_DEADLINE_EXCEEDED, pb.RunState_RUN_STATE_FAILED:
		return true
	}
	return false
}

// bundleOf writes the bundle `skillfleet submit` would upload for the suite under root.
func bundleOf(t testing.TB, root string) []byte {
	t.Helper()
	s := suite.Load([]string{root}, skill.Options{})
	var buf bytes.Buffer
	if _, err := suite.WriteBundle(&buf, s.Graph, s.Catalog.Skills()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// writeFiles writes name -> content under a new temporary directory and returns it.
func writeFiles(t testing.TB, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const okSkill = `---
name: s
description: A fixture skill for API tests. Use when testing the coordinator.
metadata:
  version: "1.0.0"
test:
  cases: cases.yaml
---

# Fixture

Do the thing.
`

// badCaseSuite is a valid skill whose prompt cases file has a misspelt assertion key on line 5.
func badCaseSuite(t *testing.T) string {
	return writeFiles(t, map[string]string{
		"s/SKILL.md": okSkill,
		"s/cases.yaml": `cases:
  - name: a
    input: hi
    assertions:
      output_contain: ["x"]
`,
	})
}

// tarOf is a tar with one entry of the given name and type.
func tarOf(t *testing.T, name string, typ byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{Name: name, Typeflag: typ, Mode: 0o644}
	content := "---\nname: evil\n---\n"
	if typ == tar.TypeReg {
		hdr.Size = int64(len(content))
	} else {
		hdr.Linkname = "/etc/passwd"
	}
	if err := tw.WriteHeader(hdr); err != nil {
		t.Fatal(err)
	}
	if typ == tar.TypeReg {
		if _, err := tw.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type apiErrorBody struct {
	Error       string           `json:"error"`
	Diagnostics diag.Diagnostics `json:"diagnostics"`
}

func decodeError(t *testing.T, body []byte) apiErrorBody {
	t.Helper()
	var e apiErrorBody
	if err := json.Unmarshal(body, &e); err != nil || e.Error == "" {
		t.Fatalf("error body is not {\"error\": ...}: %v\n%s", err, body)
	}
	return e
}

// TestAPIErrorDiagnosticsAreAListOrAbsent: an error body's diagnostics are a list when there
// are any and absent otherwise (apiError's omitempty), never null, which breaks clients that
// read the list.
func TestAPIErrorDiagnosticsAreAListOrAbsent(t *testing.T) {
	a := startAPI(t, nil)
	for _, tc := range []struct {
		name, query string
		body        []byte
		want        int
	}{
		{"suite with errors", "", bundleOf(t, badCaseSuite(t)), http.StatusUnprocessableEntity},
		{"no case matches", "skill=nothing-*", bundleOf(t, examples), http.StatusUnprocessableEntity},
		{"not a tar", "", []byte("this is not a tar archive"), http.StatusUnprocessableEntity},
		{"bad glob", "skill=%5B", bundleOf(t, examples), http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := a.do(t, http.MethodPost, "/v1/runs?"+tc.query, token, tc.body)
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(body, &raw); err != nil || resp.StatusCode != tc.want {
				t.Fatalf("%d, want %d: %v: %s", resp.StatusCode, tc.want, err, body)
			}
			if d, ok := raw["diagnostics"]; ok && !bytes.HasPrefix(d, []byte("[")) {
				t.Errorf("\"diagnostics\": %s; want a list or no key: %s", d, body)
			}
		})
	}
}

// TestAPIThrottlesGuesses: an address that presented wrong tokens too often is refused with
// 429 and Retry-After, the right token included, until its budget refills; other addresses
// are served meanwhile. A request without a token is no guess: it is answered 401, costs
// nothing, and is answered 401 (not 429) even from a refused address.
func TestAPIThrottlesGuesses(t *testing.T) {
	a := startAPI(t, nil)
	now := time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)
	guesses, err := authlimit.New(authlimit.Config{Burst: 2, Every: time.Minute}, func() time.Time { return now }, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := a.fleet.Coordinator.Handler(coordinator.APIConfig{Token: token, Guesses: guesses})
	const guesser, other = "192.0.2.50:40000", "192.0.2.51:40000"
	for _, tc := range []struct {
		name    string
		advance time.Duration
		auth    string
		from    string
		want    int
		retry   string
	}{
		{name: "no token", from: guesser, want: http.StatusUnauthorized},
		{name: "no token again", from: guesser, want: http.StatusUnauthorized},
		{name: "the scheme alone", auth: "Bearer ", from: guesser, want: http.StatusUnauthorized},
		{name: "another scheme", auth: "Basic Z3Vlc3M6Z3Vlc3M=", from: guesser, want: http.StatusUnauthorized},
		{name: "none of those cost anything", auth: "Bearer " + token, from: guesser, want: http.StatusOK},
		{name: "wrong token", auth: "Bearer guess", from: guesser, want: http.StatusUnauthorized},
		{name: "wrong token again", auth: "bearer guess-2", from: guesser, want: http.StatusUnauthorized},
		{name: "no token from a refused address", from: guesser, want: http.StatusUnauthorized},
		{name: "the right token, unread", auth: "Bearer " + token, from: guesser, want: http.StatusTooManyRequests, retry: "60"},
		{name: "another address", auth: "Bearer " + token, from: other, want: http.StatusOK},
		{name: "half refilled", advance: 30 * time.Second, auth: "Bearer " + token, from: guesser, want: http.StatusTooManyRequests, retry: "30"},
		{name: "refilled", advance: 30 * time.Second, auth: "Bearer " + token, from: guesser, want: http.StatusOK},
		{name: "a success costs nothing", auth: "Bearer " + token, from: guesser, want: http.StatusOK},
	} {
		now = now.Add(tc.advance)
		r := httptest.NewRequest("GET", "/v1/runs", nil)
		r.RemoteAddr = tc.from
		if tc.auth != "" {
			r.Header.Set("Authorization", tc.auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.want || w.Header().Get("Retry-After") != tc.retry {
			t.Fatalf("%s: %d, Retry-After %q; want %d, %q: %s", tc.name, w.Code, w.Header().Get("Retry-After"), tc.want, tc.retry, w.Body)
		}
		if tc.want == http.StatusTooManyRequests && !strings.Contains(decodeError(t, w.Body.Bytes()).Error, "too many wrong tokens") {
			t.Errorf("%s: the answer does not say why: %s", tc.name, w.Body)
		}
	}
}

func TestAPIAuth(t *testing.T) {
	a := startAPI(t, nil)
	tests := []struct {
		method, path string
		header       string // the Authorization header; "" sends none
		want         int
	}{
		{"GET", "/v1/runs", "", http.StatusUnauthorized},
		{"GET", "/v1/runs", "Bearer wrong", http.StatusUnauthorized},
		{"GET", "/v1/runs", token, http.StatusUnauthorized}, // the token without the scheme
		{"GET", "/v1/runs", "Basic " + token, http.StatusUnauthorized},
		{"GET", "/v1/runs", "Bearer " + token + "x", http.StatusUnauthorized},
		{"POST", "/v1/runs", "", http.StatusUnauthorized},
		{"GET", "/v1/runs/rnope", "", http.StatusUnauthorized},
		{"DELETE", "/v1/runs/rnope", "Bearer wrong", http.StatusUnauthorized},
		{"GET", "/v1/runs/rnope/events", "", http.StatusUnauthorized},
		{"GET", "/v1/runs/rnope/report", "", http.StatusUnauthorized},
		{"GET", "/v1/runs", "Bearer " + token, http.StatusOK},
		{"GET", "/v1/runs/rnope", "Bearer " + token, http.StatusNotFound},
		{"GET", "/healthz", "", http.StatusOK},
		{"GET", "/readyz", "", http.StatusOK},
		{"GET", "/metrics", "", http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path+" "+tc.header, func(t *testing.T) {
			var body io.Reader
			if tc.method == "POST" {
				body = bytes.NewReader(bundleOf(t, examples))
			}
			req, err := http.NewRequest(tc.method, a.srv.URL+tc.path, body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("%d, want %d: %s", resp.StatusCode, tc.want, b)
			}
			if tc.want == http.StatusUnauthorized {
				if e := decodeError(t, b); !strings.Contains(e.Error, "bearer token") {
					t.Errorf("401 message %q does not say what is wrong", e.Error)
				}
				if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("WWW-Authenticate %q", resp.Header.Get("WWW-Authenticate"))
				}
			}
		})
	}
	// The refused POST stored and started nothing.
	runs, err := a.client().List(context.Background())
	if err != nil || len(runs) != 0 {
		t.Fatalf("after refused requests: %d runs, %v", len(runs), err)
	}
}

// TestAPIWithoutTokenAndReady: without a token the API is open; /readyz reports Ready's error
// as 503; without a Gatherer there is no /metrics.
func TestAPIWithoutTokenAndReady(t *testing.T) {
	a := startAPI(t, nil)
	notReady := errors.New("not connected to NATS: RECONNECTING")
	h := a.fleet.Coordinator.Handler(coordinator.APIConfig{Ready: func(context.Context) error { return notReady }})
	for _, tc := range []struct {
		path string
		want int
		body string
	}{
		{"/v1/runs", http.StatusOK, `{"runs":[]}`},
		{"/readyz", http.StatusServiceUnavailable, notReady.Error()},
		{"/healthz", http.StatusOK, "ok"},
		{"/metrics", http.StatusNotFound, ""},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, tc.path, nil)
		req.Host = "127.0.0.1:8080" // a token-less API serves loopback hosts only
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want || !strings.Contains(rec.Body.String(), tc.body) {
			t.Errorf("GET %s: %d %q, want %d containing %q", tc.path, rec.Code, rec.Body.String(), tc.want, tc.body)
		}
	}
	rec := httptest.NewRecorder()
	a.fleet.Coordinator.Handler(coordinator.APIConfig{Ready: func(context.Context) error { return nil }}).
		ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("ready: %d", rec.Code)
	}
}

func TestAPISubmitRefusals(t *testing.T) {
	a := startAPI(t, nil)
	good := bundleOf(t, examples)
	for _, tc := range []struct {
		query string
		msg   string
	}{
		{"priority=urgent", "priority must be on-demand or scheduled"},
		{"deadline=soon", "deadline must be a positive duration"},
		{"deadline=0s", "deadline must be a positive duration"},
		{"deadline=-1h", "deadline must be a positive duration"},
		{"skill=%5B", "bad pattern"},
		{"case=env-%5B", "bad pattern"},
		{"skill=ok&case=%5B", "bad pattern"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			resp, body := a.do(t, http.MethodPost, "/v1/runs?"+tc.query, token, good)
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("%d, want 400: %s", resp.StatusCode, body)
			}
			if e := decodeError(t, body); !strings.Contains(e.Error, tc.msg) {
				t.Errorf("message %q, want %q", e.Error, tc.msg)
			}
		})
	}

	// Suites the coordinator cannot plan: 422 with the diagnostics, naming file, line and rule
	// relative to the bundle (not the coordinator's cache).
	badSkill := writeFiles(t, map[string]string{
		"s/SKILL.md":   strings.Replace(okSkill, "description: A fixture skill for API tests. Use when testing the coordinator.\n", "", 1),
		"s/cases.yaml": "cases:\n  - name: a\n    input: hi\n    assertions:\n      output_contains: [x]\n",
	})
	for _, tc := range []struct {
		name       string
		bundle     []byte
		query      string
		file, rule string
		line       int
		msg        string
	}{
		{name: "case error", bundle: bundleOf(t, badCaseSuite(t)), file: "s/cases.yaml", line: 5, rule: "assertion.unknownKey", msg: "suite has 1 error(s)"},
		{name: "skill error", bundle: bundleOf(t, badSkill), file: "s/SKILL.md", line: 1, rule: "description.required", msg: "s/SKILL.md:1: error description.required"},
		{name: "no case matches", bundle: good, query: "skill=nothing-*", msg: "no test cases matched"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := a.do(t, http.MethodPost, "/v1/runs?"+tc.query, token, tc.bundle)
			if resp.StatusCode != http.StatusUnprocessableEntity {
				t.Fatalf("%d, want 422: %s", resp.StatusCode, body)
			}
			e := decodeError(t, body)
			if !strings.Contains(e.Error, tc.msg) {
				t.Errorf("message %q, want it to contain %q", e.Error, tc.msg)
			}
			if tc.rule == "" {
				return
			}
			found := false
			for _, d := range e.Diagnostics {
				if d.File == tc.file && d.Line == tc.line && d.Rule == tc.rule && d.Severity == diag.SeverityError && d.Message != "" {
					found = true
				}
				if filepath.IsAbs(d.File) || strings.Contains(d.File, "bundles") {
					t.Errorf("diagnostic names a coordinator path: %s", d)
				}
			}
			if !found {
				t.Errorf("no %s:%d %s error in %s", tc.file, tc.line, tc.rule, body)
			}
		})
	}

	// A body that is not a bundle is refused as unplannable (422, not 400: the request is well
	// formed, its content is not), saying why and without naming the coordinator's files.
	var emptyTar bytes.Buffer
	if _, err := suite.WriteBundle(&emptyTar, nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		body []byte
		msg  []string // any of them
	}{
		{"short text", []byte("this is not a tar archive"), []string{"read bundle: unexpected EOF"}},
		{"garbage block", bytes.Repeat([]byte("not a tar header "), 64), []string{"read bundle: archive/tar: invalid tar header"}},
		{"escaping entry", tarOf(t, "../evil/SKILL.md", tar.TypeReg), []string{"unsafe bundle entry", "../evil/SKILL.md"}},
		{"absolute entry", tarOf(t, "/etc/evil", tar.TypeReg), []string{"unsafe bundle entry"}},
		{"symlink entry", tarOf(t, "s/link", tar.TypeSymlink), []string{"unsafe bundle entry"}},
		// A bundle of no skills (what WriteBundle writes for an empty selection) and an empty
		// body hold no cases to run.
		{"empty tar", emptyTar.Bytes(), []string{"no test cases", "no skills", "empty"}},
		{"empty body", []byte{}, []string{"no test cases", "no skills", "empty"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := a.do(t, http.MethodPost, "/v1/runs", token, tc.body)
			if resp.StatusCode != http.StatusUnprocessableEntity {
				t.Fatalf("%d, want 422: %s", resp.StatusCode, body)
			}
			e := decodeError(t, body)
			// An empty bundle is refused by validation (discovery.empty), before planning.
			if !strings.HasPrefix(e.Error, "suite cannot be planned: ") && !strings.HasPrefix(e.Error, "suite has 1 error(s)") {
				t.Errorf("message %q does not say the suite cannot be planned or is invalid", e.Error)
			}
			if !slices.ContainsFunc(tc.msg, func(m string) bool { return strings.Contains(e.Error, m) }) {
				t.Errorf("message %q does not say what is wrong (want one of %q)", e.Error, tc.msg)
			}
			if strings.Contains(e.Error, a.dataDir) {
				t.Errorf("message %q exposes the coordinator's data directory", e.Error)
			}
		})
	}

	runs, err := a.client().List(context.Background())
	if err != nil || len(runs) != 0 {
		t.Fatalf("refused submissions left %d runs (%v)", len(runs), err)
	}
}

// TestAPIRunLifecycle submits the example suite (one case fails), follows it to the end and
// reads everything the API has about it.
func TestAPIRunLifecycle(t *testing.T) {
	a := startAPI(t, nil)
	st := a.submit(t, "name=nightly&priority=scheduled&deadline=1h", bundleOf(t, examples))
	if st.GetState() != pb.RunState_RUN_STATE_RUNNING || st.GetTotalJobs() != exampleJobs {
		t.Fatalf("submitted: state %v, %d jobs", st.GetState(), st.GetTotalJobs())
	}
	spec := st.GetSpec()
	if spec.GetName() != "nightly" || spec.GetPriority() != pb.Priority_PRIORITY_SCHEDULED || spec.GetDeadlineMs() != time.Hour.Milliseconds() || !strings.HasPrefix(spec.GetBundleDigest(), "sha256:") {
		t.Fatalf("spec %v", spec)
	}
	id := st.GetId()
	fin := a.wait(t, id)
	// default_is_dev (runs: 5, confidence: 0.8) passes its first four epochs: its fifth is
	// never run.
	if fin.GetState() != pb.RunState_RUN_STATE_COMPLETED || fin.GetDoneJobs() != exampleJobs-1 || fin.GetTotalJobs() != exampleJobs-1 || fin.GetWithdrawnJobs() != 1 {
		t.Fatalf("final: %v, %d of %d jobs done, %d withdrawn (%s)", fin.GetState(), fin.GetDoneJobs(), fin.GetTotalJobs(), fin.GetWithdrawnJobs(), fin.GetReason())
	}

	// Status, by the Location the submission gave.
	resp, body := a.do(t, http.MethodGet, "/v1/runs/"+id, token, nil)
	got := &pb.RunStatus{}
	if resp.StatusCode != http.StatusOK || protojson.Unmarshal(body, got) != nil {
		t.Fatalf("status: %d %s", resp.StatusCode, body)
	}
	if c := got.GetCases(); got.GetId() != id || c.GetTotal() != exampleCases || c.GetFailed() != 1 || c.GetPassed() != exampleCases-1 {
		t.Fatalf("status %v", got)
	}
	if !strings.Contains(string(body), `"state":"RUN_STATE_COMPLETED"`) || !strings.Contains(string(body), `"total_jobs":20`) {
		t.Errorf("status JSON does not use proto field names: %s", body)
	}

	// List: newest first.
	second := a.submit(t, "skill=logging-standards", bundleOf(t, examples))
	a.wait(t, second.GetId())
	resp, body = a.do(t, http.MethodGet, "/v1/runs", token, nil)
	var list struct {
		Runs []json.RawMessage `json:"runs"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &list) != nil || len(list.Runs) != 2 {
		t.Fatalf("list: %d %s", resp.StatusCode, body)
	}
	var ids []string
	for _, raw := range list.Runs {
		st := &pb.RunStatus{}
		if err := protojson.Unmarshal(raw, st); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, st.GetId())
	}
	if len(ids) != 2 || ids[0] != second.GetId() || ids[1] != id {
		t.Errorf("list order %v: the first run should be last (newest first)", ids)
	}

	// Reports in every format.
	resp, body = a.do(t, http.MethodGet, "/v1/runs/"+id+"/report", token, nil)
	var rep struct {
		Run     string `json:"run"`
		Summary struct {
			Total, Passed, Failed, Errored, Skipped int
		} `json:"summary"`
		Cases []struct {
			Skill, Case, Status string
		} `json:"cases"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &rep) != nil {
		t.Fatalf("json report: %d %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("json report Content-Type %q", ct)
	}
	if rep.Run != id || rep.Summary.Total != exampleCases || rep.Summary.Failed != 1 || rep.Summary.Passed != exampleCases-1 || len(rep.Cases) != exampleCases {
		t.Fatalf("json report: %+v", rep)
	}
	for _, c := range rep.Cases {
		if (c.Case == failing) != (c.Status == "failed") {
			t.Errorf("case %s/%s is %s", c.Skill, c.Case, c.Status)
		}
	}
	resp, body = a.do(t, http.MethodGet, "/v1/runs/"+id+"/report?format=junit", token, nil)
	var junit struct {
		XMLName  xml.Name `xml:"testsuites"`
		Tests    int      `xml:"tests,attr"`
		Failures int      `xml:"failures,attr"`
		Errors   int      `xml:"errors,attr"`
		Skipped  int      `xml:"skipped,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/xml") {
		t.Fatalf("junit: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if err := xml.Unmarshal(body, &junit); err != nil {
		t.Fatalf("junit does not parse: %v\n%s", err, body)
	}
	if junit.Tests != exampleCases || junit.Failures != 1 || junit.Errors != 0 || junit.Skipped != 0 || len(junit.Suites) != exampleSkills {
		t.Fatalf("junit counts: tests %d failures %d errors %d skipped %d, %d suites", junit.Tests, junit.Failures, junit.Errors, junit.Skipped, len(junit.Suites))
	}
	failures := 0
	for _, s := range junit.Suites {
		for _, c := range s.Cases {
			if c.Failure != nil {
				failures++
				if s.Name != "deploy-checklist" || c.Name != failing {
					t.Errorf("failure on %s/%s", s.Name, c.Name)
				}
			}
		}
	}
	if failures != 1 {
		t.Errorf("%d <failure> elements", failures)
	}
	resp, body = a.do(t, http.MethodGet, "/v1/runs/"+id+"/report?format=text", token, nil)
	text := string(body)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("text: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if !strings.Contains(text, "17 cases: 16 passed, 1 failed, 0 errored") || !strings.Contains(text, "deploy-checklist/"+failing) || !strings.Contains(text, id) {
		t.Errorf("text report:\n%s", text)
	}
	resp, body = a.do(t, http.MethodGet, "/v1/runs/"+id+"/report?format=pdf", token, nil)
	if e := decodeError(t, body); resp.StatusCode != http.StatusBadRequest || !strings.Contains(e.Error, "format must be json, junit or text") {
		t.Errorf("bad format: %d %s", resp.StatusCode, body)
	}

	// A finished run's event stream is its final status, then the end.
	evs := readSSE(t, a.srv.URL+"/v1/runs/"+id+"/events", nil)
	if len(evs) != 1 || evs[0].kind != "status" || evs[0].status(t).GetState() != pb.RunState_RUN_STATE_COMPLETED {
		t.Errorf("events of a finished run: %+v", evs)
	}

	// Cancelling a finished run changes nothing.
	resp, body = a.do(t, http.MethodDelete, "/v1/runs/"+id, token, nil)
	got = &pb.RunStatus{}
	if resp.StatusCode != http.StatusOK || protojson.Unmarshal(body, got) != nil || got.GetState() != pb.RunState_RUN_STATE_COMPLETED {
		t.Errorf("cancel of a finished run: %d %s", resp.StatusCode, body)
	}

	// Unknown runs, including ids that could never be run ids, are 404 everywhere.
	for _, unknown := range []string{"rnope", "bad.id", "%2A", "r%3Ex"} {
		for _, req := range []struct{ method, path string }{
			{"GET", "/v1/runs/" + unknown},
			{"DELETE", "/v1/runs/" + unknown},
			{"GET", "/v1/runs/" + unknown + "/report"},
			{"GET", "/v1/runs/" + unknown + "/events"},
		} {
			resp, body := a.do(t, req.method, req.path, token, nil)
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("%s %s: %d, want 404: %s", req.method, req.path, resp.StatusCode, body)
				continue
			}
			if e := decodeError(t, body); !strings.Contains(e.Error, "not found") {
				t.Errorf("%s %s: message %q", req.method, req.path, e.Error)
			}
		}
	}

	// The finished runs are in the metrics.
	resp, body = a.do(t, http.MethodGet, "/metrics", "", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `skillfleet_coordinator_runs_total{state="completed"} 2`) {
		t.Errorf("metrics: %d\n%s", resp.StatusCode, grepLines(string(body), "skillfleet_coordinator_"))
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// sseEvent is one server-sent event.
type sseEvent struct {
	id, kind, data string
}

func (e sseEvent) status(t *testing.T) *pb.RunStatus {
	t.Helper()
	st := &pb.RunStatus{}
	if err := protojson.Unmarshal([]byte(e.data), st); err != nil {
		t.Fatalf("status event data: %v: %s", err, e.data)
	}
	return st
}

// readSSE reads an event stream to its end; onEvent, if set, sees each event as it arrives.
func readSSE(t *testing.T, url string, onEvent func(sseEvent)) []sseEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("events: %d %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.kind != "" || cur.data != "" {
				out = append(out, cur)
				if onEvent != nil {
					onEvent(cur)
				}
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, ":"): // a comment (keep-alive)
		case strings.HasPrefix(line, "id: "):
			cur.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			cur.kind = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data += strings.TrimPrefix(line, "data: ")
		default:
			t.Errorf("unexpected line in event stream: %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("event stream: %v", err)
	}
	return out
}

// TestAPIEvents follows a live run: its two jobs are held until the stream is open, so the
// stream must carry both results and then the final status.
func TestAPIEvents(t *testing.T) {
	a := startAPI(t, nil)
	st := a.submit(t, "agent=sse&case=select_dev&case=parse_config_and_select", bundleOf(t, examples))
	if st.GetTotalJobs() != 2 {
		t.Fatalf("%d jobs, want 2", st.GetTotalJobs())
	}
	evs := readSSE(t, a.srv.URL+"/v1/runs/"+st.GetId()+"/events", func(sseEvent) { a.exec.Release("sse") })
	var kinds []string
	results := 0
	for _, ev := range evs {
		kinds = append(kinds, ev.kind)
		if ev.kind == "result" {
			results++
			r := &pb.Result{}
			if err := protojson.Unmarshal([]byte(ev.data), r); err != nil {
				t.Fatalf("result event data: %v: %s", err, ev.data)
			}
			if r.GetRunId() != st.GetId() || r.GetSkill() != "env-selector" || r.GetVerdict() != pb.Verdict_VERDICT_PASSED || r.GetKind() != pb.CaseKind_CASE_KIND_PROMPT || r.GetAgent() != "sse" {
				t.Errorf("result event %v", r)
			}
		}
		if ev.id == "" {
			t.Errorf("event without an id: %+v", ev)
		}
	}
	if results != 2 {
		t.Errorf("%d result events, want 2 (events: %v)", results, kinds)
	}
	if len(evs) == 0 || evs[len(evs)-1].kind != "status" {
		t.Fatalf("the stream does not end with a status event: %v", kinds)
	}
	last := evs[len(evs)-1].status(t)
	if last.GetState() != pb.RunState_RUN_STATE_COMPLETED || last.GetDoneJobs() != 2 || last.GetCases().GetPassed() != 2 {
		t.Errorf("final status event %v", last)
	}
}

// TestAPIEventStreamOpensAtOnce: a client learns the stream is open (it gets the response
// headers) before the run has anything to say. Here no job finishes and progress is saved
// hourly, so no event comes for a long time; the headers must still arrive.
func TestAPIEventStreamOpensAtOnce(t *testing.T) {
	a := startAPI(t, func(c *fleet.InProcessConfig, api *coordinator.APIConfig) {
		c.Coordinator.StatusEvery = time.Hour
		api.SSEKeepAlive = time.Hour
	})
	st := a.submit(t, "agent=held&case=select_dev", bundleOf(t, examples))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.srv.URL+"/v1/runs/"+st.GetId()+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	// The timeout detects a stream that sends nothing; it measures nothing.
	hc := &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 5 * time.Second}}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("no response headers while the run is quiet (the handler does not flush them): %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d", resp.StatusCode)
	}
}

func TestAPICancel(t *testing.T) {
	a := startAPI(t, nil)
	// Two prompt jobs, held until after the run is cancelled.
	st := a.submit(t, "agent=hold&case=select_dev&case=reject_prod_without_confirmation", bundleOf(t, examples))
	id := st.GetId()
	for i, want := range []pb.RunState{pb.RunState_RUN_STATE_CANCELLED, pb.RunState_RUN_STATE_CANCELLED} {
		resp, body := a.do(t, http.MethodDelete, "/v1/runs/"+id, token, nil)
		got := &pb.RunStatus{}
		if resp.StatusCode != http.StatusOK || protojson.Unmarshal(body, got) != nil {
			t.Fatalf("cancel #%d: %d %s", i+1, resp.StatusCode, body)
		}
		if got.GetState() != want || got.GetReason() != "cancelled on request" || got.GetCases().GetSkipped() != 2 {
			t.Fatalf("cancel #%d: %v", i+1, got)
		}
	}
	a.exec.Release("hold")
	resp, body := a.do(t, http.MethodGet, "/v1/runs/"+id+"/report", token, nil)
	var rep struct {
		Summary struct{ Total, Passed, Skipped int } `json:"summary"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &rep) != nil {
		t.Fatalf("report: %d %s", resp.StatusCode, body)
	}
	if rep.Summary.Total != 2 || rep.Summary.Skipped != 2 || rep.Summary.Passed != 0 {
		t.Errorf("cancelled run's report %+v: nothing may pass that did not run", rep.Summary)
	}
	if st, err := a.client().Status(context.Background(), id); err != nil || st.GetState() != pb.RunState_RUN_STATE_CANCELLED {
		t.Errorf("status after cancel: %v %v", st.GetState(), err)
	}
	resp, body = a.do(t, http.MethodGet, "/metrics", "", nil)
	if !strings.Contains(string(body), `skillfleet_coordinator_runs_total{state="cancelled"} 1`) {
		t.Errorf("metrics: %d\n%s", resp.StatusCode, grepLines(string(body), "runs_total"))
	}
}

// TestClientRoundTrip drives the whole API through Client.
func TestClientRoundTrip(t *testing.T) {
	a := startAPI(t, nil)
	ctx := context.Background()
	c := a.client()
	st, err := c.Submit(ctx, bytes.NewReader(bundleOf(t, examples)), coordinator.SubmitOptions{
		Name: "ci", Skills: []string{"env-*"}, Cases: []string{"select_dev", "default_is_dev", "selects-dev"}, Kinds: []string{"prompt"}, Agents: []string{"client"},
		Scheduled: true, Deadline: 90 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	spec := st.GetSpec()
	if st.GetId() == "" || st.GetTotalJobs() != 6 || spec.GetName() != "ci" || spec.GetPriority() != pb.Priority_PRIORITY_SCHEDULED ||
		spec.GetDeadlineMs() != (90*time.Minute).Milliseconds() || strings.Join(spec.GetSkillGlobs(), ",") != "env-*" ||
		strings.Join(spec.GetCaseGlobs(), ",") != "select_dev,default_is_dev,selects-dev" || strings.Join(spec.GetCaseKinds(), ",") != "prompt" ||
		strings.Join(spec.GetAgents(), ",") != "client" {
		t.Fatalf("submitted %v", st)
	}
	id := st.GetId()

	// Events: the jobs are held until the first event, so every result comes through the stream.
	var statuses, results int
	var last *pb.RunStatus
	err = c.Events(ctx, id, func(ev *pb.Event) error {
		a.exec.Release("client")
		if ev.GetRunId() != id {
			t.Errorf("event of run %q", ev.GetRunId())
		}
		switch p := ev.GetPayload().(type) {
		case *pb.Event_Status:
			statuses++
			last = p.Status
		case *pb.Event_Result:
			results++
			if p.Result.GetVerdict() != pb.Verdict_VERDICT_PASSED {
				t.Errorf("result %v", p.Result)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// default_is_dev's fifth epoch is not run: its first four passed.
	if results != 5 || last.GetState() != pb.RunState_RUN_STATE_COMPLETED || last.GetDoneJobs() != 5 || last.GetWithdrawnJobs() != 1 {
		t.Fatalf("events: %d results, %d statuses, last %v", results, statuses, last)
	}

	// An error from fn stops the stream and is returned.
	stop := errors.New("enough")
	if err := c.Events(ctx, id, func(*pb.Event) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("Events returned %v, want fn's error", err)
	}

	got, err := c.Status(ctx, id)
	if err != nil || got.GetState() != pb.RunState_RUN_STATE_COMPLETED || got.GetCases().GetPassed() != 2 || got.GetCases().GetTotal() != 2 {
		t.Fatalf("status %v: %v", got, err)
	}
	runs, err := c.List(ctx)
	if err != nil || len(runs) != 1 || runs[0].GetId() != id || runs[0].GetState() != pb.RunState_RUN_STATE_COMPLETED {
		t.Fatalf("list %v: %v", runs, err)
	}
	for _, format := range []string{"json", "junit", "text"} {
		var buf bytes.Buffer
		if err := c.Report(ctx, id, format, &buf); err != nil {
			t.Fatalf("report %s: %v", format, err)
		}
		want := map[string]string{"json": `"passed": 2`, "junit": `<testsuites name="skillfleet run ` + id + `" tests="2" failures="0"`, "text": "2 cases: 2 passed"}[format]
		if !strings.Contains(buf.String(), want) {
			t.Errorf("%s report does not contain %q:\n%s", format, want, buf.String())
		}
	}
	// Cancelling a finished run returns it unchanged.
	if got, err := c.Cancel(ctx, id); err != nil || got.GetState() != pb.RunState_RUN_STATE_COMPLETED {
		t.Errorf("cancel of a finished run: %v %v", got.GetState(), err)
	}

	// A live run cancelled through the client.
	held, err := c.Submit(ctx, bytes.NewReader(bundleOf(t, examples)), coordinator.SubmitOptions{Cases: []string{"select_dev"}, Agents: []string{"never"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Cancel(ctx, held.GetId()); err != nil || got.GetState() != pb.RunState_RUN_STATE_CANCELLED {
		t.Errorf("cancel: %v %v", got.GetState(), err)
	}

	// Errors are *APIError with the status, the message and, for refused suites, diagnostics.
	apiErr := func(t *testing.T, err error, status int, msg string) *coordinator.APIError {
		t.Helper()
		var ae *coordinator.APIError
		if !errors.As(err, &ae) {
			t.Fatalf("error %v (%T) is not an *APIError", err, err)
		}
		if ae.Status != status || !strings.Contains(ae.Message, msg) || !strings.Contains(ae.Error(), ae.Message) {
			t.Fatalf("APIError %d %q, want %d containing %q", ae.Status, ae.Message, status, msg)
		}
		return ae
	}
	_, err = c.Submit(ctx, bytes.NewReader(bundleOf(t, badCaseSuite(t))), coordinator.SubmitOptions{})
	ae := apiErr(t, err, http.StatusUnprocessableEntity, "suite has 1 error(s)")
	if len(ae.Diagnostics) != 1 || ae.Diagnostics[0].String() != `s/cases.yaml:5: error assertion.unknownKey: assertions has unknown key "output_contain" (did you mean "output_contains"?)` {
		t.Errorf("diagnostics %v", ae.Diagnostics)
	}
	_, err = c.Submit(ctx, bytes.NewReader(bundleOf(t, examples)), coordinator.SubmitOptions{Skills: []string{"["}})
	apiErr(t, err, http.StatusBadRequest, "bad pattern")
	_, err = c.Status(ctx, "rnope")
	apiErr(t, err, http.StatusNotFound, "run not found")
	_, err = c.Cancel(ctx, "rnope")
	apiErr(t, err, http.StatusNotFound, "run not found")
	err = c.Events(ctx, "rnope", func(*pb.Event) error { return nil })
	apiErr(t, err, http.StatusNotFound, "run not found")
	err = c.Report(ctx, "rnope", "json", io.Discard)
	apiErr(t, err, http.StatusNotFound, "run not found")
	err = c.Report(ctx, id, "yaml", io.Discard)
	apiErr(t, err, http.StatusBadRequest, "format must be")
	_, err = coordinator.NewClient(a.srv.URL, "wrong", nil).List(ctx)
	apiErr(t, err, http.StatusUnauthorized, "bearer token")
	_, err = coordinator.NewClient(a.srv.URL+"/", "", nil).Status(ctx, id)
	apiErr(t, err, http.StatusUnauthorized, "bearer token")

	// A trailing slash on the base URL is fine; a path-like id is escaped, not routed.
	if _, err := coordinator.NewClient(a.srv.URL+"/", token, nil).Status(ctx, id); err != nil {
		t.Errorf("base with trailing slash: %v", err)
	}
	_, err = c.Status(ctx, id+"/report")
	apiErr(t, err, http.StatusNotFound, "not found")
}
