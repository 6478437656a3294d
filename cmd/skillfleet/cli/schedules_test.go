package cli

import (
	"strings"
	"testing"
)

func TestSuitesAndSchedulesCommands(t *testing.T) {
	r := startRemote(t)
	remote := []string{"--coordinator", r.url, "--token", fleetToken}
	cli := func(args ...string) (int, string, string) { return run(append(args, remote...)...) }

	steps := []struct {
		name     string
		args     []string
		code     int
		out, err string // substrings wanted
	}{
		{"push", []string{"suites", "push", "nightly", examples}, ExitOK, "suite nightly: sha256:", ""},
		{"push an invalid suite", []string{"suites", "push", "broken", "testdata/does-not-exist"}, ExitUsage, "", ""},
		{"list suites", []string{"suites", "list"}, ExitOK, "nightly", ""},
		{"bad cron", []string{"schedules", "add", "n2am", "--suite", "nightly", "--cron", "0 2 * *"}, ExitUsage, "", "expected exactly 5 fields"},
		{"unknown suite", []string{"schedules", "add", "n2am", "--suite", "weekly", "--cron", "@daily"}, ExitErrors, "", "404"},
		{"missing flags", []string{"schedules", "add", "n2am"}, ExitUsage, "", "--suite and --cron are required"},
		{"add", []string{"schedules", "add", "n2am", "--suite", "nightly", "--cron", "0 2 * * *"}, ExitOK, `schedule n2am: suite nightly at "0 2 * * *"`, ""},
		{"add again", []string{"schedules", "add", "n2am", "--suite", "nightly", "--cron", "@daily"}, ExitErrors, "", "409"},
		{"list", []string{"schedules", "list", "--format", "json"}, ExitOK, `"cron": "0 2 * * *"`, ""},
		{"remove", []string{"schedules", "remove", "n2am"}, ExitOK, "schedule n2am removed", ""},
		{"remove again", []string{"schedules", "remove", "n2am"}, ExitErrors, "", "404"},
		{"list after remove", []string{"schedules", "list", "--format", "json"}, ExitOK, `"schedules": []`, ""},
	}
	for _, s := range steps {
		code, out, errOut := cli(s.args...)
		if code != s.code || !strings.Contains(out, s.out) || !strings.Contains(errOut, s.err) {
			t.Fatalf("%s: exit %d (want %d)\nstdout: %s\nstderr: %s\nwant stdout containing %q, stderr containing %q", s.name, code, s.code, out, errOut, s.out, s.err)
		}
	}
}
