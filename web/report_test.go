package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/skillfleet/skillfleet/comparison"
	"github.com/skillfleet/skillfleet/internal/testutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
)

// replay is a ReportInput.Results over results.
func replay(results []*pb.Result) func(func(*pb.Result) error) error {
	return func(fn func(*pb.Result) error) error {
		for _, r := range results {
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}
}

// htmlRow is a case as an HTML report's table lists it.
type htmlRow struct {
	index                           int
	skill, name, agent, arm, status string
}

// rowsOfHTML reads the cases table of an HTML report.
func rowsOfHTML(t *testing.T, doc *html.Node) []htmlRow {
	t.Helper()
	var out []htmlRow
	for _, tr := range elements(doc, "tr") {
		status, ok := attr(tr, "data-status")
		if !ok {
			continue
		}
		r := htmlRow{status: status}
		index, _ := attr(tr, "data-index")
		if _, err := fmt.Sscan(index, &r.index); err != nil {
			t.Fatalf("a row's index %q: %v", index, err)
		}
		r.skill, _ = attr(tr, "data-skill")
		r.name, _ = attr(tr, "data-case")
		r.agent, _ = attr(tr, "data-agent")
		r.arm, _ = attr(tr, "data-arm")
		out = append(out, r)
	}
	return out
}

// sameVerdicts checks that the rows are the JSON report's cases, each once, with its verdict:
// a row names its case by its index in the report, and by its names, which the HTML report
// may clip (with an ellipsis) but not change.
func sameVerdicts(t *testing.T, rows []htmlRow, cases []report.Case) {
	t.Helper()
	if len(rows) != len(cases) {
		t.Fatalf("%d cases in the HTML report, %d in the JSON one", len(rows), len(cases))
	}
	seen := map[int]bool{}
	named := func(shown, full string) bool {
		return shown == full || (strings.HasSuffix(shown, "…") && strings.HasPrefix(full, strings.TrimSuffix(shown, "…")))
	}
	for _, r := range rows {
		if r.index < 0 || r.index >= len(cases) || seen[r.index] {
			t.Fatalf("row index %d: out of range or repeated", r.index)
		}
		seen[r.index] = true
		c := cases[r.index]
		if r.status != c.Status || !named(r.skill, c.Skill) || !named(r.name, c.Case) || !named(r.agent, c.Agent) || r.arm != c.Arm {
			t.Fatalf("row %d is %.100q/%.100q [%q %q] %s; the JSON report has %.100q/%.100q [%q %q] %s", r.index,
				r.skill, r.name, r.agent, r.arm, r.status, c.Skill, c.Case, c.Agent, c.Arm, c.Status)
		}
	}
}

func TestReportHoldsTheJSONVerdicts(t *testing.T) {
	hostileSt, hostileRep, hostileRes := hostileRun(t, "r1")
	src := newFake()
	withArms(src, "rarms", 30)
	armsRun := src.runs["rarms"]
	for _, tc := range []struct {
		name    string
		st      *pb.RunStatus
		rep     report.Report
		results []*pb.Result
	}{
		{"hostile names and outputs", hostileSt, hostileRep, hostileRes},
		{"a run with a baseline arm", armsRun.st, armsRun.rep, armsRun.results},
		{"no results at hand", hostileSt, hostileRep, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var js, page bytes.Buffer
			if err := report.WriteJSON(&js, tc.rep); err != nil {
				t.Fatal(err)
			}
			in := ReportInput{Status: tc.st, Report: tc.rep}
			if tc.results != nil {
				in.Results = replay(tc.results)
			}
			if err := WriteReport(&page, in); err != nil {
				t.Fatal(err)
			}
			fromJSON, err := report.FromJSON(&js)
			if err != nil {
				t.Fatal(err)
			}
			sameVerdicts(t, rowsOfHTML(t, parseHTML(t, page.Bytes())), fromJSON.Cases)
		})
	}
}

func TestReportIsSelfContained(t *testing.T) {
	st, rep, res := hostileRun(t, "r1")
	var page bytes.Buffer
	if err := WriteReport(&page, ReportInput{Status: st, Report: rep, Results: replay(res)}); err != nil {
		t.Fatal(err)
	}
	doc := parseHTML(t, page.Bytes())
	checkInert(t, doc, false)
	var csp, style string
	for _, m := range elements(doc, "meta") {
		if v, _ := attr(m, "http-equiv"); v == "Content-Security-Policy" {
			csp, _ = attr(m, "content")
		}
	}
	styles := elements(doc, "style")
	if len(styles) != 1 {
		t.Fatalf("%d style elements, want 1", len(styles))
	}
	style = textOf(styles[0])
	sum := sha256.Sum256([]byte(style))
	if want := "style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp, want) || !strings.HasPrefix(csp, "default-src 'none';") {
		t.Errorf("CSP %q does not allow exactly the inline style (%s)", csp, want)
	}
	if strings.Contains(csp, "script-src") || len(elements(doc, "script")) != 0 {
		t.Error("the report runs a script")
	}
	for _, n := range elements(doc, "") {
		for _, a := range n.Attr {
			if (a.Key == "href" && !strings.HasPrefix(a.Val, "#")) || a.Key == "src" {
				t.Errorf("<%s %s=%q> fetches or leaves the file", n.Data, a.Key, a.Val)
			}
		}
	}
	text := textOf(doc)
	for _, want := range []string{"I ran " + xssScript + " and " + xssImg, "Deploy it " + xssScript, "The output never says " + xssScript, "docker: " + xssScript} {
		if !strings.Contains(text, want) {
			t.Errorf("the report does not show %q as text", want)
		}
	}
	testutil.Golden(t, filepath.Join("testdata", "report.html"), page.Bytes())
}

func TestReportComparison(t *testing.T) {
	src := newFake()
	withArms(src, "rarms", 30)
	r := src.runs["rarms"]
	var with, without comparison.Records
	for _, res := range r.results {
		if res.GetArm() == "" {
			with.Add(res)
		} else {
			without.Add(res)
		}
	}
	cmp, err := comparison.Compare(
		comparison.Side{Label: "without_skill", Run: "rarms", Arm: "without_skill", Results: without.List()},
		comparison.Side{Label: "with_skill", Run: "rarms", Arm: "with_skill", Results: with.List()},
		comparison.Options{Axis: comparison.AxisArm})
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := WriteReport(&page, ReportInput{Status: r.st, Report: r.rep, Results: replay(r.results), Comparison: cmp}); err != nil {
		t.Fatal(err)
	}
	doc := parseHTML(t, page.Bytes())
	checkInert(t, doc, false)
	text := strings.Join(strings.Fields(textOf(doc)), " ")
	for _, want := range []string{"on the arm axis", "fixed (27)", "yes, better"} {
		if !strings.Contains(text, want) {
			t.Errorf("the report's comparison does not say %q", want)
		}
	}
	// The comparison's changed cases link to their details in the file.
	if !strings.Contains(page.String(), `<a href="#c1">skill-001/case-00001</a>`) {
		t.Error("the comparison does not link its cases' details")
	}
}

// TestReportSizeIsBounded writes 10,000-case runs whose every job left 3 × 64 KiB of
// hostile output (markup, which grows fourfold when escaped): the file stays under 20 MB, every
// case keeps its row, failing cases come first with their detail, and the clipping is said.
func TestReportSizeIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 10,000-case reports")
	}
	output := strings.Repeat("<b>&", 16<<10)
	long := strings.Repeat(`<"'&`, 512) // 2 KiB, 10 KiB escaped
	for _, tc := range []struct {
		name       string
		allFailing bool
		longNames  bool
	}{
		{"a tenth failing", false, false},
		{"every case failing", true, false},
		{"every case failing, with 2 KiB names", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, rep, res := bigRun("big", 10_000, pb.RunState_RUN_STATE_COMPLETED, true, output)
			for i := range rep.Cases {
				c := &rep.Cases[i]
				if tc.allFailing {
					c.Status, c.Reason = report.StatusFailed, long
					res[i].Verdict = pb.Verdict_VERDICT_FAILED
				}
				if tc.longNames {
					c.Skill, c.Case, c.Agent, c.File = long+c.Skill, long+c.Case, long, long
					res[i].Skill, res[i].CaseName, res[i].Agent = c.Skill, c.Case, c.Agent
				}
			}
			var page bytes.Buffer
			if err := WriteReport(&page, ReportInput{Status: st, Report: rep, Results: replay(res)}); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d bytes", page.Len())
			if page.Len() >= 20_000_000 {
				t.Fatalf("the report is %d bytes, over 20 MB", page.Len())
			}
			doc := parseHTML(t, page.Bytes())
			rows := rowsOfHTML(t, doc)
			sameVerdicts(t, rows, rep.Cases)
			ids := map[string]bool{}
			for _, n := range elements(doc, "") {
				if id, ok := attr(n, "id"); ok {
					ids[id] = true
				}
			}
			for _, a := range elements(doc, "a") {
				if h, _ := attr(a, "href"); strings.HasPrefix(h, "#") && !ids[h[1:]] {
					t.Fatalf("a link to %s, which the file does not hold", h)
				}
			}
			first := doc
			for _, d := range elements(doc, "details") {
				if id, _ := attr(d, "id"); id == "c0" {
					first = d
				}
			}
			if first == doc || !strings.Contains(textOf(first), strings.Repeat("<b>&", 10)) {
				t.Error("the first failing case has no detail with its output")
			}
			if !strings.Contains(textOf(doc), "This file is kept under 19.0 MiB") {
				t.Error("the report does not say it clipped")
			}
			var order []string
			for _, r := range rows {
				order = append(order, r.status)
			}
			if !tc.allFailing && (order[0] != "failed" || order[999] != "failed" || order[1000] != "passed") {
				t.Errorf("failing cases are not first: %v … %v", order[:2], order[999:1001])
			}
		})
	}
}

func TestBudget(t *testing.T) {
	for _, tc := range []struct {
		name         string
		total, piece int
		in           []string
		want         []string
		clipped      bool
	}{
		{"fits", 100, 50, []string{"abc", "def"}, []string{"abc", "def"}, false},
		{"a piece over its cap", 100, 5, []string{"abcdefgh"}, []string{"abcde"}, true},
		{"escaping counts", 100, 9, []string{"<<<"}, []string{"<<"}, true},
		{"the total runs out", 6, 50, []string{"abcd", "efgh", "ij"}, []string{"abcd", "ef", ""}, true},
		{"runes are not split", 100, 4, []string{"ééé"}, []string{"éé"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBudget(tc.total, tc.piece)
			var got []string
			for _, s := range tc.in {
				got = append(got, b.take(s).Text)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || b.spent != tc.clipped {
				t.Errorf("got %q (spent %v), want %q (%v)", got, b.spent, tc.want, tc.clipped)
			}
		})
	}
	if got := EscapedLen(`<a href="x">&'+`); got != len(`&lt;a href=&#34;x&#34;&gt;&amp;&#39;&#43;`) {
		t.Errorf("EscapedLen = %d", got)
	}
}
