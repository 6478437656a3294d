package cli

import (
	"strings"
	"testing"
)

// TestHistoryURLPasswordRefused: a --history URL with a password in it (on the command line,
// seen by whoever lists processes) is a usage error naming the variable to use instead, and
// the error does not repeat the password.
func TestHistoryURLPasswordRefused(t *testing.T) {
	for _, args := range [][]string{
		{"runs", "list", "--history", "postgres://fleet:hunter2pw@127.0.0.1:1/skillfleet"},
		{"runs", "list", "--history", "postgres://fleet@127.0.0.1:1/skillfleet?password=hunter2pw"},
		{"flaky", "--history", "postgres://fleet:hunter2pw@127.0.0.1:1/skillfleet"},
	} {
		code, _, errOut := run(args...)
		if code != ExitUsage || !strings.Contains(errOut, "$SKILLFLEET_HISTORY_PASSWORD") {
			t.Errorf("%v: exit %d, want a usage error naming $SKILLFLEET_HISTORY_PASSWORD\n%s", args, code, errOut)
		}
		if strings.Contains(errOut, "hunter2pw") {
			t.Errorf("%v: the error repeats the password:\n%s", args, errOut)
		}
	}
}
