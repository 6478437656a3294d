package cmdutil

import (
	"os"
	"runtime/debug"
)

// softMemoryLimit bounds the CLI's heap growth between collections. Planning a large suite
// allocated about ten times its live heap in short-lived YAML trees, and still does for case
// files yaml.v3 reads (the fast reader of internal/yamlstrict reuses its trees); without a
// limit that garbage, not the data, sets the peak RSS.
const softMemoryLimit = 256 << 20

// LimitMemory sets the soft memory limit of the user CLI, unless GOMEMLIMIT sets one. The
// benchmark binary calls it too, so that it measures the process `skillfleet test` is.
func LimitMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(softMemoryLimit)
	}
}

// compareMemoryLimit is the soft limit while comparing runs: a comparison holds both runs'
// results (about 300 MB for two runs of 100,000 cases of 3 epochs), and under the planning
// limit above the collector would run without pause.
const compareMemoryLimit = 1 << 30

// LimitMemoryForComparison raises the soft memory limit for a comparison of runs, unless
// GOMEMLIMIT sets one.
func LimitMemoryForComparison() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(compareMemoryLimit)
	}
}

// LimitDaemonMemory sets a daemon's soft memory limit to limit bytes (0: none), unless
// GOMEMLIMIT sets one: the collector then works harder as the heap nears it, instead of
// letting garbage double a large live heap.
func LimitDaemonMemory(limit int64) {
	if os.Getenv("GOMEMLIMIT") == "" && limit > 0 {
		debug.SetMemoryLimit(limit)
	}
}
