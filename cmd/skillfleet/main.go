// Command skillfleet is the user CLI: validate, lint, deps, init, to-prompt and, in time,
// plan, test, submit and runs. The commands live in package cli.
package main

import (
	"os"
	"runtime/debug"

	"github.com/skillfleet/skillfleet/cmd/skillfleet/cli"
)

// softMemoryLimit bounds the CLI's heap growth between collections. Planning a large suite
// allocates about ten times its live heap in short-lived YAML trees; without a limit that
// garbage, not the data, sets the peak RSS. GOMEMLIMIT overrides it.
const softMemoryLimit = 256 << 20

func main() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(softMemoryLimit)
	}
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
