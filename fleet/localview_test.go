package fleet

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/skillfleet/skillfleet/history"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
	"github.com/skillfleet/skillfleet/web"
)

// archiveRun keeps a finished run of one skill's cases in the history as `skillfleet test`
// does: its status, the report its results make, and the results.
func archiveRun(t *testing.T, store *history.Store, id string, created time.Time, verdicts map[string]pb.Verdict) {
	t.Helper()
	var planned []report.PlannedCase
	var results []*pb.Result
	for _, name := range []string{"greet-ada", "greet-bob"} {
		planned = append(planned, report.PlannedCase{Skill: "greeter", Case: name, Agent: "builtin", Kind: pb.CaseKind_CASE_KIND_PROMPT})
		v := verdicts[name]
		res := &pb.Result{RunId: id, JobId: id + "-" + name, Skill: "greeter", CaseName: name, Agent: "builtin", Epoch: 1,
			Kind: pb.CaseKind_CASE_KIND_PROMPT, Verdict: v, Output: "Hello from " + name, Model: "m1",
			CaseDigest: "sha256:" + name, Attempt: 1, FinishedAt: timestamppb.New(created.Add(time.Minute)),
			Assertions: []*pb.AssertionResult{{Type: "output_contains", Passed: v == pb.Verdict_VERDICT_PASSED, Expected: "Salutations"}}}
		if v != pb.Verdict_VERDICT_PASSED {
			res.Reason = "output_contains: Salutations not found"
		}
		results = append(results, res)
	}
	b := report.NewBuilder(id, planned)
	for _, r := range results {
		if !b.Add(r) {
			t.Fatalf("result %s not counted", r.GetJobId())
		}
	}
	var doc bytes.Buffer
	if err := report.WriteJSON(&doc, b.Report()); err != nil {
		t.Fatal(err)
	}
	st := &pb.RunStatus{Id: id, State: pb.RunState_RUN_STATE_COMPLETED, Cases: b.Counts(), TotalJobs: 2, DoneJobs: 2,
		Spec:       &pb.RunSpec{Id: id, Name: "greetings", CreatedAt: timestamppb.New(created)},
		FinishedAt: timestamppb.New(created.Add(time.Minute))}
	each := func(fn func(*pb.Result) error) error {
		for _, r := range results {
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}
	if _, err := store.WriteArchive(context.Background(), st, doc.Bytes(), each, history.ArchiveLimits{}); err != nil {
		t.Fatal(err)
	}
}

// twoRuns is a history of two archived runs: r1 where greet-bob failed, r2 where both passed.
func twoRuns(t *testing.T) *history.Store {
	t.Helper()
	store, err := history.Open(context.Background(), history.Options{Target: filepath.Join(t.TempDir(), "history.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	archiveRun(t, store, "r1", t0, map[string]pb.Verdict{"greet-ada": pb.Verdict_VERDICT_PASSED, "greet-bob": pb.Verdict_VERDICT_FAILED})
	archiveRun(t, store, "r2", t0.Add(time.Hour), map[string]pb.Verdict{"greet-ada": pb.Verdict_VERDICT_PASSED, "greet-bob": pb.Verdict_VERDICT_PASSED})
	return store
}

// TestArchiveSource: the viewer reads a history's archived runs as it reads a coordinator's:
// listed newest first, their status, report and results; an unknown run is the viewer's 404,
// and nothing can be cancelled.
func TestArchiveSource(t *testing.T) {
	ctx := context.Background()
	src := archiveSource{twoRuns(t)}
	list, err := src.List(ctx)
	if err != nil || len(list) != 2 || list[0].GetId() != "r2" || list[1].GetId() != "r1" {
		t.Fatalf("List = %v, %v; want r2 then r1", list, err)
	}
	st, err := src.Status(ctx, "r1")
	if err != nil || st.GetState() != pb.RunState_RUN_STATE_COMPLETED || st.GetSpec().GetName() != "greetings" {
		t.Fatalf("Status(r1) = %v, %v", st, err)
	}
	rep, err := src.Report(ctx, "r1")
	if err != nil || rep.Summary.Passed != 1 || rep.Summary.Failed != 1 || len(rep.Cases) != 2 {
		t.Fatalf("Report(r1) = %+v, %v; want one case passed, one failed", rep.Summary, err)
	}
	var got []string
	if err := src.AcceptedResults(ctx, "r1", func(r *pb.Result) error { got = append(got, r.GetCaseName()+":"+r.GetVerdict().String()); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1] != "greet-bob:VERDICT_FAILED" {
		t.Errorf("AcceptedResults(r1) = %v", got)
	}
	for name, call := range map[string]func() error{
		"Status":          func() error { _, err := src.Status(ctx, "nope"); return err },
		"Report":          func() error { _, err := src.Report(ctx, "nope"); return err },
		"AcceptedResults": func() error { return src.AcceptedResults(ctx, "nope", func(*pb.Result) error { return nil }) },
	} {
		if err := call(); !errors.Is(err, web.ErrNotFound) {
			t.Errorf("%s(unknown run) = %v, want web.ErrNotFound", name, err)
		}
	}
	if _, err := src.Cancel(ctx, "r1"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Cancel = %v, want ErrReadOnly", err)
	}
	cells, err := archiveFlaky{store: src.store}.FlakyCells(ctx, "", "greetings", "")
	if err != nil {
		t.Errorf("FlakyCells: %v", err)
	}
	t.Logf("flaky cells: %v", cells)
}

// TestLocalViewer serves the viewer of the two runs on loopback: its link logs in and drops
// the token from the address; pages, the two runs compared and the HTML report are served;
// the cancel is refused and offered nowhere; a non-loopback address is refused, as is a
// request for another Host.
func TestLocalViewer(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:80", "example.com:80", "nonsense"} {
		if _, err := CheckLoopbackAddr(addr); err == nil {
			t.Errorf("CheckLoopbackAddr(%q) accepted", addr)
		}
	}
	for _, addr := range []string{"", "127.0.0.1:0", "localhost:0", "[::1]:0"} {
		if _, err := CheckLoopbackAddr(addr); err != nil {
			t.Errorf("CheckLoopbackAddr(%q): %v", addr, err)
		}
	}
	v, err := StartLocalViewer(LocalViewerConfig{Token: "tok-123"}, twoRuns(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- v.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	if !strings.HasPrefix(v.URL(), "http://127.0.0.1:") || !strings.HasSuffix(v.URL(), "/?token=tok-123") {
		t.Fatalf("URL %q", v.URL())
	}
	base := strings.TrimSuffix(v.URL(), "/?token=tok-123")

	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	get := func(path string) (int, string, *http.Response) {
		t.Helper()
		resp, err := c.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp
	}
	if code, _, resp := get("/runs/r1"); code != http.StatusOK || resp.Request.URL.Path != "/login" {
		t.Fatalf("without the token: %d at %s, want the login form", code, resp.Request.URL)
	}
	if code, _, _ := get("/?token=wrong"); code != http.StatusUnauthorized {
		t.Errorf("a wrong link token: %d, want 401", code)
	}
	code, body, resp := get("/?token=tok-123")
	if code != http.StatusOK || resp.Request.URL.RawQuery != "" || !strings.Contains(body, "r1") || !strings.Contains(body, "r2") {
		t.Fatalf("the link: %d at %s, want the runs list without the token:\n%s", code, resp.Request.URL, body)
	}
	if resp.Header.Get("Content-Security-Policy") != web.CSP {
		t.Errorf("CSP %q", resp.Header.Get("Content-Security-Policy"))
	}
	code, body, _ = get("/runs/r1")
	if code != http.StatusOK || !strings.Contains(body, "greet-bob") || strings.Contains(body, "Cancel this run") {
		t.Errorf("run page: %d\n%s", code, body)
	}
	if code, body, _ = get("/runs/r1/cases?skill=greeter&case=greet-bob&agent=builtin"); code != http.StatusOK || !strings.Contains(body, "Hello from greet-bob") {
		t.Errorf("case page: %d\n%s", code, body)
	}
	if code, body, _ = get("/compare?a=r1&b=r2"); code != http.StatusOK || !strings.Contains(body, "fixed") {
		t.Errorf("r1 against r2: %d, want greet-bob fixed\n%s", code, body)
	}
	code, body, resp = get("/runs/r1/report.html")
	if code != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") || !strings.Contains(body, "greet-bob") {
		t.Errorf("HTML report: %d %q", code, resp.Header.Get("Content-Disposition"))
	}
	if code, _, _ = get("/runs/nope"); code != http.StatusNotFound {
		t.Errorf("unknown run: %d, want 404", code)
	}
	resp, err = c.Post(base+"/runs/r1/cancel", "application/x-www-form-urlencoded", strings.NewReader("csrf=x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("POST cancel: %d, want 403", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/?token=tok-123", nil)
	req.Host = "rebound.example:80"
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a request for another Host: %d, want 403", resp.StatusCode)
	}
}
