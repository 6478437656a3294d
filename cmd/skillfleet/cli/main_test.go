package cli

import (
	"fmt"
	"os"
	"testing"
)

// TestMain points the default history of `skillfleet test` into a temporary state directory,
// so that the tests never write to the user's.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "skillfleet-cli-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_STATE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
