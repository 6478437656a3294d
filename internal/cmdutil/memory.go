package cmdutil

import (
	"os"
	"runtime/debug"
)

// softMemoryLimit bounds the CLI's heap growth between collections. Planning a large suite
// allocates about ten times its live heap in short-lived YAML trees; without a limit that
// garbage, not the data, sets the peak RSS.
const softMemoryLimit = 256 << 20

// LimitMemory sets the soft memory limit of the user CLI, unless GOMEMLIMIT sets one. The
// benchmark binary calls it too, so that it measures the process `skillfleet test` is.
func LimitMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(softMemoryLimit)
	}
}
