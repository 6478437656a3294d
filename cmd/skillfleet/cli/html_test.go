package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	runreport "github.com/skillfleet/skillfleet/report"
)

// htmlVerdicts reads the cases table of an HTML report: each row's case (skill/case [agent]
// arm) and verdict; it fails on a page that runs a script.
func htmlVerdicts(t *testing.T, page []byte) map[string]string {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatalf("the HTML report does not parse: %v", err)
	}
	out := map[string]string{}
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "script" {
			t.Error("the HTML report holds a script")
		}
		if n.Type == html.ElementNode && n.Data == "tr" {
			a := map[string]string{}
			for _, at := range n.Attr {
				a[at.Key] = at.Val
			}
			if status, ok := a["data-status"]; ok {
				out[caseKey(a["data-skill"], a["data-case"], a["data-agent"], a["data-arm"])] = status
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return out
}

func caseKey(skill, name, agent, arm string) string {
	return skill + "/" + name + " [" + agent + "] " + arm
}

// checkSameVerdicts fails unless the HTML report lists exactly the JSON report's cases with
// the same verdicts.
func checkSameVerdicts(t *testing.T, page []byte, rep runreport.Report) {
	t.Helper()
	got := htmlVerdicts(t, page)
	if len(got) != len(rep.Cases) || len(got) == 0 {
		t.Errorf("%d cases in the HTML report, %d in the JSON one", len(got), len(rep.Cases))
	}
	for _, c := range rep.Cases {
		if k := caseKey(c.Skill, c.Case, c.Agent, c.Arm); got[k] != c.Status {
			t.Errorf("%s: %q in the HTML report, %q in the JSON one", k, got[k], c.Status)
		}
	}
}

// TestFinishRunWritesHTML: --html writes the report's cases with their verdicts, and each
// case's epochs from the results, next to the report on stdout.
func TestFinishRunWritesHTML(t *testing.T) {
	rep := runreport.Report{Run: "r1", Summary: runreport.Summary{Total: 2, Passed: 1, Failed: 1}, Cases: []runreport.Case{
		{Skill: "s", Case: "ok", Kind: "command", Status: runreport.StatusPassed, Epochs: 1, PassedEpochs: 1, RequiredPasses: 1, Confidence: 1},
		{Skill: "s", Case: "<script>bad</script>", Kind: "command", Status: runreport.StatusFailed, Epochs: 1, FailedEpochs: 1, RequiredPasses: 1, Confidence: 1, Reason: "exit 1"},
	}}
	results := []*pb.Result{
		{Skill: "s", CaseName: "ok", Epoch: 1, Verdict: pb.Verdict_VERDICT_PASSED, Stdout: "fine"},
		{Skill: "s", CaseName: "<script>bad</script>", Epoch: 1, Verdict: pb.Verdict_VERDICT_FAILED, Stderr: "the stderr of the failing epoch"},
	}
	path := filepath.Join(t.TempDir(), "report.html")
	var out, errb bytes.Buffer
	err := finishRun(&env{stdout: &out, stderr: &errb}, &pb.RunStatus{Id: "r1", State: pb.RunState_RUN_STATE_COMPLETED}, rep, outputFlags{
		format: "json", html: path,
		results: func(fn func(*pb.Result) error) error {
			for _, r := range results {
				if err := fn(r); err != nil {
					return err
				}
			}
			return nil
		},
	})
	if err == nil {
		t.Error("a failed case did not fail the run")
	}
	page, rerr := os.ReadFile(path)
	if rerr != nil {
		t.Fatal(rerr)
	}
	fromJSON, jerr := runreport.FromJSON(&out)
	if jerr != nil {
		t.Fatal(jerr)
	}
	checkSameVerdicts(t, page, fromJSON)
	if !strings.Contains(string(page), "the stderr of the failing epoch") {
		t.Error("the HTML report does not show the failing epoch's stderr")
	}
	// A file that cannot be written fails the command, naming it.
	err = finishRun(&env{stdout: &out, stderr: &errb}, &pb.RunStatus{Id: "r1", State: pb.RunState_RUN_STATE_COMPLETED}, rep,
		outputFlags{format: "json", html: filepath.Join(t.TempDir(), "no", "such", "dir", "r.html")})
	if err == nil || !strings.Contains(err.Error(), "html:") {
		t.Errorf("an unwritable --html: %v", err)
	}
}
