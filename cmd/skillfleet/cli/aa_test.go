package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/comparison"
	"github.com/skillfleet/skillfleet/fleet/fleettest"
	runreport "github.com/skillfleet/skillfleet/report"
)

// aaSuite writes a suite of one skill with command cases: two that always pass, one that
// always fails, and coins coin-NN. The fleet's executor decides them by probability.
func aaSuite(t *testing.T, coins int) (root string, pass map[string]float64) {
	t.Helper()
	root = t.TempDir()
	pass = map[string]float64{"sure-1": 1, "sure-2": 1, "never": 0}
	for i := range coins {
		pass[fmt.Sprintf("coin-%02d", i)] = 0.5
	}
	files := map[string]string{
		"noisy/SKILL.md": "---\nname: noisy\ndescription: A fixture skill whose cases pass by chance. Use when testing A/A runs.\nmetadata:\n  version: \"1.0.0\"\n---\n\n# Noisy\n\nFlip a coin.\n",
	}
	for name := range pass {
		files["noisy/tests/cases/"+name+".yaml"] = "name: " + name + "\ninput:\n  command: \"true\"\nexpected:\n  exit-code: 0\n"
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root, pass
}

// TestAARun: `submit --aa` of a suite whose cases pass with known probabilities (1, 0 and
// 0.5, one epoch each). Both arms run every case; a case that always passes or always fails
// agrees in a and a2, and a coin flips with probability 2·0.5·0.5 = 0.5, so the suite's
// expected flip rate is 0.5·coins/(coins+3). The report's noise floor must count the flips
// the cases' outcomes show, put the expected rate inside its 95% Wilson interval (the seed is
// fixed, so the draw is the same every time), and give the smallest detectable difference
// the formula gives, solved here: for one epoch the variance of a case's difference is the
// flip rate f, and mde is the δ with δ·√n = 1.959964·√(f + δ) + 0.841621·√(f + δ − δ²), at
// least 6/n (stats/testdata/power.py).
func TestAARun(t *testing.T) {
	const coins = 60
	root, pass := aaSuite(t, coins)
	r := startRemoteWith(t, &fleettest.Executor{PassProbability: pass, Seed: 33})

	code, out, errOut := run("plan", "--aa", "--format", "json", root)
	if code != ExitOK {
		t.Fatalf("plan --aa: exit %d\n%s%s", code, out, errOut)
	}
	var doc struct{ Jobs []planJob }
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	arms := map[string]int{}
	for _, j := range doc.Jobs {
		arms[j.Arm]++
	}
	if n := len(pass); arms[""] != n || arms["a2"] != n || len(doc.Jobs) != 2*n {
		t.Fatalf("plan --aa: jobs per arm %v, want %d with_skill and %d a2", arms, n, n)
	}

	code, out, errOut = run("submit", "--coordinator", r.url, "--token", fleetToken, "--follow", "--aa", "--format", "json", root)
	// "never" fails in the with_skill arm, and half the coins: the run fails.
	if code != ExitErrors {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	rep, err := runreport.FromJSON(strings.NewReader(out))
	if err != nil {
		t.Fatalf("stdout is not a JSON report: %v\n%s", err, out)
	}
	var cmp comparison.JSONReport
	if err := json.Unmarshal(rep.Comparison, &cmp); err != nil || cmp.Noise == nil {
		t.Fatalf("no noise floor in the report's comparison (%v):\n%s\nstderr:\n%s", err, out, errOut)
	}
	n := cmp.Noise
	if n.Cases != len(pass) || len(n.PerCase) != len(pass) {
		t.Fatalf("noise floor over %d paired cases (%d listed), want %d", n.Cases, len(n.PerCase), len(pass))
	}
	// The flips, counted here from each case's outcomes in both arms of the report.
	outcome := map[string]map[string]string{}
	for _, c := range rep.Cases {
		arm := c.Arm
		if arm == "" {
			arm = "a"
		}
		if outcome[c.Case] == nil {
			outcome[c.Case] = map[string]string{}
		}
		outcome[c.Case][arm] = string(c.Status)
	}
	flips := 0
	for name, p := range pass {
		o := outcome[name]
		if o["a"] == "" || o["a2"] == "" {
			t.Fatalf("case %s: outcomes %v, want one per arm", name, o)
		}
		if o["a"] != o["a2"] {
			flips++
			if p == 0 || p == 1 {
				t.Errorf("case %s (pass probability %v) flipped: %v", name, p, o)
			}
		}
	}
	for _, c := range n.PerCase {
		o := outcome[c.Case]
		if c.Agree != (o["a"] == o["a2"]) {
			t.Errorf("case %s: agree %v, but the report has %v", c.Case, c.Agree, o)
		}
	}
	if n.Flipped != flips {
		t.Errorf("%d flips reported, %d in the report's cases", n.Flipped, flips)
	}
	expected := 0.5 * coins / float64(len(pass))
	if !n.Interval.Contains(expected) {
		t.Errorf("flip rate %v, 95%% interval %+v: the expected %v is outside", n.FlipRate, n.Interval, expected)
	}
	if n.IntervalMethod != "wilson-95" {
		t.Errorf("interval method %q", n.IntervalMethod)
	}
	f, cases := float64(flips)/float64(len(pass)), float64(len(pass))
	gap := func(d float64) float64 {
		return d*math.Sqrt(cases) - 1.959964*math.Sqrt(f+d) - 0.841621*math.Sqrt(f+d-d*d)
	}
	lo, hi := 1e-9, 1.0
	for range 60 {
		if mid := (lo + hi) / 2; gap(mid) < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	want := math.Max(hi, 6/cases)
	if n.MinDetectable == nil || math.Abs(*n.MinDetectable-want) > 1e-5 {
		t.Errorf("min detectable %v, want %v", n.MinDetectable, want)
	}

	// The text report says the same in words.
	code, out, errOut = run("submit", "--coordinator", r.url, "--token", fleetToken, "--follow", "--aa", root)
	if code != ExitErrors || !strings.Contains(out, "noise floor (A/A") || !strings.Contains(out, "95% Wilson interval") ||
		!strings.Contains(out, "points") || !strings.Contains(out, "mcnemar-exact") {
		t.Errorf("text report (exit %d):\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := run("submit", "--coordinator", r.url, "--token", fleetToken, "--follow", "--aa", "--baseline", "without-skill", root); code != ExitUsage || !strings.Contains(errOut, "--aa") {
		t.Errorf("--aa with --baseline: exit %d, %s", code, errOut)
	}
}
