// Package cli implements the skillfleet command line. Each command lives in its own file and
// is registered in commands(); Main runs one invocation with explicit arguments and writers,
// so tests drive the CLI exactly as a user does.
package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Exit codes.
const (
	ExitOK     = 0 // no errors (warnings allowed)
	ExitErrors = 1 // the input has errors, or the command failed
	ExitUsage  = 2 // bad flags, missing arguments, unknown format
	// ExitCostCap: the run stopped at its cost cap (--max-cost); its report is partial. Apart
	// from 1 so that a pipeline can tell "the suite failed" from "the money ran out".
	ExitCostCap = 3
)

// env is what every command needs: where to write.
type env struct {
	stdout, stderr io.Writer
}

// commands lists the subcommands. A new command is a file with a constructor, added here.
func commands() []func(*env) *cobra.Command {
	return []func(*env) *cobra.Command{
		newValidateCommand,
		newLintCommand,
		newDepsCommand,
		newInitCommand,
		newToPromptCommand,
		newPlanCommand,
		newTestCommand,
		newSubmitCommand,
		newRunsCommand,
		newSuitesCommand,
		newSchedulesCommand,
		newCompareCommand,
		newFlakyCommand,
		newAuditCommand,
		newUsageCommand,
		newViewCommand,
		newSandboxCommand,
	}
}

// Main runs the CLI with args (without the program name) and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	root := NewRootCommand(stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "skillfleet: %v\n", ee.err)
		}
		return ee.code
	}
	// Everything cobra rejects before a command runs (unknown command or flag, wrong number of
	// arguments) is a usage error.
	fmt.Fprintf(stderr, "skillfleet: %v\nRun 'skillfleet --help' for usage.\n", err)
	return ExitUsage
}

// NewRootCommand builds the command tree writing to stdout and stderr.
func NewRootCommand(stdout, stderr io.Writer) *cobra.Command {
	e := &env{stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "skillfleet",
		Short: "Validate, lint and test Agent Skills (SKILL.md) at fleet scale",
		// Errors are printed once, by Main, with the exit code they map to.
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_ = cmd.Help()
			return usageErrorf("a command is required")
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErrorf("%v", err) })
	root.CompletionOptions.DisableDefaultCmd = true
	for _, newCmd := range commands() {
		root.AddCommand(newCmd(e))
	}
	return root
}

// exitError carries an exit code out of a command; err, when set, is printed to stderr.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

func failf(format string, args ...any) error {
	return &exitError{code: ExitErrors, err: fmt.Errorf(format, args...)}
}

// errorsFound is the result of a command that has already reported the errors it found.
func errorsFound() error { return &exitError{code: ExitErrors} }

// checkFormat validates a --format value.
func checkFormat(format string) error {
	switch format {
	case "text", "json":
		return nil
	}
	return usageErrorf("unknown --format %q (want text or json)", format)
}
