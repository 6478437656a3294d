package cli

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/fleet"
	"github.com/skillfleet/skillfleet/fleet/fleettest"
	"github.com/skillfleet/skillfleet/internal/tenant"
	"github.com/skillfleet/skillfleet/internal/testutil"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/worker"
)

// TestAuditAndTeamFlags: suites and schedules act in the token's team (an admin's --team in
// the one it names), the listing shows each suite's team, and `skillfleet audit` shows a
// member its team's records only and an admin every team's.
func TestAuditAndTeamFlags(t *testing.T) {
	t.Setenv("SKILLFLEET_TOKEN", "")
	t.Setenv("SKILLFLEET_COORDINATOR", "")
	f, err := fleet.StartInProcess(context.Background(), fleet.InProcessConfig{
		DataDir: t.TempDir(), Workers: 1, Slots: 1, Queue: queue.DefaultConfig(), Executor: &fleettest.Executor{},
		Worker:  worker.Config{RetryDelay: 50 * time.Millisecond, FetchWait: 100 * time.Millisecond, DrainGrace: time.Second},
		Log:     zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)),
		History: fleet.HistoryConfig{Target: filepath.Join(t.TempDir(), "history.db")},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close(context.Background()) })
	const tokA, tokB, tokAdmin = "cli-team-a-token-000001", "cli-team-b-token-000002", "cli-admin-token-0000003"
	srv := httptest.NewServer(f.Coordinator.Handler(coordinator.APIConfig{Tokens: []coordinator.Token{
		{Name: "alice", Secret: tokA, Team: "teamA"},
		{Name: "bob", Secret: tokB, Team: "teamB"},
		{Name: "root", Secret: tokAdmin, Team: "ops", Role: tenant.Admin},
	}}))
	t.Cleanup(srv.Close)
	as := func(tok string, args ...string) (int, string, string) {
		return run(append(args, "--coordinator", srv.URL, "--token", tok)...)
	}
	for _, s := range []struct {
		name     string
		tok      string
		args     []string
		code     int
		out, err string
	}{
		{"teamA pushes", tokA, []string{"suites", "push", "nightly", examples}, ExitOK, "suite nightly: sha256:", ""},
		{"teamB pushes the same name", tokB, []string{"suites", "push", "nightly", examples}, ExitOK, "suite nightly: sha256:", ""},
		{"teamB cannot push into teamA", tokB, []string{"suites", "push", "nightly", examples, "--team", "teamA"}, ExitErrors, "", "404"},
		{"the admin schedules in teamA", tokAdmin, []string{"schedules", "add", "n2am", "--suite", "nightly", "--cron", "0 2 * * *", "--team", "teamA"}, ExitOK, "schedule n2am", ""},
		{"teamB cannot remove it", tokB, []string{"schedules", "remove", "n2am"}, ExitErrors, "", "404"},
		{"teamA sees its suite", tokA, []string{"suites", "list"}, ExitOK, "teamA  nightly", ""},
		{"teamA sees its schedule", tokA, []string{"schedules", "list"}, ExitOK, "teamA  n2am", ""},
	} {
		code, out, errOut := as(s.tok, s.args...)
		if code != s.code || !strings.Contains(out, s.out) || !strings.Contains(errOut, s.err) {
			t.Fatalf("%s: exit %d (want %d)\nstdout: %s\nstderr: %s", s.name, code, s.code, out, errOut)
		}
	}
	if _, out, _ := as(tokA, "suites", "list"); strings.Contains(out, "teamB") {
		t.Errorf("teamA's suite list shows teamB's:\n%s", out)
	}
	// The audit log is written off the request path: wait for the admin's schedule to be in it.
	testutil.Eventually(t, 10*time.Second, 50*time.Millisecond, func() bool {
		_, out, _ := as(tokA, "audit")
		return strings.Contains(out, "schedule.add")
	}, "the schedule's audit record")
	code, out, errOut := as(tokA, "audit")
	if code != ExitOK || !strings.Contains(out, "alice") || !strings.Contains(out, "root") || strings.Contains(out, "bob") {
		t.Errorf("teamA's audit: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = as(tokAdmin, "audit", "--team", "teamB", "--format", "json")
	if code != ExitOK || !strings.Contains(out, `"actor": "bob"`) || strings.Contains(out, `"actor": "alice"`) {
		t.Errorf("the admin's audit of teamB: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := as(tokB, "audit", "--team", "teamA"); code != ExitErrors || !strings.Contains(errOut, "404") {
		t.Errorf("teamB reading teamA's audit: exit %d %s", code, errOut)
	}
}
