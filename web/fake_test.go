package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/skillfleet/skillfleet/atif"
	"github.com/skillfleet/skillfleet/history"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
)

// fakeSource is a coordinator in memory: runs with their status, report and results.
type fakeSource struct {
	mu        sync.Mutex
	runs      map[string]*fakeRun
	order     []string // newest first
	cancelled []string
	resolved  int
}

type fakeRun struct {
	st      *pb.RunStatus
	rep     report.Report
	results []*pb.Result
}

func newFake() *fakeSource { return &fakeSource{runs: map[string]*fakeRun{}} }

// add puts a run first in the list.
func (f *fakeSource) add(st *pb.RunStatus, rep report.Report, results []*pb.Result) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs[st.GetId()] = &fakeRun{st: st, rep: rep, results: results}
	f.order = append([]string{st.GetId()}, f.order...)
}

func (f *fakeSource) get(id string) (*fakeRun, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.runs[id]
	if r == nil {
		return nil, fmt.Errorf("%w: run %s", ErrNotFound, id)
	}
	return r, nil
}

func (f *fakeSource) List(context.Context) ([]*pb.RunStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*pb.RunStatus
	for _, id := range f.order {
		out = append(out, proto.Clone(f.runs[id].st).(*pb.RunStatus))
	}
	return out, nil
}

func (f *fakeSource) Status(_ context.Context, id string) (*pb.RunStatus, error) {
	r, err := f.get(id)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return proto.Clone(r.st).(*pb.RunStatus), nil
}

func (f *fakeSource) Report(_ context.Context, id string) (report.Report, error) {
	r, err := f.get(id)
	if err != nil {
		return report.Report{}, err
	}
	return r.rep, nil
}

func (f *fakeSource) CaseResults(ctx context.Context, id, skill, caseName string, fn func(*pb.Result) error) error {
	return f.AcceptedResults(ctx, id, func(res *pb.Result) error {
		if res.GetSkill() != skill || res.GetCaseName() != caseName {
			return nil
		}
		return fn(res)
	})
}

func (f *fakeSource) AcceptedResults(_ context.Context, id string, fn func(*pb.Result) error) error {
	r, err := f.get(id)
	if err != nil {
		return err
	}
	for _, res := range r.results {
		if err := fn(proto.Clone(res).(*pb.Result)); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeSource) ResolveDocuments(context.Context, *pb.Result) {
	f.mu.Lock()
	f.resolved++
	f.mu.Unlock()
}

func (f *fakeSource) Cancel(_ context.Context, id string) (*pb.RunStatus, error) {
	r, err := f.get(id)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancelled = append(f.cancelled, id)
	r.st.State = pb.RunState_RUN_STATE_CANCELLED
	return proto.Clone(r.st).(*pb.RunStatus), nil
}

func (f *fakeSource) cancels() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.cancelled...)
}

// fakeHistory answers a skill's runs.
type fakeHistory struct{ runs []history.SkillRun }

func (h fakeHistory) SkillRuns(_ context.Context, _, suite, lane, skill string, n int) ([]history.SkillRun, error) {
	return h.runs[:min(n, len(h.runs))], nil
}

// fakeFlaky answers a suite's flaky cells.
type fakeFlaky struct{ cells []report.FlakyCell }

func (f fakeFlaky) FlakyCells(context.Context, string, string, string) ([]report.FlakyCell, error) {
	return f.cells, nil
}

// The hostile strings a suite may carry, in names, outputs, transcripts and files.
const (
	xssScript = `<script>alert(1)</script>`
	xssImg    = `"><img src=x onerror=alert(2)>`
	xssURL    = `javascript:alert(3)`
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// statusOf makes a run's status.
func statusOf(id, suite string, state pb.RunState, cases *pb.Counts, created time.Time) *pb.RunStatus {
	st := &pb.RunStatus{Id: id, State: state, Spec: &pb.RunSpec{Id: id, Name: suite, Priority: pb.Priority_PRIORITY_SCHEDULED, CreatedAt: timestamppb.New(created)},
		Cases: cases, TotalJobs: cases.GetTotal(), DoneJobs: cases.GetTotal()}
	if state != pb.RunState_RUN_STATE_RUNNING && state != pb.RunState_RUN_STATE_PENDING {
		st.FinishedAt = timestamppb.New(created.Add(2 * time.Minute))
	}
	return st
}

// trajectoryJSON is a trajectory whose messages, arguments and tool output carry payloads.
func trajectoryJSON(t testing.TB) []byte {
	t.Helper()
	tr := atif.Trajectory{SchemaVersion: atif.SchemaVersion, SessionID: "job-1", Agent: atif.Agent{Name: "skillfleet-builtin", Version: "1", ModelName: "m1"}}
	tr.Add(atif.SourceSystem, "You are an agent. Skills: deploy-checklist.")
	tr.Add(atif.SourceUser, "Deploy it "+xssScript)
	s := tr.Add(atif.SourceAgent, "")
	s.ModelName = "m1"
	s.ToolCalls = []atif.ToolCall{{ToolCallID: "c1", FunctionName: "bash", Arguments: atif.Arguments(`{"command":"cat SKILL.md ` + strings.ReplaceAll(xssImg, `"`, `\"`) + `"}`)}}
	s.Observation = &atif.Observation{Results: []atif.Result{{SourceCallID: "c1", Content: "exit_code: 0\nstdout:\n# Deploy checklist " + xssScript + "\n"}}}
	s.Metrics = &atif.Metrics{PromptTokens: 120, CompletionTokens: 18}
	s = tr.Add(atif.SourceAgent, "Done. See "+xssURL)
	s.ModelName = "m1"
	s.Metrics = &atif.Metrics{PromptTokens: 150, CompletionTokens: 5}
	tr.Finish()
	b, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hostileRun is a finished run of four cases: a passing one, a failing prompt case whose
// names, output, files and transcript carry script payloads, an errored command case, and a
// flaky, quarantined one; with "what changed" against a previous run.
func hostileRun(t testing.TB, id string) (*pb.RunStatus, report.Report, []*pb.Result) {
	t.Helper()
	prev := "r-prev"
	badSkill, badCase := "deploy-checklist", "case "+xssScript+xssImg
	rep := report.Report{
		Run:     id,
		Summary: report.Summary{Total: 4, Passed: 1, Failed: 2, Errored: 1, Quarantined: 1},
		Usage:   &report.Usage{PromptTokens: 270, CompletionTokens: 23, Cost: 0.0125},
		Changes: &report.Changes{Previous: &prev,
			NewlyFailing: []report.ChangedCase{{Skill: badSkill, Case: badCase + " [builtin]", Previous: "passing", Current: "failing"}},
			Flaky:        []report.FlakyCell{{Skill: "logging", Case: "flaps", Agent: "builtin", Evidence: "3 flips in 8 runs", Quarantined: "flaky"}},
			Stats:        &report.ChangeStats{Cases: 3, PassRatePrevious: 1, PassRateCurrent: 0.5, Delta: -0.5, Interval: [2]float64{-0.9, -0.1}, P: 0.04, Significant: true}},
		Cases: []report.Case{
			{Skill: badSkill, Case: badCase, Agent: "builtin", Kind: "prompt", Status: report.StatusFailed, Epochs: 2, PassedEpochs: 0, FailedEpochs: 2,
				RequiredPasses: 2, Confidence: 1, DurationMS: 4200, File: "deploy-checklist/tests/cases.yaml", Line: 7,
				Reason:     "output_contains failed: " + xssScript,
				Assertions: []report.Assertion{{Type: "output_contains", Expected: "done " + xssImg, Actual: xssScript, Message: "not found"}}},
			{Skill: badSkill, Case: "usage-error", Kind: "command", Status: report.StatusErrored, Epochs: 1, ErroredEpochs: 1, RequiredPasses: 1, Confidence: 1,
				DurationMS: 300, Reason: "sandbox failed to start"},
			{Skill: "logging", Case: "flaps", Agent: "builtin", Kind: "prompt", Status: report.StatusFailed, Epochs: 1, FailedEpochs: 1, RequiredPasses: 1,
				Confidence: 1, DurationMS: 900, Reason: "assertion failed", Quarantined: "flaky",
				Flaky: &report.CaseFlaky{Runs: 8, Decided: 8, Flips: 3, FlipRate: 0.43, PassRate: 0.5, Evidence: "3 flips in 8 runs"}},
			{Skill: "logging", Case: "logline-shape", Kind: "command", Status: report.StatusPassed, Epochs: 5, PassedEpochs: 4, RequiredPasses: 4, Confidence: 0.8, DurationMS: 150,
				EpochsRun: 4, EpochsPlanned: 5},
			{Skill: "logging", Case: "borderline", Kind: "command", Status: report.StatusPassed, Epochs: 20, PassedEpochs: 17, FailedEpochs: 3, RequiredPasses: 16, Confidence: 0.8,
				DurationMS: 150, EpochsRun: 20, EpochsPlanned: 20, Sequential: true, Undecided: true, Interval: &[2]float64{0.64, 0.95}},
		},
	}
	traj := trajectoryJSON(t)
	fin := timestamppb.New(t0.Add(time.Minute))
	results := []*pb.Result{
		{RunId: id, JobId: "j1", Skill: badSkill, CaseName: badCase, Agent: "builtin", Epoch: 1, Kind: pb.CaseKind_CASE_KIND_PROMPT,
			Verdict: pb.Verdict_VERDICT_FAILED, Reason: "output_contains failed: " + xssScript, Attempt: 1, WorkerId: "w-1", Model: "m1", JudgeModel: "judge-1", AgentVersion: "claude-cli/2.1.240",
			Output: "I ran " + xssScript + " and " + xssImg + " and " + xssURL,
			Assertions: []*pb.AssertionResult{
				{Type: "output_contains", Passed: false, Expected: "done " + xssImg, Actual: xssScript, Message: "not found"},
				{Type: "semantic_match", Passed: false, Expected: "says it is deployed", Actual: "The output never says " + xssScript, Message: "judge (2/3 votes): failed"},
			},
			Outputs: []*pb.OutputFile{
				{Path: "report-" + xssImg + ".html", Size: 40, Content: []byte("<html><script>alert(4)</script></html>")},
				{Path: "blob.bin", Size: 4, Content: []byte{0, 0xff, 1, 2}},
			},
			Transcript: &pb.Transcript{Turns: 2, Stop: "final", ActivatedSkills: []string{badSkill}, Activations: []*pb.Activation{{Skill: badSkill, Turn: 1}}},
			Trajectory: &pb.StoredDocument{Data: traj, Size: int64(len(traj)), Encoding: "json"},
			Timings:    &pb.Timings{QueuedMs: 20, SandboxStartMs: 300, ExecutionMs: 1800, TotalMs: 2100},
			Usage:      &pb.Usage{PromptTokens: 270, CompletionTokens: 23, Cost: 0.0125}, FinishedAt: fin},
		{RunId: id, JobId: "j2", Skill: badSkill, CaseName: badCase, Agent: "builtin", Epoch: 2, Kind: pb.CaseKind_CASE_KIND_PROMPT,
			Verdict: pb.Verdict_VERDICT_FAILED, Reason: "output_contains failed", Attempt: 2, WorkerId: "w-2", Model: "m1",
			Output: "second try", Assertions: []*pb.AssertionResult{{Type: "output_contains", Expected: "done", Actual: "second try", Message: "not found"}},
			Timings: &pb.Timings{TotalMs: 2100}, FinishedAt: fin},
		{RunId: id, JobId: "j3", Skill: badSkill, CaseName: "usage-error", Epoch: 1, Kind: pb.CaseKind_CASE_KIND_COMMAND,
			Verdict: pb.Verdict_VERDICT_ERRORED, Reason: "sandbox failed to start", Attempt: 3, ExitCode: -1, Stderr: "docker: " + xssScript,
			Timings: &pb.Timings{TotalMs: 300}, FinishedAt: fin},
		{RunId: id, JobId: "j4", Skill: "logging", CaseName: "flaps", Agent: "builtin", Epoch: 1, Kind: pb.CaseKind_CASE_KIND_PROMPT,
			Verdict: pb.Verdict_VERDICT_FAILED, Reason: "assertion failed", Attempt: 1, Output: "flap",
			Transcript: &pb.Transcript{ToolCalls: []*pb.ToolCall{{Name: "bash", Arguments: `{"command":"echo ` + strings.ReplaceAll(xssScript, `"`, `\"`) + `"}`, Output: xssImg, ExitCode: 0}}},
			Timings:    &pb.Timings{TotalMs: 900}, FinishedAt: fin},
		{RunId: id, JobId: "j5", Skill: "logging", CaseName: "logline-shape", Epoch: 1, Kind: pb.CaseKind_CASE_KIND_COMMAND,
			Verdict: pb.Verdict_VERDICT_PASSED, Attempt: 1, Stdout: "ok", Assertions: []*pb.AssertionResult{{Type: "exit_code", Passed: true, Expected: "0", Actual: "0"}},
			Timings: &pb.Timings{TotalMs: 150}, FinishedAt: fin},
	}
	st := statusOf(id, "nightly "+xssScript, pb.RunState_RUN_STATE_COMPLETED, &pb.Counts{Total: 4, Passed: 1, Failed: 2, Errored: 1}, t0)
	return st, rep, results
}

// bigRun is a run of n cases, one epoch each, a tenth of them failing; with results when
// withResults.
func bigRun(id string, n int, state pb.RunState, withResults bool, output string) (*pb.RunStatus, report.Report, []*pb.Result) {
	rep := report.Report{Run: id}
	var results []*pb.Result
	for i := range n {
		c := report.Case{Skill: fmt.Sprintf("skill-%03d", i%100), Case: fmt.Sprintf("case-%05d", i), Kind: "command", Status: report.StatusPassed,
			Epochs: 1, PassedEpochs: 1, RequiredPasses: 1, Confidence: 1, DurationMS: 100}
		v := pb.Verdict_VERDICT_PASSED
		if i%10 == 0 {
			c.Status, c.PassedEpochs, c.FailedEpochs, c.Reason = report.StatusFailed, 0, 1, "exit_code: want 0, got 1"
			c.Assertions = []report.Assertion{{Type: "exit_code", Expected: "0", Actual: "1", Message: "exit code 1"}}
			v = pb.Verdict_VERDICT_FAILED
			rep.Summary.Failed++
		} else {
			rep.Summary.Passed++
		}
		rep.Summary.Total++
		rep.Cases = append(rep.Cases, c)
		if withResults {
			results = append(results, &pb.Result{RunId: id, JobId: fmt.Sprintf("j%d", i), Skill: c.Skill, CaseName: c.Case, Epoch: 1,
				Kind: pb.CaseKind_CASE_KIND_COMMAND, Verdict: v, Stdout: output, Stderr: output, Reason: c.Reason,
				Assertions: []*pb.AssertionResult{{Type: "exit_code", Passed: v == pb.Verdict_VERDICT_PASSED, Expected: "0", Actual: "1"}},
				Outputs:    []*pb.OutputFile{{Path: "out.txt", Size: int64(len(output)), Content: []byte(output)}},
				Timings:    &pb.Timings{TotalMs: 100}})
		}
	}
	st := statusOf(id, "big", state, &pb.Counts{Total: int32(n), Passed: int32(rep.Summary.Passed), Failed: int32(rep.Summary.Failed)}, t0)
	return st, rep, results
}

// counting is a deterministic "random" source for goldens: each read is filled with the next
// byte value, so that sessions still differ.
type counting struct {
	mu sync.Mutex
	n  byte
}

func (c *counting) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	for i := range p {
		p[i] = c.n
	}
	return len(p), nil
}

const (
	operatorToken = "op-secret"
	viewerToken   = "view-secret"
)

// testServer is a viewer with an operator and a viewer token over src.
func testServer(t testing.TB, src Source, deps ...func(*Deps)) *Server {
	t.Helper()
	d := Deps{Source: src}
	for _, f := range deps {
		f(&d)
	}
	s, err := New(Config{
		Operators: []Token{{Name: "ops", Secret: operatorToken}},
		Viewers:   []Token{{Name: "reader", Secret: viewerToken}},
		Now:       func() time.Time { return t0 }, Random: &counting{},
	}, d)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// do serves one request; host defaults to the test's, cookie is sent when set.
func do(h http.Handler, method, target string, form url.Values, cookie *http.Cookie, hdr ...string) *httptest.ResponseRecorder {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	r := httptest.NewRequest(method, target, body)
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		switch hdr[i] {
		case "Host":
			r.Host = hdr[i+1]
			continue
		case "RemoteAddr": // where the request comes from
			r.RemoteAddr = hdr[i+1]
			continue
		}
		r.Header.Set(hdr[i], hdr[i+1])
	}
	if cookie != nil {
		r.AddCookie(cookie)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// login logs in with token and returns the session cookie.
func login(t testing.TB, h http.Handler, token string) *http.Cookie {
	t.Helper()
	w := do(h, "POST", "/login", url.Values{"token": {token}, "next": {"/"}}, nil)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("login: %d\n%s", w.Code, w.Body)
	}
	for _, c := range w.Result().Cookies() {
		if c.Name == sessionCookie {
			return c
		}
	}
	t.Fatal("login set no session cookie")
	return nil
}

// csrfOf reads the CSRF token of a page's forms.
func csrfOf(t testing.TB, body []byte) string {
	t.Helper()
	const marker = `name="csrf" value="`
	i := bytes.Index(body, []byte(marker))
	if i < 0 {
		t.Fatalf("no CSRF token in the page:\n%s", body)
	}
	rest := body[i+len(marker):]
	return string(rest[:bytes.IndexByte(rest, '"')])
}
