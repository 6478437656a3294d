package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/internal/browsertest"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
)

// cappedRun is a run its cost cap stopped, whose cases show what curtailment and `runs: auto`
// did: a sequential case decided after 6 of at most 20 epochs, one undecided at max_runs, a
// fixed case (runs 5, confidence 0.8) failed after its second failure in 3 epochs, and one
// skipped by the cap. Its epochs: 6+20+3+0 = 29 of 20+20+5+3 = 48 planned ran, 14+2 = 16 not
// needed (the skipped case's 3 are the cap's, not curtailment's).
func cappedRun(id string) (*pb.RunStatus, report.Report) {
	rep := report.Report{
		Run:     id,
		Summary: report.Summary{Total: 4, Passed: 2, Failed: 1, Skipped: 1},
		Usage:   &report.Usage{PromptTokens: 90_000, CompletionTokens: 4_000, Cost: 1.0236},
		Partial: &report.Partial{Reason: "cost cap: spent 1.0236 of 1.00", Spent: 1.0236, MaxCost: 1},
		Cases: []report.Case{
			{Skill: "deploy", Case: "auto-decided", Kind: "prompt", Status: report.StatusPassed, Epochs: 20, PassedEpochs: 6,
				EpochsRun: 6, EpochsPlanned: 20, Sequential: true, RequiredPasses: 16, Confidence: 0.8, Interval: &[2]float64{0.61, 1}},
			{Skill: "deploy", Case: "auto-undecided", Kind: "prompt", Status: report.StatusPassed, Epochs: 20, PassedEpochs: 16, FailedEpochs: 4,
				EpochsRun: 20, EpochsPlanned: 20, Sequential: true, Undecided: true, RequiredPasses: 16, Confidence: 0.8, Interval: &[2]float64{0.58, 0.92}},
			{Skill: "deploy", Case: "fixed-curtailed", Kind: "prompt", Status: report.StatusFailed, Epochs: 5, PassedEpochs: 1, FailedEpochs: 2,
				EpochsRun: 3, EpochsPlanned: 5, RequiredPasses: 4, Confidence: 0.8},
			{Skill: "deploy", Case: "capped", Kind: "prompt", Status: report.StatusSkipped, Epochs: 3, SkippedEpochs: 3,
				EpochsPlanned: 3, RequiredPasses: 3, Confidence: 1, Reason: "cost cap"},
		},
	}
	st := statusOf(id, "nightly", pb.RunState_RUN_STATE_CANCELLED, &pb.Counts{Total: 4, Passed: 2, Failed: 1, Skipped: 1}, t0)
	st.CostCapped, st.Spent, st.Spec.MaxCost, st.Reason = true, 1.0236, 1, "cost cap: spent 1.0236 of 1.00"
	st.Curtailed, st.WithdrawnJobs = true, 16
	return st, rep
}

// aaCase is one case of stats/testdata/power.py's A/A table: passed and decided epochs in
// arm a, then in a2.
type aaCase [4]int

// aaWorked is power.py's first A/A suite and what it computed of it, independently of the Go
// code: 40 cases of one epoch, 6 flipped (3 each way).
type aaWorked struct {
	Cases    []aaCase   `json:"cases"`
	Paired   int        `json:"paired"`
	Flipped  int        `json:"flipped"`
	FlipRate float64    `json:"flip_rate"`
	Interval [2]float64 `json:"interval"`
	MDE      *float64   `json:"mde"`
}

// readAAWorked reads the worked A/A table the stats package is checked against.
func readAAWorked(t testing.TB) aaWorked {
	t.Helper()
	b, err := os.ReadFile("../stats/testdata/power.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Noise []aaWorked `json:"noise"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	w := doc.Noise[0]
	if len(w.Cases) != 40 || w.MDE == nil {
		t.Fatalf("power.json's first A/A suite changed: %d cases", len(w.Cases))
	}
	return w
}

// aaRun is an A/A run (--aa: baseline a2) of the worked suite: each case's epochs in arm a
// (with_skill) and a2 as the table gives them.
func aaRun(id string, w aaWorked) (*pb.RunStatus, report.Report, []*pb.Result) {
	rep := report.Report{Run: id}
	var results []*pb.Result
	for i, c := range w.Cases {
		name := fmt.Sprintf("case-%02d", i)
		for _, arm := range []struct {
			name           string
			passed, epochs int
		}{{"", c[0], c[1]}, {armA2, c[2], c[3]}} {
			rc := report.Case{Skill: "greeter", Case: name, Arm: arm.name, Kind: "prompt", Epochs: arm.epochs, PassedEpochs: arm.passed,
				FailedEpochs: arm.epochs - arm.passed, RequiredPasses: arm.epochs, Confidence: 1, Status: report.StatusPassed}
			if arm.passed < arm.epochs {
				rc.Status = report.StatusFailed
			}
			rep.Cases = append(rep.Cases, rc)
			for e := 1; e <= arm.epochs; e++ {
				v := pb.Verdict_VERDICT_FAILED
				if e <= arm.passed {
					v = pb.Verdict_VERDICT_PASSED
				}
				results = append(results, &pb.Result{RunId: id, JobId: fmt.Sprintf("%s-%s-%d", name, arm.name, e), Skill: "greeter", CaseName: name,
					Arm: arm.name, Epoch: int32(e), Kind: pb.CaseKind_CASE_KIND_PROMPT, Verdict: v, Model: "m1"})
			}
		}
	}
	with, base := report.SplitArms(rep.Cases)
	for _, c := range with {
		rep.Summary.Total++
		if c.Status == report.StatusPassed {
			rep.Summary.Passed++
		} else {
			rep.Summary.Failed++
		}
	}
	b := report.Summary{Total: len(base)}
	for _, c := range base {
		if c.Status == report.StatusPassed {
			b.Passed++
		} else {
			b.Failed++
		}
	}
	rep.Baseline = &b
	st := statusOf(id, "greetings", pb.RunState_RUN_STATE_COMPLETED, &pb.Counts{Total: int32(rep.Summary.Total), Passed: int32(rep.Summary.Passed), Failed: int32(rep.Summary.Failed)}, t0)
	st.Spec.Baseline = armA2
	return st, rep, results
}

// withNoise is a viewer over the cost-capped run "rcap" and the A/A run "raa".
func withNoise(t testing.TB) (*Server, aaWorked) {
	t.Helper()
	src := newFake()
	st, rep := cappedRun("rcap")
	src.add(st, rep, nil)
	w := readAAWorked(t)
	st, rep, res := aaRun("raa", w)
	src.add(st, rep, res)
	return testServer(t, src), w
}

// noiseWants is what the A/A run's noise floor must say: power.py's figures, as the page
// rounds them.
func noiseWants(w aaWorked) []string {
	return []string{
		fmt.Sprintf("%.1f%%: %d of %d paired cases flipped; 95%% Wilson interval %.1f%%–%.1f%%", 100*w.FlipRate, w.Flipped, w.Paired, 100*w.Interval[0], 100*w.Interval[1]),
		fmt.Sprintf("Smallest detectable difference %.1f points", 100**w.MDE),
		fmt.Sprintf("Agreement %d of %d cases agree", w.Paired-w.Flipped, len(w.Cases)),
	}
}

// squash is s without white space: a page's text runs a term into its definition
// (<dt>Epochs</dt><dd>29…) and a cell into the next.
func squash(s string) string { return strings.Join(strings.Fields(s), "") }

// TestRunNotes: the viewer shows what the cost cap, curtailment and `runs: auto` did to a run
// (a PARTIAL banner, the epochs that ran of those planned, each case's epochs run, an
// undecided case's interval), and an A/A run's noise floor, on its pages and in its HTML
// report.
func TestRunNotes(t *testing.T) {
	s, w := withNoise(t)
	op := login(t, s, operatorToken)
	for _, tc := range []struct {
		name, target string
		want         []string
		// absent is what the page must not say.
		absent []string
	}{
		{"runs list", "/", []string{"cancelled partial: cost cap"}, nil},
		{"capped run", "/runs/rcap", []string{
			"PARTIAL: this run stopped at its cost cap, having spent 1.0236 of 1.0000; 1 case was skipped unfinished.",
			"(16 more planned, withdrawn: their cases were settled without them)",
			"Epochs 29 of 48 planned ran: 16 not needed, 2 cases being settled without them (curtailment); 2 cases run until a sequential test decides (runs: auto, planned at max_runs), 1 undecided there",
			"6/6 (6 of ≤ 20 run, auto)", "16/20 (20 of ≤ 20 run, auto)", "1/5 (3 of 5 run)",
			"passed undecided 58.0%–92.0%",
		}, nil},
		{"decided runs: auto case", "/runs/rcap/cases?skill=deploy&case=auto-decided", []string{
			"6/6 passed; tested against confidence 0.8", "Sequential test decided after 6 of at most 20 epochs (runs: auto)",
		}, nil},
		{"undecided runs: auto case", "/runs/rcap/cases?skill=deploy&case=auto-undecided", []string{
			"16/20 passed, 4 failed; 16 needed (confidence 0.8)",
			"undecided: it reached max_runs (20) without deciding; the verdict is the fixed rule's over those epochs, and the pass rate lies in 58.0%–92.0% (95% interval)",
		}, nil},
		{"curtailed fixed case", "/runs/rcap/cases?skill=deploy&case=fixed-curtailed", []string{"Epochs run 3 of 5: the others could not change the verdict"}, nil},
		{"A/A run", "/runs/raa", []string{"A/A the with_skill arm ran twice, interleaved, as a and a2", "Repeat arm a2: 40 cases"}, nil},
		// The sides are one arm run twice: a flip is noise, never a regression or a fix.
		{"A/A noise floor", "/compare?run=raa", append(noiseWants(w), "Noise floor (A/A)", "case-00 1/1 passing 0/1 failing flipped", "failing only in a2"),
			[]string{"newly failing", "fixed", "still failing"}},
		{"HTML report of the capped run", "/runs/rcap/report.html", []string{"PARTIAL: this run stopped at its cost cap", "Epochs 29 of 48 planned ran"}, nil},
		{"HTML report of the A/A run", "/runs/raa/report.html", noiseWants(w), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := do(s, "GET", tc.target, nil, op)
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d\n%s", rec.Code, rec.Body)
			}
			doc := parseHTML(t, rec.Body.Bytes())
			checkInert(t, doc, !strings.HasSuffix(tc.target, ".html"))
			text := textOf(doc)
			for _, want := range tc.want {
				if !strings.Contains(squash(text), squash(want)) {
					t.Errorf("the page does not say %q:\n%s", want, text)
				}
			}
			for _, not := range tc.absent {
				if strings.Contains(squash(text), squash(not)) {
					t.Errorf("the page says %q:\n%s", not, text)
				}
			}
		})
	}
	// A run neither capped nor curtailed gets neither note.
	src := newFake()
	st, rep, res := bigRun("plain", 3, pb.RunState_RUN_STATE_COMPLETED, true, "x")
	src.add(st, rep, res)
	plain := testServer(t, src)
	text := textOf(parseHTML(t, do(plain, "GET", "/runs/plain", nil, login(t, plain, operatorToken)).Body.Bytes()))
	if strings.Contains(text, "PARTIAL") || strings.Contains(text, "planned ran") {
		t.Errorf("a plain run's page notes a cap or curtailment:\n%s", text)
	}
}

// TestNoiseListIsBounded: an A/A run of many cases lists its flips first and at most
// maxNoiseListed cases, counting the rest.
func TestNoiseListIsBounded(t *testing.T) {
	var w aaWorked
	for i := range maxNoiseListed + 100 {
		c := aaCase{1, 1, 1, 1}
		if i%100 == 99 { // the flips come last in the plan, first in the list
			c = aaCase{1, 1, 0, 1}
		}
		w.Cases = append(w.Cases, c)
	}
	src := newFake()
	st, rep, res := aaRun("rbig", w)
	src.add(st, rep, res)
	s := testServer(t, src)
	body := do(s, "GET", "/compare?run=rbig", nil, login(t, s, operatorToken)).Body.Bytes()
	doc := parseHTML(t, body)
	var rows []string
	for _, tr := range elements(doc, "tr") {
		if v, ok := attr(tr, "data-agree"); ok {
			rows = append(rows, v)
		}
	}
	if len(rows) != maxNoiseListed {
		t.Fatalf("%d rows listed, want %d", len(rows), maxNoiseListed)
	}
	for i, v := range rows[:6] {
		if v != "false" {
			t.Errorf("row %d agrees: the 6 flips are not listed first", i)
		}
	}
	if text := textOf(doc); !strings.Contains(text, "100 more cases not listed") || !strings.Contains(text, "594 of 600 cases agree") {
		t.Errorf("the page does not count what it left out:\n%s", text)
	}
}

// TestNoiseAndCostInBrowser is issue 33's viewer in a headless Chromium: from the runs list,
// the cost-capped run shows its PARTIAL banner and the epochs curtailment and runs: auto
// left unrun, an undecided case its interval; the A/A run's link leads to its noise floor
// (power.py's flip rate, interval and smallest detectable difference) and each case's
// agreement, the 6 flips first. Screenshots go to $SKILLFLEET_SCREENSHOTS (or the test's
// directory).
func TestNoiseAndCostInBrowser(t *testing.T) {
	s, w := withNoise(t)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	b := browsertest.Start(t)

	p := b.Open(t, srv.URL+"/")
	p.Fill("#token", operatorToken)
	p.Submit("#token")
	if body := p.Text("body"); !strings.Contains(body, "partial: cost cap") {
		t.Fatalf("the runs list does not mark the capped run:\n%s", body)
	}
	p.Screenshot("runs")

	p.ClickLink("rcap")
	if got := p.Text(".banner.partial"); !strings.HasPrefix(got, "PARTIAL: this run stopped at its cost cap, having spent 1.0236 of 1.0000") {
		t.Errorf("the banner says %q", got)
	}
	body := strings.Join(strings.Fields(p.Text("body")), " ")
	for _, want := range []string{"29 of 48 planned ran: 16 not needed", "6/6 (6 of ≤ 20 run, auto)", "1/5 (3 of 5 run)", "undecided 58.0%–92.0%"} {
		if !strings.Contains(body, want) {
			t.Errorf("the capped run's page lacks %q:\n%s", want, body)
		}
	}
	p.Screenshot("capped-run")

	p.ClickLink("auto-undecided")
	if body := strings.Join(strings.Fields(p.Text("body")), " "); !strings.Contains(body, "the pass rate lies in 58.0%–92.0% (95% interval)") {
		t.Errorf("the undecided case's page lacks its interval:\n%s", body)
	}
	p.Screenshot("undecided-case")

	p = b.Open(t, srv.URL+"/runs/raa")
	p.ClickLink("the suite's noise floor: flip rate and each case's agreement")
	body = strings.Join(strings.Fields(p.Text("#noise")), " ")
	for _, want := range noiseWants(w) {
		if !strings.Contains(body, want) {
			t.Errorf("the noise floor lacks %q:\n%s", want, body)
		}
	}
	if n := p.Count(`#noise tr[data-agree="false"]`); n != w.Flipped {
		t.Errorf("%d cases listed as not agreeing, want %d", n, w.Flipped)
	}
	if n := p.Count(`#noise tbody tr:nth-child(-n+6)[data-agree="false"]`); n != w.Flipped {
		t.Errorf("the flips are not listed first (%d of the first 6 rows)", n)
	}
	p.Screenshot("noise-floor")
	p.AssertNoDialogs()
	if v := p.CSPViolations(); len(v) != 0 {
		t.Errorf("CSP violations: %v", v)
	}
}
