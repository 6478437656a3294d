package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/agent/agenttest"
	"github.com/skillfleet/skillfleet/internal/browsertest"
)

// hostile is what the agent answers and part of a case's name: markup that would run a script
// if a page let it through.
const hostile = `<script>alert("xss")</script><img src=x onerror=alert(2)>`

// viewerSuite is a skill with one prompt case that fails (the answer lacks PROD) and carries a
// hostile name, and one that passes.
func viewerSuite(t *testing.T) string {
	root := filepath.Join(t.TempDir(), "viewer-suite")
	if err := os.MkdirAll(filepath.Join(root, "deploy-env"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "deploy-env"), "SKILL.md", `---
name: deploy-env
description: Picks the deployment environment. Use when asked where to deploy.
test:
  cases: cases.yaml
---

Answer with the environment's name.
`)
	writeFile(t, filepath.Join(root, "deploy-env"), "cases.yaml", `cases:
  - name: 'wants-prod `+strings.ReplaceAll(hostile, "'", "''")+`'
    input: "Where does the release go?"
    assertions:
      output_contains: ["PROD"]
  - name: says-dev
    input: "Where do experiments go?"
    assertions:
      output_contains: ["DEV"]
`)
	return root
}

// TestWebViewer opens a finished run in headless Chromium: from the runs list, the failed case
// is two clicks away (run, case) after logging in, shows its evidence and the transcript; the
// hostile case name and output render as text and run nothing; a GET cannot cancel and a
// viewer token cannot either; the HTML report opens from a file and holds the JSON report's
// verdicts. Screenshots of each page go to $SKILLFLEET_SCREENSHOTS (or the test's directory).
func TestWebViewer(t *testing.T) {
	model := agenttest.NewFunc(t, func(int, agenttest.Request) agenttest.Reply {
		return agenttest.Text("Deploy to DEV. "+hostile, 120, 30)
	})
	f := startFleet(t, nil, "--model", "stand-in", "--model-base-url", model.BaseURL())
	root := viewerSuite(t)
	htmlReport := filepath.Join(t.TempDir(), "report.html")
	code, out, errOut := runCLI(t, 5*time.Minute, "submit", "--coordinator", f.api, "--token-file", f.tokenFile,
		"--follow", "--format", "json", "--name", "viewer", root)
	if code != 1 {
		t.Fatalf("submit exit %d, want 1 (one case fails)\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var rep struct {
		Run   string `json:"run"`
		Cases []struct {
			Skill, Case, Status string
		} `json:"cases"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not a JSON report: %v\n%s", err, out)
	}
	failedName := ""
	for _, c := range rep.Cases {
		if c.Status == "failed" {
			failedName = c.Case
		}
	}
	if failedName == "" || !strings.Contains(failedName, "<script>") {
		t.Fatalf("cases %+v: want the hostile case failed", rep.Cases)
	}

	b := browsertest.Start(t)
	token, err := os.ReadFile(f.tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	p := b.Open(t, f.api+"/")
	p.Screenshot("login")
	p.Fill("#token", strings.TrimSpace(string(token)))
	p.Submit("#token")
	cookies := p.Cookies()
	if len(cookies) == 0 {
		t.Fatal("the login set no session cookie")
	}
	for _, c := range cookies {
		if !c.HTTPOnly || c.SameSite != "Strict" {
			t.Errorf("cookie %s: HttpOnly %v SameSite %q, want HttpOnly and Strict", c.Name, c.HTTPOnly, c.SameSite)
		}
	}
	if !strings.Contains(p.Text("body"), rep.Run) {
		t.Fatalf("the runs list (%s) does not show run %s:\n%s", p.URL(), rep.Run, p.HTML())
	}
	p.Screenshot("runs")

	p.ClickLink(rep.Run) // click 1: the run
	body := p.Text("body")
	for _, want := range []string{"failed", "passed", "deploy-env"} {
		if !strings.Contains(body, want) {
			t.Errorf("the run page lacks %q:\n%s", want, body)
		}
	}
	p.Screenshot("run")

	p.ClickLink(failedName) // click 2: the failed case, by its hostile name shown as text
	body = p.Text("body")
	for _, want := range []string{failedName, "output_contains", "PROD", "Deploy to DEV.", hostile, "Where does the release go?"} {
		if !strings.Contains(body, want) {
			t.Errorf("the case page lacks %q (evidence, transcript, the payload as text):\n%s", want, body)
		}
	}
	p.Screenshot("case")
	p.AssertNoDialogs()
	if n := p.Count("img[src='x']"); n != 0 {
		t.Errorf("the payload's <img> became markup %d times", n)
	}

	// No state change on GET, and cancelling needs a POST with the session's CSRF token: with
	// the browser's own session cookie, a GET and a bare POST are both refused.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	cancelURL := f.api + "/runs/" + url.PathEscape(rep.Run) + "/cancel"
	send := func(method string) int {
		req, err := http.NewRequest(method, cancelURL, strings.NewReader(""))
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
		return resp.StatusCode
	}
	if code := send(http.MethodGet); code < 400 {
		t.Errorf("GET cancel with a session answered %d, want a refusal", code)
	}
	if code := send(http.MethodPost); code != http.StatusForbidden {
		t.Errorf("POST cancel with a session but no CSRF token answered %d, want 403", code)
	}

	// The HTML report opens from a file, with the JSON report's verdicts, and runs nothing.
	code, out, errOut = runCLI(t, time.Minute, "runs", "report", "--coordinator", f.api, "--token-file", f.tokenFile, "--format", "html", rep.Run)
	if code != 0 && code != 1 {
		t.Fatalf("runs report --format html: exit %d\n%s", code, errOut)
	}
	if err := os.WriteFile(htmlReport, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	r := b.Open(t, "file://"+htmlReport)
	text := r.Text("body")
	for _, c := range rep.Cases {
		if !strings.Contains(text, c.Case) {
			t.Errorf("the HTML report lacks case %q", c.Case)
		}
	}
	if !strings.Contains(text, "failed") || !strings.Contains(text, "passed") {
		t.Errorf("the HTML report lacks the verdicts:\n%s", text)
	}
	r.Screenshot("html-report")
	r.AssertNoDialogs()
}
