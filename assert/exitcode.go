package assert

import (
	"fmt"
	"strconv"
)

// evalExitCode decides exit_code: equality.
func evalExitCode(a Assertion, obs Observation) Result {
	r := Result{
		Type:     a.Type,
		Passed:   obs.ExitCode == a.ExitCode,
		Expected: fmt.Sprintf("exit code %d", a.ExitCode),
		Actual:   strconv.Itoa(obs.ExitCode),
	}
	if r.Passed {
		r.Message = fmt.Sprintf("exit code is %d", obs.ExitCode)
		return r
	}
	r.Message = fmt.Sprintf("exit code is %d%s, expected %d", obs.ExitCode, signalHint(obs.ExitCode), a.ExitCode)
	return r
}

// signalHint explains a shell-style 128+n status; a script may also exit with it on purpose,
// hence "as when".
func signalHint(code int) string {
	n := code - 128
	name := signalName(n)
	if name == "" {
		return ""
	}
	return fmt.Sprintf(" (128+%d, as when killed by %s)", n, name)
}

// signalName names the Linux signals whose 128+n statuses test authors meet in practice.
func signalName(n int) string {
	switch n {
	case 1:
		return "SIGHUP"
	case 2:
		return "SIGINT"
	case 3:
		return "SIGQUIT"
	case 4:
		return "SIGILL"
	case 6:
		return "SIGABRT"
	case 8:
		return "SIGFPE"
	case 9:
		return "SIGKILL"
	case 11:
		return "SIGSEGV"
	case 13:
		return "SIGPIPE"
	case 14:
		return "SIGALRM"
	case 15:
		return "SIGTERM"
	}
	return ""
}
