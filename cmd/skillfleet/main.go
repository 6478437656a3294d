// Command skillfleet is the user CLI: validate, lint, deps, init, to-prompt, plan, test,
// submit and runs. The commands live in package cli.
package main

import (
	"os"

	"github.com/skillfleet/skillfleet/cmd/skillfleet/cli"
	"github.com/skillfleet/skillfleet/internal/cmdutil"
)

func main() {
	cmdutil.LimitMemory()
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
