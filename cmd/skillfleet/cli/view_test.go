package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/skillfleet/skillfleet/atif"
	"github.com/skillfleet/skillfleet/history"
	"github.com/skillfleet/skillfleet/internal/browsertest"
	"github.com/skillfleet/skillfleet/internal/testutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	runreport "github.com/skillfleet/skillfleet/report"
)

// greetingResult is one epoch of a greeter case, answered as answer, with its trajectory.
func greetingResult(t *testing.T, run, name, answer string, v pb.Verdict) *pb.Result {
	t.Helper()
	who := strings.TrimPrefix(name, "greet-")
	who = strings.ToUpper(who[:1]) + who[1:]
	tr := atif.Trajectory{SchemaVersion: atif.SchemaVersion, SessionID: run + "-" + name, Agent: atif.Agent{Name: "skillfleet-builtin", Version: "1", ModelName: "m1"},
		Steps: []atif.Step{
			{StepID: 1, Source: atif.SourceSystem, Message: "You are a helpful agent."},
			{StepID: 2, Source: atif.SourceUser, Message: "Greet " + who},
			{StepID: 3, Source: atif.SourceAgent, ModelName: "m1", Message: answer},
		}}
	traj, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	want := "Salutations, " + who
	return &pb.Result{RunId: run, JobId: run + "-" + name, Skill: "greeter", CaseName: name, Agent: "builtin", Epoch: 1,
		Kind: pb.CaseKind_CASE_KIND_PROMPT, Verdict: v, Output: answer, Model: "m1", Attempt: 1,
		FinishedAt: timestamppb.New(time.Date(2026, 3, 1, 12, 1, 0, 0, time.UTC)),
		Assertions: []*pb.AssertionResult{{Type: "output_contains", Passed: v == pb.Verdict_VERDICT_PASSED, Expected: want, Actual: answer,
			Message: "the output does not contain " + want}},
		Trajectory: &pb.StoredDocument{Data: traj, Size: int64(len(traj)), Encoding: "json"}}
}

// viewHistory is a local history holding one archived run of `skillfleet test`, written as
// test writes it (history.Store.WriteArchive), without Docker: greet-ada passed, greet-bob
// failed (the agent answered "Hello, Bob.").
func viewHistory(t *testing.T) (path, run string) {
	t.Helper()
	ctx := context.Background()
	path, run = filepath.Join(t.TempDir(), "history.db"), "run-view-1"
	store, err := history.Open(ctx, history.Options{Target: path})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	results := []*pb.Result{
		greetingResult(t, run, "greet-ada", "Salutations, Ada!", pb.Verdict_VERDICT_PASSED),
		greetingResult(t, run, "greet-bob", "Hello, Bob.", pb.Verdict_VERDICT_FAILED),
	}
	var planned []runreport.PlannedCase
	for _, r := range results {
		planned = append(planned, runreport.PlannedCase{Skill: r.GetSkill(), Case: r.GetCaseName(), Agent: r.GetAgent(), Kind: r.GetKind()})
	}
	b := runreport.NewBuilder(run, planned)
	for _, r := range results {
		b.Add(r)
	}
	var doc bytes.Buffer
	if err := runreport.WriteJSON(&doc, b.Report()); err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	st := &pb.RunStatus{Id: run, State: pb.RunState_RUN_STATE_COMPLETED, Cases: b.Counts(), TotalJobs: 2, DoneJobs: 2,
		Spec: &pb.RunSpec{Id: run, Name: "greetings", CreatedAt: timestamppb.New(created)}, FinishedAt: timestamppb.New(created.Add(time.Minute))}
	each := func(fn func(*pb.Result) error) error {
		for _, r := range results {
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}
	if _, err := store.WriteArchive(ctx, st, doc.Bytes(), each, history.ArchiveLimits{}); err != nil {
		t.Fatal(err)
	}
	return path, run
}

// TestViewRefusesOtherAddresses: the viewer of a history listens on loopback only.
func TestViewRefusesOtherAddresses(t *testing.T) {
	db, _ := viewHistory(t)
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:8080"} {
		var out, errOut bytes.Buffer
		if code := Main([]string{"view", "--history", db, "--addr", addr}, &out, &errOut); code != ExitUsage || !strings.Contains(errOut.String(), "loopback") {
			t.Errorf("view --addr %s: exit %d, %s", addr, code, errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := Main([]string{"view", "--history", filepath.Join(t.TempDir(), "none.db")}, &out, &errOut); code != ExitErrors || !strings.Contains(errOut.String(), "no local history") {
		t.Errorf("view of a missing history: exit %d, %s", code, errOut.String())
	}
}

// TestViewInBrowser is issue 26: `skillfleet view` serves a local history's archived run to
// a headless Chromium. The printed link logs in; from the runs list the run, then the failed
// case by its name, shows the assertion's evidence and the agent's answer in the
// conversation; there is no cancel button, and a POST to cancel with the browser's session is
// refused. Screenshots go to $SKILLFLEET_SCREENSHOTS (or the test's directory).
func TestViewInBrowser(t *testing.T) {
	db, run := viewHistory(t)
	b := browsertest.Start(t)

	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &testutil.SyncBuffer{}, &testutil.SyncBuffer{}
	root := NewRootCommand(stdout, stderr)
	root.SetArgs([]string{"view", "--history", db})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("view ended with %v\n%s", err, stderr.String())
			}
		}
	}
	t.Cleanup(stop)
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool { return strings.Contains(stdout.String(), "\n") },
		"view printed no URL; stderr:\n", stderr)
	link := strings.TrimSpace(stdout.String())
	if !strings.HasPrefix(link, "http://127.0.0.1:") || !strings.Contains(link, "/?token=") {
		t.Fatalf("printed %q, want http://127.0.0.1:PORT/?token=…", link)
	}
	base, _, _ := strings.Cut(link, "/?token=")

	p := b.Open(t, link)
	if strings.Contains(p.URL(), "token=") || !strings.Contains(p.Text("body"), run) {
		t.Fatalf("the link led to %s, want the runs list without the token:\n%s", p.URL(), p.Text("body"))
	}
	cookies := p.Cookies()
	if len(cookies) != 1 || !cookies[0].HTTPOnly || cookies[0].SameSite != "Strict" {
		t.Fatalf("cookies %+v: want one HttpOnly, SameSite=Strict session", cookies)
	}
	p.Screenshot("view-runs")

	p.ClickLink(run)
	body := p.Text("body")
	for _, want := range []string{"greet-ada", "greet-bob", "failed", "passed", "the HTML report"} {
		if !strings.Contains(body, want) {
			t.Errorf("the run page lacks %q:\n%s", want, body)
		}
	}
	if n := p.Count("form[action$='/cancel']"); n != 0 || strings.Contains(body, "Cancel this run") {
		t.Errorf("the run page offers to cancel (%d forms)", n)
	}
	p.Screenshot("view-run")

	p.ClickLink("greet-bob")
	body = p.Text("body")
	for _, want := range []string{"output_contains", "Salutations, Bob", "the output does not contain", "Hello, Bob.", "Greet Bob"} {
		if !strings.Contains(body, want) {
			t.Errorf("the case page lacks %q (evidence, the conversation):\n%s", want, body)
		}
	}
	p.Screenshot("view-case")
	p.AssertNoDialogs()
	if v := p.CSPViolations(); len(v) != 0 {
		t.Errorf("CSP violations: %v", v)
	}

	// Cancelling is refused even with the browser's session and the page's own CSRF token.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequest(http.MethodPost, base+"/runs/"+run+"/cancel", strings.NewReader("csrf=whatever"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, c := range p.Cookies() {
		req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("POST cancel: %d, want 403", resp.StatusCode)
	}

	// Interrupted, it shuts down and exits cleanly.
	stop()
	if _, err := http.Get(base + "/"); err == nil {
		t.Error("the viewer still answers after its context ended")
	}
}
