package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/internal/testutil"
	skillfleetv1 "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// hostile is text a hostile case or agent could produce.
const hostile = "]]> </failure><script>alert(1)</script> & \"q\" 'a'\x00NUL \x1b[31mred\x1b[0m " +
	"\x1b]52;c;Y3VybCBldmls\x07clip \x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\ \rover \u202Eevil\u202C \x07bell"

// fixture is a fixed run covering every status, multi-epoch confidence, command and prompt
// cases, long output and hostile text. It goes through a Builder so the goldens also pin
// the aggregation.
func fixture() Report {
	cmd := skillfleetv1.CaseKind_CASE_KIND_COMMAND
	prompt := skillfleetv1.CaseKind_CASE_KIND_PROMPT
	b := NewBuilder("r-abc", []PlannedCase{
		{Skill: "greeter", Case: "says hello", Kind: prompt, Epochs: 1, File: "skills/greeter/test.cases", Line: 4},
		{Skill: "greeter", Case: "waves", Kind: prompt, Epochs: 10, Confidence: 0.9, File: "skills/greeter/test.cases", Line: 11},
		{Skill: "greeter", Case: "mostly polite", Kind: prompt, Epochs: 10, Confidence: 0.9, File: "skills/greeter/test.cases", Line: 19},
		{Skill: "pdf-tools", Case: "extracts text", Kind: cmd, Epochs: 1, File: "skills/pdf-tools/tests/cases/extract.yaml", Line: 1},
		{Skill: "pdf-tools", Case: "summary is faithful", Kind: prompt, Epochs: 1, File: "skills/pdf-tools/test.cases", Line: 7},
		{Skill: "pdf-tools", Case: "large file", Kind: cmd, Epochs: 1, File: "skills/pdf-tools/tests/cases/large.yaml", Line: 1},
		{Skill: "pdf-tools", Case: "never ran", Kind: cmd, Epochs: 2, File: "skills/pdf-tools/tests/cases/later.yaml", Line: 1},
		{Skill: "pdf-tools", Case: "counts pages", Kind: cmd, Epochs: 1, File: "skills/pdf-tools/tests/cases/pages.yaml", Line: 1},
		{Skill: "zz-hostile", Case: "evil " + hostile, Kind: prompt, Epochs: 1, File: "skills/zz-hostile/test.cases", Line: 2},
	})
	timed := func(start, exec int64) func(*skillfleetv1.Result) {
		return func(r *skillfleetv1.Result) {
			r.RunId = "r-abc"
			r.Timings = &skillfleetv1.Timings{QueuedMs: 99999, SandboxStartMs: start, ExecutionMs: exec, TotalMs: 99999 + start + exec}
		}
	}
	add := func(r *skillfleetv1.Result) {
		if !b.Add(r) {
			panic(fmt.Sprintf("fixture result %s refused", r.GetJobId()))
		}
	}
	add(res("greeter", "says hello", 1, vPassed, timed(12, 1200)))
	for e := 1; e <= 10; e++ {
		v := vPassed
		if e == 3 || e == 7 {
			v = vFailed
		}
		add(res("greeter", "waves", e, v, timed(10, 800+int64(e))))
	}
	for e := 1; e <= 10; e++ {
		v := vPassed
		if e == 6 {
			v = vFailed
		}
		add(res("greeter", "mostly polite", e, v, timed(10, 700)))
	}
	var stderr strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&stderr, "pdftotext: warning %d: font not embedded\n", i)
	}
	stderr.WriteString("Traceback (most recent call last):\n  File \"extract.py\", line 9\nValueError: no text layer\n")
	add(res("pdf-tools", "extracts text", 1, vFailed, timed(40, 2300), func(r *skillfleetv1.Result) {
		r.Kind = cmd
		r.ExitCode = 1
		r.Stdout = "page 1:\n"
		r.Stderr = stderr.String()
		r.Output = ""
		r.Assertions = []*skillfleetv1.AssertionResult{
			{Type: "exit_code", Expected: "0", Actual: "1", Message: "exit code 1, want 0"},
			{Type: "stdout_contains", Expected: "Invoice", Actual: "page 1:\n", Message: "stdout does not contain \"Invoice\""},
			{Type: "stdout_json", Passed: true, Expected: "{}", Actual: "{}", Message: "ok"},
		}
	}))
	add(res("pdf-tools", "summary is faithful", 1, vErrored, timed(15, 4000), func(r *skillfleetv1.Result) {
		r.Reason = "judge unavailable: 503 Service Unavailable after 3 tries"
		r.Attempt = 3
		r.Output = "The document is an invoice for 3 items."
		r.Assertions = []*skillfleetv1.AssertionResult{
			{Type: "output_contains", Passed: true, Expected: "invoice", Actual: "an invoice for", Message: "output contains \"invoice\""},
			{Type: "semantic_match", Errored: true, Expected: "a faithful summary", Message: "judge could not answer"},
		}
	}))
	add(res("pdf-tools", "large file", 1, vTimedOut, timed(30, 60000), func(r *skillfleetv1.Result) {
		r.Reason = "timeout 60s: container killed"
		r.Stdout = "processing page 1\nprocessing page 2\n"
	}))
	add(res("pdf-tools", "counts pages", 1, vPassed, timed(20, 300), func(r *skillfleetv1.Result) {
		r.Assertions = []*skillfleetv1.AssertionResult{{Type: "exit_code", Passed: true, Expected: "0", Actual: "0", Message: "exit code 0"}}
	}))
	add(res("zz-hostile", "evil "+hostile, 1, vFailed, timed(1, 2), func(r *skillfleetv1.Result) {
		r.Output = hostile + "\nsecond line " + hostile
		r.Reason = hostile
		r.Assertions = []*skillfleetv1.AssertionResult{{Type: "output_not_contains", Expected: hostile, Actual: hostile, Message: "found " + hostile, Path: "$.a[\"]]>\"]"}}
	}))
	b.Skip("run deadline of 30m exceeded")
	return b.Report()
}

func TestGoldens(t *testing.T) {
	r := fixture()
	tests := []struct {
		file  string
		write func(io.Writer) error
	}{
		{"report.json", func(w io.Writer) error { return WriteJSON(w, r) }},
		{"report.junit.xml", func(w io.Writer) error { return WriteJUnit(w, r) }},
		{"report.txt", func(w io.Writer) error { return WriteText(w, r, TextOptions{}) }},
		{"report.color.txt", func(w io.Writer) error { return WriteText(w, r, TextOptions{Color: true}) }},
		{"report.counted.txt", func(w io.Writer) error {
			return WriteText(w, r, TextOptions{MaxPassedListed: 1, MaxOutputLines: 3})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tt.write(&buf); err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, filepath.Join("testdata", tt.file), buf.Bytes())
		})
	}
}

func TestFixtureVerdicts(t *testing.T) {
	r := fixture()
	want := Summary{Total: 9, Passed: 3, Failed: 3, Errored: 1, TimedOut: 1, Skipped: 1}
	if r.Summary != want {
		t.Errorf("summary = %+v, want %+v", r.Summary, want)
	}
	for _, c := range r.Cases {
		if c.Case == "waves" && (c.Status != StatusFailed || c.PassedEpochs != 8 || c.Interval == nil) {
			t.Errorf("waves: %+v", c)
		}
		if c.Case == "mostly polite" && (c.Status != StatusPassed || c.PassedEpochs != 9) {
			t.Errorf("mostly polite: %+v", c)
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	r := fixture()
	var buf bytes.Buffer
	if err := WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	got, err := FromJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Errorf("FromJSON(WriteJSON(r)) differs from r:\n got %+v\nwant %+v", got, r)
	}
}

func TestFromJSONErrors(t *testing.T) {
	tests := []struct{ name, in string }{
		{"empty", ""},
		{"not JSON", "<testsuites/>"},
		{"wrong type", `{"run": 3}`},
		{"trailing data", `{"run":"r"} {"run":"s"}`},
	}
	for _, tt := range tests {
		if _, err := FromJSON(strings.NewReader(tt.in)); err == nil {
			t.Errorf("%s: FromJSON(%q) succeeded", tt.name, tt.in)
		}
	}
	r, err := FromJSON(strings.NewReader(`{"run":"r","summary":{"total":1},"cases":[{"skill":"s","case":"c","status":"passed","from_the_future":true}]}`))
	if err != nil || len(r.Cases) != 1 || r.Cases[0].Assertions == nil {
		t.Errorf("a report with unknown fields: %+v, %v", r, err)
	}
}

// TestJUnitParses: the XML is well-formed, and the counts on every element match the
// elements under it and the report's summary.
func TestJUnitParses(t *testing.T) {
	r := fixture()
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, r); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
	for {
		if _, err := dec.Token(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("JUnit XML is not well-formed: %v", err)
		}
	}
	var doc junitSuites
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	s := r.Summary
	if doc.Tests != s.Total || doc.Failures != s.Failed || doc.Errors != s.Errored+s.TimedOut || doc.Skipped != s.Skipped+s.Pending {
		t.Errorf("testsuites counts tests=%d failures=%d errors=%d skipped=%d, summary %+v", doc.Tests, doc.Failures, doc.Errors, doc.Skipped, s)
	}
	if len(doc.Suites) != 3 {
		t.Errorf("%d testsuites, want one per skill (3)", len(doc.Suites))
	}
	var tests, failures, errs, skipped int
	for _, suite := range doc.Suites {
		var f, e, sk int
		for _, c := range suite.Cases {
			if c.Classname != suite.Name {
				t.Errorf("testcase classname %q in testsuite %q", c.Classname, suite.Name)
			}
			if c.Failure != nil {
				f++
			}
			if c.Error != nil {
				e++
				if c.Error.Type != StatusErrored && c.Error.Type != StatusTimedOut {
					t.Errorf("error type %q", c.Error.Type)
				}
			}
			if c.Skipped != nil {
				sk++
			}
		}
		if suite.Tests != len(suite.Cases) || suite.Failures != f || suite.Errors != e || suite.Skipped != sk {
			t.Errorf("testsuite %s says %d/%d/%d/%d, has %d/%d/%d/%d", suite.Name, suite.Tests, suite.Failures, suite.Errors, suite.Skipped, len(suite.Cases), f, e, sk)
		}
		tests, failures, errs, skipped = tests+suite.Tests, failures+f, errs+e, skipped+sk
	}
	if tests != doc.Tests || failures != doc.Failures || errs != doc.Errors || skipped != doc.Skipped {
		t.Error("testsuites totals are not the sums of the testsuite counts")
	}
}

// TestHostileText: hostile names and output survive as text, never as markup, escape
// sequences or characters XML 1.0 forbids.
func TestHostileText(t *testing.T) {
	r := fixture()
	var evil Case
	for _, c := range r.Cases {
		if c.Skill == "zz-hostile" {
			evil = c
		}
	}

	var x bytes.Buffer
	if err := WriteJUnit(&x, r); err != nil {
		t.Fatal(err)
	}
	if bytes.ContainsAny(x.Bytes(), "\x00\x1b\x07") || bytes.Contains(x.Bytes(), []byte("<script>")) || bytes.Contains(x.Bytes(), []byte("]]>")) {
		t.Errorf("JUnit XML carries raw hostile bytes or markup:\n%s", x.Bytes())
	}
	var doc junitSuites
	if err := xml.Unmarshal(x.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	jc := doc.Suites[2].Cases[0]
	if jc.Name != cleanXML(evil.Case) || !strings.Contains(jc.Name, "]]> </failure><script>") || strings.Contains(jc.Name, "\x1b") {
		t.Errorf("testcase name read back as %q", jc.Name)
	}
	if jc.Failure == nil || !strings.Contains(jc.Failure.Text, "<script>alert(1)</script>") || strings.ContainsAny(jc.Failure.Text, "\x00\x1b\x07") {
		t.Errorf("failure read back as %+v", jc.Failure)
	}

	for _, color := range []bool{false, true} {
		var txt bytes.Buffer
		if err := WriteText(&txt, r, TextOptions{Color: color}); err != nil {
			t.Fatal(err)
		}
		out := txt.String()
		if strings.ContainsAny(out, "\x00\x07\r\u202E\u009b") {
			t.Errorf("color=%v: text carries control characters: %q", color, out)
		}
		// The only escape sequences left are the renderer's own SGR colours.
		rest := regexp.MustCompile(`\x1b\[[0-9;]*m`).ReplaceAllString(out, "")
		if strings.Contains(rest, "\x1b") || (!color && rest != out) {
			t.Errorf("color=%v: foreign escape sequences in text output: %q", color, out)
		}
		if !strings.Contains(out, "<script>alert(1)</script>") {
			t.Errorf("color=%v: hostile text lost rather than shown inert", color)
		}
	}
}

// TestTextMidRun: a report taken while the run goes on shows pending cases and counts
// passed cases when asked to.
func TestTextMidRun(t *testing.T) {
	b := NewBuilder(testRun, []PlannedCase{plan("s", "a", 1, 0), plan("s", "b", 3, 0), plan("s", "c", 1, 0)})
	b.Add(res("s", "a", 1, vPassed))
	b.Add(res("s", "b", 1, vPassed))
	b.Add(res("s", "c", 1, vPassed))
	var buf bytes.Buffer
	if err := WriteText(&buf, b.Report(), TextOptions{MaxPassedListed: -1}); err != nil {
		t.Fatal(err)
	}
	want := "PENDING  s/b  s/test.cases:3\n    1 of 3 epochs reported\n\n" +
		"2 passed cases (not listed)\n\n" +
		"3 cases: 2 passed, 0 failed, 0 errored, 0 timed out, 0 skipped, 1 pending (run r-test)\n"
	if got := buf.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	var x bytes.Buffer
	if err := WriteJUnit(&x, b.Report()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(x.String(), `<skipped message="pending: 1 of 3 epochs reported">`) {
		t.Errorf("pending case not skipped in JUnit:\n%s", x.String())
	}
}
