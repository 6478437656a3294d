package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/history"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	runreport "github.com/skillfleet/skillfleet/report"
)

// seedHistory stores eight finished runs of suite "nightly": case "flips" alternates, "steady"
// passes, and "infra" alternates between passes and sandbox failures.
func seedHistory(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "history.db")
	s, err := history.Open(context.Background(), history.Options{Target: db})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t0 := time.Date(2026, 6, 1, 2, 0, 0, 0, time.UTC)
	for i := range 8 {
		id := fmt.Sprintf("run-%d", i)
		at := t0.Add(time.Duration(i) * 24 * time.Hour)
		var rows []history.Result
		for _, c := range []struct{ name, verdict, class string }{
			{"flips", []string{"passed", "failed"}[i%2], []string{"", history.ClassAssertion}[i%2]},
			{"steady", "passed", ""},
			{"infra", []string{"passed", "errored"}[i%2], []string{"", history.ClassSandbox}[i%2]},
		} {
			rows = append(rows, history.Result{RunID: id, JobID: c.name, Suite: "nightly", Lane: "scheduled", Skill: "sk", Case: c.name,
				Agent: "builtin", Model: "m1", Arm: "with_skill", Epoch: 1, Attempt: 1, Verdict: c.verdict, ReasonClass: c.class,
				FinishedAt: at, RecordedAt: at})
		}
		if err := s.WriteResults(context.Background(), rows); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteRun(context.Background(), history.Run{ID: id, Suite: "nightly", Lane: "scheduled", State: "completed",
			CreatedAt: at, FinishedAt: at.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func TestFlakyCommand(t *testing.T) {
	t.Setenv("SKILLFLEET_COORDINATOR", "")
	db := seedHistory(t)
	tests := []struct {
		name   string
		args   []string
		code   int
		golden string
		stderr string
	}{
		{name: "text", args: []string{"flaky", "--history", db, "--suite", "nightly"}, golden: "flaky.txt"},
		{name: "json", args: []string{"flaky", "--history", db, "--suite", "nightly", "--lane", "scheduled", "--format", "json"}, golden: "flaky.json"},
		{name: "another lane", args: []string{"flaky", "--history", db, "--suite", "nightly", "--lane", "ondemand"}, golden: "flaky-none.txt"},
		{name: "a bad lane", args: []string{"flaky", "--history", db, "--suite", "nightly", "--lane", "nightly"}, code: ExitUsage, stderr: "--lane"},
		{name: "no history file", args: []string{"flaky", "--history", db + ".missing", "--suite", "nightly"}, code: 1, stderr: "no history at"},
		{name: "history off", args: []string{"flaky", "--history", "off", "--suite", "nightly"}, code: ExitUsage, stderr: "--history off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, errOut, tt.code, tt.stderr)
			}
			if tt.golden != "" {
				checkGolden(t, tt.golden, strings.ReplaceAll(out, db, "HISTORY"))
			}
		})
	}
	_, out, _ := run("flaky", "--history", db, "--suite", "nightly", "--format", "json")
	var l coordinator.FlakyList
	if err := json.Unmarshal([]byte(out), &l); err != nil || len(l.Cells) != 1 || l.Cells[0].Case != "flips" {
		t.Errorf("flaky list %+v (%v): want only the flipping case, not the one failing for the sandbox", l, err)
	}
}

func TestQuarantineFlags(t *testing.T) {
	list := filepath.Join(t.TempDir(), "q")
	if err := os.WriteFile(list, []byte("sk/broken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		q       quarantineFlags
		flaky   bool
		cells   int
		wantErr bool
	}{
		{quarantineFlags{}, false, 0, false},
		{quarantineFlags{mode: "flaky"}, true, 0, false},
		{quarantineFlags{file: list}, false, 1, false},
		{quarantineFlags{mode: "sometimes"}, false, 0, true},
		{quarantineFlags{file: list + ".missing"}, false, 0, true},
	}
	for _, tt := range tests {
		p, err := tt.q.policy()
		if (err != nil) != tt.wantErr || p.Flaky != tt.flaky || len(p.Cells) != tt.cells {
			t.Errorf("%+v: %+v, %v", tt.q, p, err)
		}
	}
}

// A failing case the quarantine covers is reported, marked, and the exit status is 0.
func TestFinishRunQuarantine(t *testing.T) {
	rep := runreport.Report{Run: "r1", Cases: []runreport.Case{
		{Skill: "sk", Case: "fine", Status: runreport.StatusPassed, Epochs: 1, PassedEpochs: 1, Confidence: 1},
		{Skill: "sk", Case: "broken", Status: runreport.StatusFailed, Epochs: 1, FailedEpochs: 1, Confidence: 1},
	}, Summary: runreport.Summary{Total: 2, Passed: 1, Failed: 1}}
	st := &pb.RunStatus{Id: "r1", State: pb.RunState_RUN_STATE_COMPLETED}
	list := filepath.Join(t.TempDir(), "q")
	if err := os.WriteFile(list, []byte("sk/broken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := (&quarantineFlags{file: list}).policy()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		quarantine func(*runreport.Report)
		fails      bool
	}{
		{"without", nil, true},
		{"with the list", quarantineReport(p, "suite"), false},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		err := finishRun(&env{stdout: &out, stderr: &bytes.Buffer{}}, st, rep, outputFlags{format: "text", quarantine: tt.quarantine})
		var ee *exitError
		if failed := errors.As(err, &ee); failed != tt.fails {
			t.Errorf("%s: err %v, want failing %v", tt.name, err, tt.fails)
		}
		if !tt.fails && !strings.Contains(out.String(), "[quarantined: listed]") {
			t.Errorf("%s: the quarantined case is not marked:\n%s", tt.name, out.String())
		}
	}
}
