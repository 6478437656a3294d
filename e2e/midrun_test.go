package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/coordinator"
)

// exampleJobs is how many jobs the example suite plans, and exampleJobsRun how many of them
// run: default_is_dev (runs: 5, confidence: 0.8) dispatches four epochs first, and their
// verdicts settle the case whether they all pass or, without an agent, all error, so
// curtailment never publishes the fifth.
const (
	exampleJobs    = 21
	exampleJobsRun = 20
)

// submitted is the end of a `skillfleet submit --follow`.
type submitted struct {
	code        int
	out, errOut string
	err         error // the submit did not end in time
}

// submitExamples submits the example suite with --follow --format json in the background.
func submitExamples(t *testing.T, api, tokenFile string) <-chan submitted {
	t.Helper()
	done := make(chan submitted, 1)
	bin := binary(t, "skillfleet")
	go func() {
		code, out, errOut, err := runCLIBounded(bin, 5*time.Minute, "submit", "--coordinator", api, "--token-file", tokenFile,
			"--follow", "--format", "json", examples)
		done <- submitted{code, out, errOut, err}
	}()
	return done
}

// midRun waits until the only run has finished at least 3 of its jobs but not all, and returns
// how many. A run that ends first fails the test: what it was to prove was not exercised.
func midRun(t *testing.T, api, token string) int {
	t.Helper()
	client := coordinator.NewClient(api, token, nil)
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		runs, err := client.List(context.Background())
		if err != nil || len(runs) == 0 {
			continue
		}
		switch n := int(runs[0].GetDoneJobs()); {
		case n >= int(runs[0].GetTotalJobs()):
			t.Fatal("the run finished before the disruption; the test proves nothing")
		case n >= 3:
			return n
		}
	}
	t.Fatal("the run never got under way")
	return 0
}

// checkExampleReport checks a finished submit of the example suite without an agent: exit 1,
// 17 cases of which the 11 command cases passed and the 6 prompt cases errored.
func checkExampleReport(t *testing.T, res submitted, after string) {
	t.Helper()
	if res.err != nil {
		t.Fatal(res.err)
	}
	if res.code != 1 {
		t.Fatalf("submit exit %d, want 1 (prompt cases have no agent)\nstdout:\n%s\nstderr:\n%s", res.code, res.out, res.errOut)
	}
	var rep summary
	if err := json.Unmarshal([]byte(res.out), &rep); err != nil {
		t.Fatalf("stdout is not a JSON report: %v\n%s", err, res.out)
	}
	if s := rep.Summary; s.Total != 17 || s.Passed != 11 || s.Errored != 6 || s.Failed+s.TimedOut+s.Skipped != 0 {
		t.Errorf("summary after %s: %+v, want 17 cases: 11 passed, 6 errored", after, s)
	}
}
