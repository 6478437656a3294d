// Command skillfleet-bench measures skillfleet against its speed and memory targets and writes
// BENCHMARKS.md (make bench). It is a binary of its own so that the user binary does not link
// the suite generators and the raw-NATS baselines it needs.
package main

import (
	"os"

	"github.com/skillfleet/skillfleet/internal/cmdutil"
)

func main() {
	// The in-process benchmarks (dispatch, aggregate) measure the process `skillfleet test`
	// is, with its memory limit.
	cmdutil.LimitMemory()
	os.Exit(cmdutil.Execute(newCommand()))
}
